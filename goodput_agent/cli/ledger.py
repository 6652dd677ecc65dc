"""`goodput ledger list` and `goodput ledger show`: the evidence ledger read back (never
created by reading it); what they print is cli/render_ledger.py."""

from __future__ import annotations

from pathlib import Path

import click

from goodput_agent.cli.main import _fail
from goodput_agent.cli.options import json_option, ledger_option
from goodput_agent.cli.term import emit, wants_document
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import json_dumps


@click.group()
def ledger() -> None:
    """Read the evidence ledger: investigations, claims, evidence, tool calls, actions."""


def _existing(ledger_path: Path | None) -> Path:
    """Reading a ledger never creates one."""
    from goodput_agent.ledger import default_ledger_path

    path = ledger_path or default_ledger_path()
    if not path.is_file():
        raise BadInput(f"{path}: no ledger here yet (run `goodput investigate` or `goodput demo`)")
    return path


@ledger.command("list")
@json_option
@ledger_option
def ledger_list(as_json: bool, ledger_path: Path | None) -> None:
    """The most recent investigations (an investigation killed before it concluded reads
    `interrupted`)."""
    from goodput_agent.ledger import open_ledger

    with open_ledger(_existing(ledger_path), read_only=True) as lg:
        rows = lg.investigations()
    if as_json:
        click.echo(json_dumps(rows))
        return
    from goodput_agent.cli.render import TerminalConsole
    from goodput_agent.cli.render_ledger import investigations_table

    console = TerminalConsole()
    console.print(investigations_table(rows, console.width))


@ledger.command("show")
@click.argument("investigation_id", required=False)
@json_option
@ledger_option
def ledger_show(investigation_id: str | None, as_json: bool, ledger_path: Path | None) -> None:
    """Claims, confidence, evidence and tool calls of one investigation (default: the latest)."""
    from goodput_agent.cli.render import TerminalConsole
    from goodput_agent.cli.render_ledger import render_record
    from goodput_agent.ledger import open_ledger
    from goodput_agent.planner.model_store import usage_totals

    with open_ledger(_existing(ledger_path), read_only=True, one_turn=True) as lg:
        inv_id = investigation_id or lg.latest_investigation_id()
        rec = lg.investigation(inv_id) if inv_id else None
        usage = usage_totals(lg, inv_id) if inv_id else None  # tokens and cost of the LLM
    if rec is None:
        _fail(f"{ledger_path or 'ledger'}: no investigation {investigation_id or '(empty ledger)'}")
        return
    if wants_document(as_json):
        from pydantic import TypeAdapter

        from goodput_agent.ledger.actions import record_document

        # times as ISO 8601, as every other --json; status: concluded or interrupted
        data = TypeAdapter(dict).dump_python(record_document(rec), mode="json")
        if usage:
            data["llm_usage"] = usage
        emit(data)
    else:
        render_record(rec, TerminalConsole(), usage)
