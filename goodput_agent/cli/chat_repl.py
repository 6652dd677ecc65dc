"""`goodput chat` in a terminal: answers stream, each tool call is shown as it happens, and
slash commands read the ledger without the model."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, TextIO

from rich.console import Console

from goodput_agent.approval.gate import action_status
from goodput_agent.chat import ChatSession
from goodput_agent.cli.render import TerminalConsole
from goodput_agent.core.untrusted import line, markup, visible
from goodput_agent.ledger.actions import actions_of
from goodput_agent.ledger.records import evidence_row
from goodput_agent.planner.claude_client import ModelCallFailed
from goodput_agent.planner.model_evidence import read_page

HELP = "/ledger  /evidence N  /actions  /quit"


def tool_line(name: str, args: Any, ms: float, error: bool) -> str:
    text = json.dumps(args, separators=(",", ":"), default=str)
    text = text if len(text) <= 80 else text[:77] + "..."
    return line(f"  -> {name} {text} {ms:.0f} ms{' (error)' if error else ''}")


def slash(command: str, session: ChatSession, console: Console) -> bool:
    """Run a slash command; False means quit."""
    from goodput_agent.cli.render_ledger import render_record

    name, _, arg = command.strip().partition(" ")
    ledger, inv_id = session.ledger, session.inv_id
    if name in ("/quit", "/exit", "/q"):
        return False
    if name == "/ledger":
        rec = ledger.investigation(inv_id)
        if rec is not None:
            render_record(rec, console)
    elif name == "/evidence":
        if not arg.strip().lstrip("E").isdigit():
            console.print("usage: /evidence N")
            return True
        eid = int(arg.strip().lstrip("E"))
        try:
            text, _ = read_page(ledger, inv_id, eid, 1, 40, 4000, record=False)
        except LookupError as exc:
            console.print(markup(str(exc)))
            return True
        row = evidence_row(ledger, eid, inv_id)
        console.print(f"[bold]E{eid}[/] {markup(row.locator if row else '')}")
        console.print(markup(text), highlight=False, soft_wrap=True)
    elif name == "/actions":
        rows = actions_of(ledger, inv_id)
        for a in rows:
            console.print(f"action {a.id} \\[{markup(action_status(ledger, a.id))}] "
                          f"{markup(a.tool)} {markup(json.dumps(a.args, sort_keys=True))}",
                          highlight=False, soft_wrap=True)
        if not rows:
            console.print("no actions proposed")
    else:
        console.print(f"commands: {HELP}")
    return True


def run_chat(session: ChatSession, stdin: TextIO | None = None,
             out: TextIO | None = None) -> None:
    # the streams of the moment of the call, not of the import (a runner may swap them)
    stdin, out = stdin or sys.stdin, out or sys.stdout
    console = TerminalConsole(file=out, highlight=False)
    console.print(f"[bold]goodput chat[/] {markup(session.inv_id)}"
                  f"{' (resumed)' if session.resumed else ''} · {HELP}")

    def on_text(piece: str) -> None:  # the model's words, which can quote the bundle
        out.write(visible(piece))
        out.flush()

    def on_tool(name: str, args: Any, ms: float, error: bool) -> None:
        out.write("\n" + tool_line(name, args, ms, error) + "\n")
        out.flush()

    while True:
        out.write("> ")
        out.flush()
        line = stdin.readline()
        if not line:
            break
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            if not slash(line, session, console):
                break
            continue
        try:
            _, spent = session.ask(line, on_text, on_tool)
        except ModelCallFailed as exc:  # the server's words are untrusted: one escaped line
            spent = f"the model server failed: {exc}"
        out.write(visible(f"\n(stopped: {spent})\n") if spent else "\n")


def _record_call(calls: list[dict[str, Any]], name: str, args: Any, ms: float,  # noqa: ANN401
                 error: bool) -> None:
    calls.append({"tool": name, "args": args, "ms": round(ms, 1), "error": error})


def run_chat_json(session: ChatSession, stdin: TextIO | None = None,
                  out: TextIO | None = None) -> None:
    """`goodput chat --json`: a question a line in, a JSON line out per answer (no slash
    commands; an empty line is skipped, end of input ends the chat)."""
    from goodput_agent.core.untrusted import json_text

    stdin, out = stdin or sys.stdin, out or sys.stdout
    for raw in stdin:
        question = raw.strip()
        if not question:
            continue
        calls: list[dict[str, Any]] = []
        on_tool = functools.partial(_record_call, calls)
        try:
            answer, spent = session.ask(question, lambda piece: None, on_tool)
        except ModelCallFailed as exc:
            answer, spent = "", f"the model server failed: {exc}"
        out.write(json_text(json.dumps({
            "investigation_id": session.inv_id, "question": question, "answer": answer,
            "tool_calls": calls, "stopped": spent}, default=str)) + "\n")
        out.flush()
