"""`goodput token create | list | revoke`: per-person tokens with which people approve on the
review pages and through the API. Whoever can write the ledger file administers them (on a
team's server: the admin); the ledger keeps only each token's hash."""

from __future__ import annotations

from pathlib import Path

import click

from goodput_agent.cli.options import json_option, ledger_option
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import json_dumps, line


@click.group("token")
def token_group() -> None:
    """Per-person tokens for the review pages and the API."""


@token_group.command("create")
@click.option("--person", required=True, help="Who the token authenticates (a name the "
              "policy's approvers or groups list).")
@click.option("--expires", "expires", default="90d", show_default=True, metavar="DURATION",
              help="How long it is valid (30m, 12h, 90d).")
@json_option
@ledger_option
def create_cmd(person: str, expires: str, as_json: bool, ledger_path: Path | None) -> None:
    """Create a token for PERSON; it is printed once, the ledger keeps its hash."""
    from goodput_agent.approval.identity import login_identity
    from goodput_agent.core.timespec import parse_duration
    from goodput_agent.ledger import open_ledger
    from goodput_agent.ledger.tokens import create_token

    person = person.strip()
    if not person or any(c.isspace() for c in person):
        raise BadInput(f"--person {person!r}: one name, no spaces")
    ttl = parse_duration(expires)
    with open_ledger(ledger_path) as lg:
        token_id, token = create_token(lg, person, ttl, login_identity().shown())
    if as_json:
        click.echo(json_dumps({"id": token_id, "person": person, "token": token}))
        return
    click.echo(line(f"token {token_id} for {person}, valid {expires}: give it to them once"))
    click.echo(token)


@token_group.command("list")
@json_option
@ledger_option
def list_cmd(as_json: bool, ledger_path: Path | None) -> None:
    """Every token: id, person, created, expires, revoked (never the secret)."""
    from datetime import UTC, datetime

    from goodput_agent.ledger import open_ledger
    from goodput_agent.ledger.tokens import tokens

    with open_ledger(ledger_path, read_only=True) as lg:
        rows = tokens(lg)
    now = datetime.now(UTC)
    if as_json:
        click.echo(json_dumps([{**r.model_dump(mode="json"), "state": r.state(now)}
                               for r in rows]))
        return
    for r in rows:
        click.echo(line(f"{r.id}  {r.person}  created {r.created_at:%Y-%m-%d} by "
                        f"{r.created_by}  {r.state(now)}"))


@token_group.command("revoke")
@click.argument("token_id")
@ledger_option
def revoke_cmd(token_id: str, ledger_path: Path | None) -> None:
    """Revoke a token at once: the next request with it is refused."""
    from goodput_agent.ledger import open_ledger
    from goodput_agent.ledger.tokens import revoke_token

    with open_ledger(ledger_path) as lg:
        if not revoke_token(lg, token_id.strip()):
            raise BadInput(f"{lg.path}: no valid token {token_id}")
    click.echo(line(f"token {token_id} revoked"))
