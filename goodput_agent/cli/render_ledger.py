"""The ledger for people: `goodput ledger list` (the investigations, ids whole at any width)
and `goodput ledger show` (one investigation: its verdict or how far an interrupted run got,
the claims, the evidence, the tool calls, and each action's chain from render_actions.py)."""

from __future__ import annotations

import json
from datetime import datetime

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from goodput_agent.cli.render_report import cut_excerpt, evidence_blocks
from goodput_agent.core.untrusted import markup, rich_text, visible
from goodput_agent.ledger import CHAT, INTERRUPTED, InvestigationRecord
from goodput_agent.report import EvidenceItem


def _verdict_line(rec: InvestigationRecord) -> str:
    """The conclusion; for a run killed before it concluded, what it had recorded by then."""
    c = rec.conclusion
    if c is not None:
        return (f"verdict {markup(c['category'])} · confidence {c['confidence']} · "
                f"exit {c['exit_code']}")
    done = (f"tool calls {len(rec.tool_calls)}, evidence {len(rec.evidence)}, claims "
            f"{len(rec.claims)}, actions {len(rec.actions)}")
    if rec.status == CHAT:
        return f"a conversation (goodput chat), no verdict: {done}"
    last = rec.tool_calls[-1] if rec.tool_calls else None
    if last is not None:
        done += f" (the last tool call: #{last['seq']} {markup(last['tool'])})"
    return (f"[bold yellow]verdict {INTERRUPTED}[/]: the run stopped before it concluded\n"
            f"recorded before it stopped: {done}")


def _left_cut(text: str, room: int) -> str:
    """The end of a path is what tells targets apart: cut from the left."""
    return text if len(text) <= room else "…" + text[-(room - 1):]


def investigations_table(rows: list[dict], width: int) -> Table:
    """`goodput ledger list`: ids whole at any width (the value a reader copies next); the
    target is cut from the left and the other columns wrap. The creation time is shown where
    there is room (the id carries the start, UTC: inv-YYYYMMDD-HHMMSS-…)."""
    shown = [{"id": visible(r["id"], newlines=False), "kind": visible(r["kind"]),
              "verdict": visible(r["category"] or r["status"]),
              "conf": "—" if r["confidence"] is None else f"{r['confidence']:.2f}",
              "created": str(r["created_at"])[:16], "target": visible(r["target"])}
             for r in rows]
    if width < 72:  # too narrow for one row each: a block each, label and value
        return _investigation_blocks(shown)
    cols = ["id", "kind", "verdict", "conf"] + (["created"] if width >= 110 else [])
    used = sum(max([len(c), *(len(r[c]) for r in shown)]) + 2 for c in cols)
    room = max(16, width - used)
    t = Table(title="Investigations", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
              collapse_padding=True)
    for c in cols:
        t.add_column(c, no_wrap=c in ("id", "conf"), overflow="fold",
                     min_width=max((len(r["id"]) for r in shown), default=2) if c == "id"
                     else 4)
    t.add_column("target", overflow="fold")
    for r in shown:
        t.add_row(*(Text(r[c]) for c in cols), Text(_left_cut(r["target"], room)))
    return t


def _investigation_blocks(shown: list[dict[str, str]]) -> Table:
    t = Table.grid(padding=(0, 1))
    t.add_column(style="dim", no_wrap=True)
    t.add_column(overflow="fold")
    for r in shown:
        t.add_row("id", Text(r["id"], style="bold", overflow="fold"))  # folded, never cut
        t.add_row("verdict", Text(f"{r['verdict']} {r['conf']} ({r['kind']})"))
        t.add_row("created", r["created"])
        t.add_row("target", Text(r["target"]))
        t.add_row("", "")
    return t


def render_record(rec: InvestigationRecord, console: Console,
                  usage: dict | None = None) -> None:
    inv = rec.investigation
    llm = ""
    if usage:  # the LLM planner's calls (planner/model_store.usage_totals)
        cost = usage.get("cost_usd")
        llm = (f"\nmodel {usage['model']} · {usage['calls']} calls · tokens in "
               f"{usage['input_tokens'] or 0} (cache write {usage['cache_write'] or 0}, read "
               f"{usage['cache_read'] or 0}) out {usage['output_tokens'] or 0} · cost "
               + ("unknown" if cost is None else f"${cost:.4f}"))
    console.print(Panel(
        f"[bold]{markup(inv['question'])}[/]\nkind {markup(inv['kind'])} · planner "
        f"{markup(inv['planner'])} · target {markup(inv['target'])}\n{_verdict_line(rec)}{llm}",
        title=markup(inv["id"])))
    console.print(_claim_blocks(rec.claims))
    console.print(evidence_blocks([EvidenceItem(
        id=ev["id"], source=str(ev.get("source") or ""), locator=str(ev["locator"]),
        excerpt=str(ev["excerpt"] or ""), time=_iso(ev.get("event_time")))
        for ev in rec.evidence]))
    console.print(_tool_call_table(rec.tool_calls))
    if rec.actions or rec.action_events:  # what happened to each; a verification of advice
        from goodput_agent.cli.render_actions import render_action_chain

        render_action_chain(rec, console)


def _iso(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else (str(value) if value else None)


def _claim_blocks(claims: list[dict]) -> RenderableType:
    """`#id status category confidence` and the evidence it cites, the statement below."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for cl in claims:
        head = Text.assemble((visible(cl["status"]), "bold"), " ", visible(cl["category"]),
                             (f"  confidence {cl['confidence']:.2f}", "dim"),
                             (f"  evidence +{_ids(cl['supporting'])} "
                              f"-{_ids(cl['contradicting'])}", "dim"))
        grid.add_row(f"#{cl['id']}", Group(head, rich_text(cl["statement"])))
    return Group(Text("Claims", style="bold"), grid)


def _ids(text: object) -> str:
    try:
        ids = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return visible(text)
    return ",".join(f"#{i}" for i in ids or []) or "none"


def _tool_call_table(calls: list[dict]) -> Table:
    t = Table(title="Tool calls", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
              expand=True, title_justify="left")
    for col, wrap in (("#", False), ("tool", False), ("ms", False), ("args and result", True)):
        t.add_column(col, no_wrap=not wrap, justify="right" if col in ("#", "ms") else "left",
                     ratio=1 if wrap else None, overflow="fold")
    for tc in calls:
        out = Text(visible(tc["args_json"]), style="cyan")
        if tc["error"]:
            out.append(f"\nerror: {visible(tc['error'])}", style="red")
        elif tc["output_summary"] not in (None, "null"):
            out.append("\n" + cut_excerpt(visible(str(tc["output_summary"]))))
        t.add_row(str(tc["seq"]), visible(tc["tool"], newlines=False),
                  f"{tc['duration_ms']:.1f}", out)
    return t
