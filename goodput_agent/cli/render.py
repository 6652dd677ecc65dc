"""Terminal rendering with rich: the report and the ledger, for people (--json is for scripts)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from goodput_agent.analysis.slowdown.model import PART_LABELS, PARTS, Breakdown
from goodput_agent.cli.render_parts import (
    alternatives_table,
    cut_excerpt,
    evidence_blocks,
    proposal_blocks,
    timeline_table,
)
from goodput_agent.cli.term import SETTINGS, WIDE_COLUMNS
from goodput_agent.core.untrusted import markup, rich_text, safe_segments, visible
from goodput_agent.ledger import CHAT, INTERRUPTED, InvestigationRecord
from goodput_agent.report import EvidenceItem, Report


class TerminalConsole(Console):
    """rich's Console, except that a reader who left (`goodput ... | head`) is not an error:
    the BrokenPipeError reaches the CLI, which exits 0 (rich's own handler exits 1); and that
    no control character or hyperlink in any text it renders reaches the terminal raw."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if SETTINGS.no_color:
            kwargs.setdefault("no_color", True)
        super().__init__(*args, **kwargs)
        if SETTINGS.wide and "width" not in kwargs:
            self.width = max(self.width, WIDE_COLUMNS)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError

    def render(self, renderable: RenderableType,
               options: ConsoleOptions | None = None) -> Iterable[Segment]:
        return safe_segments(super().render(renderable, options))


def _clock(iso: str | None) -> str:
    if not iso:
        return "—"
    try:
        return datetime.fromisoformat(iso).astimezone(UTC).strftime("%m-%d %H:%M:%S.%f")[:-3]
    except ValueError:
        return iso[:23]


def _conf_style(c: float) -> str:
    return "green" if c >= 0.75 else "yellow" if c >= 0.45 else "red"


def render_report(report: Report, console: Console) -> None:
    rc = report.root_cause
    where = ", ".join(visible(x, newlines=False) for x in (
        f"node {rc.node}" if rc.node else "", f"rank {rc.rank}" if rc.rank is not None else "",
        f"GPU {rc.gpu}" if rc.gpu else "") if x) or "not located"
    head = Text.assemble((visible(rc.category), "bold"), "  ",
                         (f"confidence {rc.confidence:.2f}", _conf_style(rc.confidence)),
                         "  ", (where, "cyan"))
    question = visible(report.question or report.kind, newlines=False)
    fits = len(question) <= console.width - 8
    body: list = ([] if fits else [Text(question, style="bold")]) + [head, rich_text(rc.summary)]
    if report.retry:
        verdict = {True: "yes", False: "no", None: "unknown"}[report.retry.useful]
        body.append(Text.assemble(("Retry useful: ", "bold"), verdict,
                                  f" — {visible(report.retry.why)}"))
    console.print(Panel(Group(*body), title=f"[bold]{escape(question)}[/]" if fits else None,
                        subtitle=markup(report.investigation_id or ""), expand=True))
    if rc.evidence:
        console.print(evidence_blocks(rc.evidence))
    if report.breakdown:
        render_breakdown(report.breakdown, console)
    if report.latency:
        render_latency(report.latency, console)
    if report.timeline:
        console.print(timeline_table(report.timeline, console.width, report.timeline_left_out))
    if report.alternatives:
        console.print(alternatives_table(report.alternatives))
    if report.actions:
        console.print(proposal_blocks(report.actions))
    if report.advice:
        from goodput_agent.cli.action_views import render_advice

        render_advice(report.advice, console)
    notes = [*(f"unknown: {u}" for u in report.unknowns),
             *unread_notes(report.unread_reasons)]
    if report.clock:
        notes += [f"clock: {a}" for a in report.clock.assumptions]
    if report.pictures:
        notes += [f"picture: {p}" for p in report.pictures]
    if notes:
        console.print(Panel("\n".join(markup(n, newlines=False) for n in notes), title="Notes",
                            style="dim"))


UNREAD_SHOWN = 20  # unread files listed by name; the rest are counted by reason


def unread_notes(unread: dict[str, str]) -> list[str]:
    """The first unread files by name, then every reason with its count when there are more
    (a bundle of 100,000 unread files is a dozen lines, not 100,000)."""
    items = list(unread.items())
    notes = [f"unread: {p} ({r})" for p, r in items[:UNREAD_SHOWN]]
    if len(items) > UNREAD_SHOWN:
        rest = Counter(r for _, r in items[UNREAD_SHOWN:])
        notes.append(f"unread: {len(items) - UNREAD_SHOWN:,} more files not listed (--json lists "
                     "every one), by reason:")
        notes += [f"  {n:,} × {r}" for r, n in rest.most_common(10)]
        if len(rest) > 10:
            notes.append(f"  {sum(n for _, n in rest.most_common()[10:]):,} × "
                         f"{len(rest) - 10} other reasons")
    return notes


def render_breakdown(b: Breakdown, console: Console) -> None:
    """Per run and rank: the median step and its split (ms); the parts sum to the step. Narrow
    terminals get a table per run and two-line part headers."""
    narrow = console.width < 120
    title = "Step time on the GPU timeline (median step, ms; parts sum to the step)"
    runs = [r for r in (b.baseline, b.incident) if r is not None]
    for group in ([[r] for r in runs] if narrow else [runs]):
        t = Table(title=f"{visible(group[0].label)} run: median step, ms (the parts sum to it)"
                  if narrow else title,
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True,
                  expand=not narrow, title_justify="left")
        labels = [PART_LABELS[p].replace(" ", "\n") if narrow else PART_LABELS[p]
                  for p in PARTS]
        for col in ([] if narrow else ["run"]) + ["rank", "host", "step", *labels]:
            t.add_column(col, justify="left" if col in ("run", "host") else "right",
                         no_wrap=True)
        for run in group:
            for rk in sorted(run.ranks, key=lambda r: (r.rank is None, r.rank or 0, r.path)):
                m = rk.median_step
                parts = [f"{getattr(m, p) / 1000:.1f}" if m else "—" for p in PARTS]
                t.add_row(*([] if narrow else [markup(run.label)]),
                          "—" if rk.rank is None else str(rk.rank), markup(rk.host or "—"),
                          f"{rk.median_step_us / 1000:.1f}", *parts)
        console.print(t)


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


_LATENCY_ROWS = (("e2e", "s"), ("queue", "s"), ("prefill", "s"), ("decode", "s"), ("ttft", "s"),
                 ("itl", "s"), ("prompt_tokens", "tok"), ("output_tokens", "tok"))
_LATENCY_SCALARS = (("request_rate", "req/s"), ("running_mean", "running"),
                    ("waiting_mean", "waiting"), ("kv_usage_mean", "KV cache used"),
                    ("kv_usage_max", "KV cache peak"), ("preemption_rate", "preemptions/s"),
                    ("gpu_util_mean", "GPU util (context only)"))


def _num(v: object, unit: str = "") -> str:
    if not isinstance(v, int | float):
        return "—"
    if unit == "s":
        return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"
    return f"{v:.0f}" if unit == "tok" else f"{v:.3g}"


def render_latency(lat: dict, console: Console) -> None:
    """The two windows compared, each number on its own (percentiles of phases don't add)."""
    w = lat.get("windows") or {}
    b, i = lat.get("baseline") or {}, lat.get("incident") or {}
    if not (b or i):
        return  # nothing was measured: the notes say why
    if w:
        console.print(Text.assemble(("Windows", "bold"), f" ({visible(w.get('how'))}, UTC): "
                                    f"baseline {_clock(w['baseline']['start'])}–"
                                    f"{_clock(w['baseline']['end'])}, incident "
                                    f"{_clock(w['incident']['start'])}–"
                                    f"{_clock(w['incident']['end'])}"))
    t = Table(title="Baseline vs incident", box=box.SIMPLE_HEAD, show_edge=False,
              pad_edge=False, title_justify="left")
    for col in ("metric", "baseline", "incident", "x"):
        t.add_column(col, justify="left" if col == "metric" else "right")
    for key, unit in _LATENCY_ROWS:
        for q in ("p50", "p90", "p99"):
            vb, vi = (b.get(key) or {}).get(q), (i.get(key) or {}).get(q)
            if vb is None and vi is None:
                continue
            ratio = f"{vi / vb:.2f}" if isinstance(vb, float) and vb and vi is not None else "—"
            t.add_row(f"{key} {q}", _num(vb, unit), _num(vi, unit), ratio)
    for key, label in _LATENCY_SCALARS:
        vb, vi = b.get(key), i.get(key)
        if vb is None and vi is None:
            continue
        ratio = f"{vi / vb:.2f}" if isinstance(vb, float) and vb and vi is not None else "—"
        t.add_row(label, _num(vb), _num(vi), ratio)
    console.print(t)
    for c in lat.get("config_diff") or []:
        console.print(f"config {markup(c['key'])}: {markup(str(c['baseline']))} -> "
                      f"{markup(str(c['incident']))} ({markup(c['source'])})")
