"""Who may use the review server, and which form posts are genuine.

- Access token: required on every request when one is configured, and always when the server
  listens beyond loopback (the server refuses to start without one). Given once as
  `?token=...` (then kept in an HttpOnly cookie) or as `Authorization: Bearer ...`.
- CSRF: every page gets a session cookie (random, HttpOnly, SameSite=Strict); forms carry
  HMAC(secret, "csrf" | session). A POST without the cookie, or with another session's token,
  is refused before anything is read from the form.
- What was shown: an approval form also carries a signed binding of the action, its argument
  hash and evidence digest and when the preview was shown; a stale or changed preview cannot be
  approved (the person approves what they saw, within the policy's approval lifetime).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from goodput_agent.core.errors import BadInput

SESSION_COOKIE = "goodput_session"
TOKEN_COOKIE = "goodput_token"
TOKEN_ENV = "GOODPUT_SERVE_TOKEN"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def configured_token(token_file: Path | None) -> str | None:
    """The access token: `--token-file` (first line) or $GOODPUT_SERVE_TOKEN; None if neither."""
    if token_file is not None:
        try:
            text = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise BadInput(f"{token_file}: cannot read the token file: {exc.strerror}") from None
        if len(text) < 16:
            raise BadInput(f"{token_file}: the token must be at least 16 characters")
        return text.splitlines()[0].strip()
    env = os.environ.get(TOKEN_ENV, "").strip()
    if env and len(env) < 16:
        raise BadInput(f"${TOKEN_ENV}: the token must be at least 16 characters")
    return env or None


def require_token_for(host: str, token: str | None) -> None:
    if not is_loopback(host) and token is None:
        raise BadInput(f"--host {host} is not loopback: set ${TOKEN_ENV} or --token-file so "
                       "that every request needs the token (or bind 127.0.0.1)")


@dataclass(frozen=True, slots=True)
class Signer:
    secret: bytes

    @classmethod
    def random(cls) -> Signer:
        return cls(secrets.token_bytes(32))

    def _mac(self, purpose: str, payload: str) -> str:
        return hmac.new(self.secret, f"{purpose}|{payload}".encode(), hashlib.sha256).hexdigest()

    def csrf(self, session: str) -> str:
        return self._mac("csrf", session)

    def csrf_ok(self, session: str | None, token: str | None) -> bool:
        return bool(session and token) and hmac.compare_digest(self.csrf(session or ""),
                                                               token or "")

    def shown(self, action_id: int, args_hash: str, evidence_digest: str,
              at: float | None = None) -> str:
        """A signed record of the preview a person is looking at."""
        body = json.dumps([action_id, args_hash, evidence_digest, at or time.time()])
        raw = base64.urlsafe_b64encode(body.encode()).decode()
        return f"{raw}.{self._mac('shown', raw)}"

    def person(self, token_id: str) -> str:
        """A cookie naming the personal token a browser signed in with (not the token)."""
        return f"{token_id}.{self._mac('person', token_id)}"

    def read_person(self, cookie: str) -> str | None:
        token_id, _, mac = cookie.partition(".")
        return token_id if mac and hmac.compare_digest(self._mac("person", token_id), mac) \
            else None

    def read_shown(self, token: str | None) -> tuple[int, str, str, float] | None:
        if not token or "." not in token:
            return None
        raw, mac = token.rsplit(".", 1)
        if not hmac.compare_digest(self._mac("shown", raw), mac):
            return None
        try:
            a, h, d, at = json.loads(base64.urlsafe_b64decode(raw.encode()))
            return int(a), str(h), str(d), float(at)
        except (ValueError, TypeError):
            return None


def new_session() -> str:
    return secrets.token_urlsafe(24)


def token_ok(expected: str | None, given: str | None) -> bool:
    if expected is None:
        return True
    return bool(given) and hmac.compare_digest(expected.encode(), (given or "").encode())
