"""Per-person tokens for the review pages and the API: `goodput token create --person alice`
prints `gpt_<id>_<secret>` once; the ledger keeps the id, the person, the secret's SHA-256,
an expiry, who created it and when it was revoked. A token names its person; it never names
anyone else."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel

from goodput_agent.ledger.core import Ledger

_FORM = re.compile(r"^gpt_([0-9a-f]{12})_([A-Za-z0-9_-]{32,})$")


class TokenRow(BaseModel):
    id: str
    person: str
    created_at: datetime
    expires_at: datetime
    created_by: str | None
    revoked_at: datetime | None = None

    def state(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return f"revoked at {self.revoked_at:%Y-%m-%d %H:%M %Z}"
        if now >= self.expires_at:
            return f"expired at {self.expires_at:%Y-%m-%d %H:%M %Z}"
        return "valid"


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(ledger: Ledger, person: str, ttl: timedelta, created_by: str) -> tuple[str, str]:
    """(token id, the token to hand to the person: shown once, stored hashed)."""
    token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    with ledger.writing() as con:
        con.execute("INSERT INTO approver_tokens VALUES (?, ?, ?, ?, ?, ?, NULL)",
                    [token_id, person, _hash(secret), now, now + ttl, created_by])
    return token_id, f"gpt_{token_id}_{secret}"


def looks_like_token(text: str) -> bool:
    return bool(_FORM.match(text.strip()))


def verify_token(ledger: Ledger, token: str, now: datetime | None = None
                 ) -> tuple[TokenRow | None, str | None]:
    """The token's row when it is valid; else None and why (one line, never the secret)."""
    m = _FORM.match(token.strip())
    if not m:
        return None, "not a personal token (gpt_<id>_<secret>)"
    token_id, secret = m.groups()
    rows = ledger.rows("SELECT * FROM approver_tokens WHERE id = ?", [token_id])
    if not rows or not hmac.compare_digest(rows[0]["token_hash"], _hash(secret)):
        return None, f"token {token_id} is not one this ledger issued"
    row = TokenRow(**{k: v for k, v in rows[0].items() if k != "token_hash"})
    state = row.state(now or datetime.now(UTC))
    return (row, None) if state == "valid" else (None, f"token {token_id} of {row.person} is "
                                                       f"{state}")


def token_row(ledger: Ledger, token_id: str) -> TokenRow | None:
    rows = ledger.rows("SELECT * FROM approver_tokens WHERE id = ?", [token_id])
    return TokenRow(**{k: v for k, v in rows[0].items() if k != "token_hash"}) if rows else None


def revoke_token(ledger: Ledger, token_id: str) -> bool:
    with ledger.writing() as con:
        row = con.execute("UPDATE approver_tokens SET revoked_at = ? WHERE id = ? AND "
                          "revoked_at IS NULL RETURNING id", [datetime.now(UTC), token_id]
                          ).fetchone()
    return row is not None


def tokens(ledger: Ledger) -> list[TokenRow]:
    return [TokenRow(**{k: v for k, v in r.items() if k != "token_hash"})
            for r in ledger.rows("SELECT * FROM approver_tokens ORDER BY created_at")]
