"""Who approves: an authenticated person, never a typed name. Each client says how it knew:

- `login`: the CLI on the ledger's machine, the operating system's login user (`sudo`: the
  user who ran sudo, from SUDO_USER when the process runs as root);
- `delegated`: a login user the policy lets approve on another person's behalf;
- `token`: a per-person token (`goodput token create`), on the pages or the API;
- `proxy`: the user an authenticating proxy in front of the pages vouched for (oauth2-proxy,
  an ingress' external auth), trusted only when the request proves it came from that proxy.
The gate records the person and how they were authenticated with every approval.
"""

from __future__ import annotations

import os
import pwd
from typing import Literal

from pydantic import BaseModel, Field

from goodput_agent.core.errors import BadInput

Via = Literal["login", "sudo", "delegated", "token", "proxy"]


class Identity(BaseModel):
    person: str = Field(min_length=1)
    via: Via
    groups: list[str] = Field(default_factory=list)  # what a proxy asserted
    detail: str | None = None  # the token's id, the proxy's address, who delegated

    def shown(self) -> str:
        return f"{self.person} ({self.via}{': ' + self.detail if self.detail else ''})"


class NotAuthenticated(BadInput):
    """An approval without a person the client could vouch for; says what would do."""


def login_identity() -> Identity:
    """The operating system's user of this process; under sudo, the user who ran it."""
    uid = os.getuid()
    sudo_user = os.environ.get("SUDO_USER")
    if uid == 0 and sudo_user and sudo_user != "root":
        return Identity(person=sudo_user, via="sudo",
                        detail=f"uid {os.environ.get('SUDO_UID', '?')} via sudo")
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:  # a uid without a passwd entry (a container's arbitrary uid)
        raise NotAuthenticated(f"uid {uid} has no user name: approve from an account that "
                               "has one, or with a personal token on the review pages"
                               ) from None
    return Identity(person=name, via="login", detail=f"uid {uid}")


def cli_identity(as_name: str | None, delegates: dict[str, list[str]]) -> Identity:
    """The login user, or the person named with --as when the policy lets the login user
    approve on their behalf (`approval.delegates: {login: [names]}`)."""
    login = login_identity()
    wanted = (as_name or "").strip()
    if not wanted or wanted == login.person:
        return login
    allowed = delegates.get(login.person, [])
    if wanted in allowed or "*" in allowed:
        return Identity(person=wanted, via="delegated", detail=f"by {login.shown()}")
    raise NotAuthenticated(
        f"you are logged in as {login.person}, not {wanted}: approve as yourself (without "
        f"--as), have {wanted} approve, or let {login.person} act for {wanted} in the policy "
        f"(approval.delegates: {{{login.person}: [{wanted}]}})")
