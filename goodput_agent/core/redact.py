"""One redaction step for every excerpt that reaches the ledger, a report or a page.

Three families: credentials by the name they are assigned to (KEY=value, "key": "value",
Kubernetes env entries), by their own shape (provider token formats, private key blocks,
URLs with credentials), and, for values assigned to an environment variable, by looking
random (a value of 20+ characters mixing letters and digits with no spaces or slashes is a
credential whatever its variable is called). Excerpts are often single lines: a line that is
only base64 (a PEM body, a key file) is masked on its own.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

MASK = "[REDACTED]"

# names whose value is a secret (the secret word ends the name; PWD alone is the shell's cwd;
# PASS only as its own word: DB_PASS, not BYPASS)
_SECRET_NAME = (r"(?:PASSWORD|PASSWD|_PWD|(?<![A-Z])PASS|SECRET|TOKEN|API[_-]?KEY|ACCESS[_-]?KEY|"
                r"PRIVATE[_-]?KEY|CREDENTIALS?|_KEY|WEBHOOK(?:_URL)?|DSN)")

_TOKEN_SHAPES = (
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
    r"(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*\d)"
    r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",  # AWS secret access key (40, mixed case, digit)
    r"\bsk-ant-[A-Za-z0-9_-]{10,}",  # Anthropic
    r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}",  # OpenAI project and service keys
    r"\bsk-[A-Za-z0-9]{20,}\b",  # OpenAI-style
    r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
    r"\bgh[pousr]_[A-Za-z0-9]{20,}\b",  # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",  # GitHub fine-grained
    r"\bglpat-[A-Za-z0-9_-]{20,}",  # GitLab
    r"\bnpm_[A-Za-z0-9]{36}\b",  # npm
    r"\bhf_[A-Za-z0-9]{20,}\b",  # Hugging Face
    r"\bAIza[0-9A-Za-z_-]{35}",  # Google API key
    r"\bya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth access token
    r"\bxox[baprs]-[A-Za-z0-9-]{10,}",  # Slack token
    r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",  # Slack hook
    r"https://discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]+",  # Discord hook
    r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}",  # JWT
    r"\bwandb_v1_[A-Za-z0-9_]{20,}",  # Weights & Biases (new form)
)

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Authorization headers and bearer tokens
    (re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer|basic|token)\s+[^\s'\"]+"), rf"\1\2 {MASK}"),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), f"Bearer {MASK}"),
    # PEM private keys, whole blocks (a block cut by the end of the text too)
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
                re.S), MASK),
    # provider token shapes, whatever they are assigned to
    *((re.compile(shape), MASK) for shape in _TOKEN_SHAPES),
    # KEY=value / key: value for secret-looking names (env dumps, command lines, configs)
    # (the secret word ends the name: max_num_batched_tokens=8192 is not a secret)
    (re.compile(rf"(?i)\b([A-Z0-9_.-]*{_SECRET_NAME})(\s*[=:]\s*)(['\"]?)[^\s'\",;]+\3"),
     rf"\1\2\3{MASK}\3"),
    # the same names as quoted JSON/YAML keys, and Kubernetes env entries {"name": .., "value": ..}
    (re.compile(rf"(?i)(\"[A-Z0-9_.-]*{_SECRET_NAME}\"\s*:\s*\")[^\"]*\""), rf'\1{MASK}"'),
    (re.compile(rf"(?i)(\"name\"\s*:\s*\"[A-Z0-9_.-]*{_SECRET_NAME}\"\s*,\s*\"value\"\s*:\s*\")"
                r"[^\"]*\""), rf'\1{MASK}"'),
    # --password=x / --token x style flags
    (re.compile(r"(?i)((?<![\w-])--?(?:password|passwd|token|api-key|secret)[=\s]+)[^\s'\"]+"),
     rf"\1{MASK}"),
    # user:password@ in URLs
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), rf"\1{MASK}@"),
    # a line that is only base64 (a private key's body, excerpted without its BEGIN line)
    (re.compile(r"(?m)^[ \t]*[A-Za-z0-9+/]{40,}={0,2}[ \t]*$"), MASK),
)

# an environment variable assigned in an env dump or a pod spec: NAME=value, "name": "NAME",
# "value": "value", or name: NAME / value: value in YAML
_ENV_ASSIGN = re.compile(r"(?m)^(\s*(?:export\s+)?[A-Z][A-Z0-9_]{2,}=)(\S+)\s*$")
_ENV_ENTRY = re.compile(r"(\"name\"\s*:\s*\"[A-Za-z0-9_.-]+\"\s*,\s*\"value\"\s*:\s*\")([^\"]*)\"")
_YAML_ENTRY = re.compile(r"(?m)(-\s*name:\s*[A-Za-z0-9_.-]+\s*\n\s*value:\s*)(['\"]?)(\S+?)\2\s*$")


def looks_random(value: str) -> bool:
    """A credential by shape: long, no spaces or path separators, letters and digits mixed,
    and close to random (Shannon entropy over 3.5 bits a character)."""
    if len(value) < 20 or any(c in value for c in " /\\:") or value.startswith(MASK):
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy > 3.5


def _mask_random(m: re.Match[str], value_group: int, closing: str = "") -> str:
    value = m.group(value_group)
    if not looks_random(value):
        return m.group(0)
    return m.group(0)[: m.start(value_group) - m.start(0)] + MASK + closing


def redact(text: str) -> str:
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    text = _ENV_ASSIGN.sub(lambda m: _mask_random(m, 2), text)
    text = _ENV_ENTRY.sub(lambda m: _mask_random(m, 2, '"'), text)
    return _YAML_ENTRY.sub(lambda m: _mask_random(m, 3, m.group(2)), text)


def redact_data(value: Any) -> Any:
    """Every string inside a JSON-like structure, redacted; a {"name", "value"} pair (an
    environment entry) by its value's shape as well."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_data(v) for v in value]
    if isinstance(value, dict):
        out = {k: redact_data(v) for k, v in value.items()}
        if isinstance(out.get("name"), str) and isinstance(out.get("value"), str) and \
                (looks_random(out["value"]) or re.search(_SECRET_NAME, out["name"], re.I)):
            out["value"] = MASK
        return out
    return value
