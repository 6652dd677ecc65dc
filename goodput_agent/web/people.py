"""Who is asking, on the review pages and the API. The shared access token only lets a client
read; an approval or a rejection needs a person:

- a personal token (`goodput token create`): `Authorization: Bearer gpt_...` (the API), or
  given once on /login (the browser then carries a signed cookie naming the token, checked
  against the ledger on every request, so a revoked token stops working at once);
- the person an authenticating proxy vouched for (oauth2-proxy's X-Forwarded-User and
  X-Forwarded-Groups, or an ingress' external auth), believed only when the request proves it
  passed through that proxy: it carries the proxy's shared secret
  (`--proxy-secret-file`, header X-Goodput-Proxy-Secret) or comes from a `--trusted-proxy`
  address. A proxy header without that proof is a forgery, refused and recorded.
"""

from __future__ import annotations

import hmac
import ipaddress

from pydantic import BaseModel
from starlette.requests import Request

from goodput_agent.approval.identity import Identity
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.tokens import looks_like_token, token_row, verify_token
from goodput_agent.web.config import ServeConfig

PERSON_COOKIE = "goodput_person"
SECRET_HEADER = "x-goodput-proxy-secret"


class Asker(BaseModel):
    """The person a request is from, or why it is from nobody the server can name."""

    who: Identity | None = None
    why_not: str | None = None


def asker(request: Request, config: ServeConfig, ledger: Ledger, cookies: bool = True) -> Asker:
    """`cookies`: False for the API, which a browser's cookies must never drive. The guard's
    answer for this request (web/app.py, cookies included) is not asked again."""
    found = getattr(request.state, "asker", None)
    if cookies and isinstance(found, Asker):
        return found
    bearer = request.headers.get("authorization", "")
    given = bearer[7:].strip() if bearer.lower().startswith("bearer ") else ""
    if given and looks_like_token(given):
        return _from_token(ledger, given)
    cookie = request.cookies.get(PERSON_COOKIE) if cookies else None
    if cookie:
        found = config.signer.read_person(cookie)
        if found is not None:
            return _from_token_id(ledger, found)
    user = request.headers.get(config.proxy_user_header.lower())
    if user is not None:
        return _from_proxy(request, config, user)
    return Asker(why_not="not signed in: sign in on /login with your personal token "
                         "(goodput token create), or come through the team's sign-on proxy")


def _from_token(ledger: Ledger, token: str) -> Asker:
    row, why = verify_token(ledger, token)
    if row is None:
        return Asker(why_not=why)
    return Asker(who=Identity(person=row.person, via="token", detail=f"token {row.id}"))


def _from_token_id(ledger: Ledger, token_id: str) -> Asker:
    from datetime import UTC, datetime

    row = token_row(ledger, token_id)
    if row is None:
        return Asker(why_not=f"token {token_id} is not one this ledger issued")
    state = row.state(datetime.now(UTC))
    if state != "valid":
        return Asker(why_not=f"token {token_id} of {row.person} is {state}: sign in again")
    return Asker(who=Identity(person=row.person, via="token", detail=f"token {row.id}"))


def _from_proxy(request: Request, config: ServeConfig, user: str) -> Asker:
    client = request.client.host if request.client else "?"
    secret = request.headers.get(SECRET_HEADER, "")
    by_secret = bool(config.proxy_secret) and hmac.compare_digest(
        secret.encode(), (config.proxy_secret or "").encode())
    if not (by_secret or _trusted_address(client, config.trusted_proxies)):
        return Asker(why_not=f"a {config.proxy_user_header} header from {client}, which is "
                             "not a trusted proxy (no --proxy-secret-file secret, not a "
                             "--trusted-proxy address): ignored")
    person = user.strip()
    if not person or any(c.isspace() or not c.isprintable() for c in person):
        return Asker(why_not=f"the proxy's {config.proxy_user_header} is not a user name")
    raw = request.headers.get(config.proxy_groups_header.lower(), "")
    groups = [g.strip() for g in raw.split(",") if g.strip()]
    return Asker(who=Identity(person=person, via="proxy", groups=groups,
                              detail=f"{'secret' if by_secret else 'address'} {client}"))


def _trusted_address(host: str, networks: list[str]) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(n, strict=False) for n in networks)
