"""One redaction step for every excerpt that reaches the ledger or a report."""

from __future__ import annotations

import re
from typing import Any

MASK = "[REDACTED]"

# names whose value is a secret (the secret word ends the name; PWD alone is the shell's cwd)
_SECRET_NAME = (r"(?:PASSWORD|PASSWD|_PWD|SECRET|TOKEN|API[_-]?KEY|ACCESS[_-]?KEY|PRIVATE[_-]?KEY|"
                r"CREDENTIALS?)")

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Authorization headers and bearer tokens
    (re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer|basic|token)\s+[^\s'\"]+"), rf"\1\2 {MASK}"),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), f"Bearer {MASK}"),
    # KEY=value / key: value for secret-looking names (env dumps, command lines, configs)
    # (the secret word ends the name: max_num_batched_tokens=8192 is not a secret)
    (re.compile(rf"(?i)\b([A-Z0-9_.-]*{_SECRET_NAME})(\s*[=:]\s*)(['\"]?)[^\s'\",;]+\3"),
     rf"\1\2\3{MASK}\3"),
    # the same names as quoted JSON/YAML keys, and Kubernetes env entries {"name": .., "value": ..}
    (re.compile(rf"(?i)(\"[A-Z0-9_.-]*{_SECRET_NAME}\"\s*:\s*\")[^\"]*\""), rf'\1{MASK}"'),
    (re.compile(rf"(?i)(\"name\"\s*:\s*\"[A-Z0-9_.-]*{_SECRET_NAME}\"\s*,\s*\"value\"\s*:\s*\")"
                r"[^\"]*\""), rf'\1{MASK}"'),
    # PEM private keys
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
                re.S), MASK),
    # --password=x / --token x style flags
    (re.compile(r"(?i)(--?(?:password|passwd|token|api-key|secret)[=\s]+)[^\s'\"]+"), rf"\1{MASK}"),
    # Well-known token shapes
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), MASK),  # AWS access key id
    (re.compile(r"\bsk-ant-[A-Za-z0-9_-]{10,}"), MASK),  # Anthropic
    (re.compile(r"\bsk-[A-Za-z0-9]{20,}\b"), MASK),  # OpenAI-style
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"), MASK),  # GitHub
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"), MASK),  # Hugging Face
    (re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}"), MASK),  # Slack
    (re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}"), MASK),  # JWT
    # user:password@ in URLs
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), rf"\1{MASK}@"),
)


def redact(text: str) -> str:
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact_data(value: Any) -> Any:
    """Every string inside a JSON-like structure, redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_data(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    return value
