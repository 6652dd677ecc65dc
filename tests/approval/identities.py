"""People as the gate sees them: authenticated, and saying how (tests name the way)."""

from __future__ import annotations

import getpass

from goodput_agent.approval.identity import Identity


def person(name: str, via: str = "login", groups: list[str] | None = None) -> Identity:
    return Identity(person=name, via=via, groups=groups or [])  # type: ignore[arg-type]


def me() -> str:
    """The login user the tests run as (the CLI approves as them)."""
    return getpass.getuser()
