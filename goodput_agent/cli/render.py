"""Terminal rendering with rich: the report and the ledger, for people (--json is for scripts)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.panel import Panel
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from goodput_agent.analysis.slowdown_model import PART_LABELS, PARTS, Breakdown
from goodput_agent.ledger import INTERRUPTED, InvestigationRecord
from goodput_agent.report import Report
from goodput_agent.untrusted import markup, rich_text, safe_segments, visible


class TerminalConsole(Console):
    """rich's Console, except that a reader who left (`goodput ... | head`) is not an error:
    the BrokenPipeError reaches the CLI, which exits 0 (rich's own handler exits 1); and that
    no control character or hyperlink in any text it renders reaches the terminal raw."""

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
    body: list = [head, rich_text(rc.summary)]
    if report.retry:
        verdict = {True: "yes", False: "no", None: "unknown"}[report.retry.useful]
        body.append(Text.assemble(("Retry useful: ", "bold"), verdict,
                                  f" — {visible(report.retry.why)}"))
    console.print(Panel(Group(*body), title=f"[bold]{markup(report.question or report.kind)}[/]",
                        subtitle=markup(report.investigation_id or ""), expand=True))
    if rc.evidence:
        t = Table(title="Evidence", show_lines=False, expand=True)
        t.add_column("id", justify="right", style="dim")
        t.add_column("where", style="cyan", no_wrap=True)
        t.add_column("excerpt")
        for ev in rc.evidence:
            t.add_row(str(ev.id or ""), markup(ev.locator), markup(ev.excerpt[:240]))
        console.print(t)
    if report.breakdown:
        render_breakdown(report.breakdown, console)
    if report.latency:
        render_latency(report.latency, console)
    if report.timeline:
        t = Table(title="Timeline (first event per node and rank, UTC)", expand=True)
        for col in ("time", "node", "rank", "role", "what"):
            t.add_column(col, no_wrap=col != "what")
        for e in report.timeline[:20]:
            style = "bold red" if e.role == "primary" else "dim" if e.role == "context" else ""
            t.add_row(_clock(e.time), markup(e.node or "—"),
                      "—" if e.rank is None else str(e.rank), markup(e.role),
                      markup(e.summary[:120]), style=style)
        console.print(t)
    if report.alternatives:
        t = Table(title="Alternatives considered", expand=True)
        t.add_column("category", no_wrap=True)
        t.add_column("conf", justify="right")
        t.add_column("why not")
        for a in report.alternatives:
            t.add_row(markup(a.category), f"{a.confidence:.2f}", markup(a.why_not))
        console.print(t)
    if report.actions:
        t = Table(title="Proposed actions (nothing has been executed)", expand=True)
        for col in ("id", "tool", "args", "mutating", "why"):
            t.add_column(col)
        for a in report.actions:
            t.add_row(str(a.id), markup(a.tool), markup(json.dumps(a.args)),
                      "yes" if a.mutating else "no", markup(a.rationale))
        console.print(t)
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
    """Per run and rank: the median step and its split (ms); the parts sum to the step."""
    t = Table(title="Step time on the GPU timeline (median step, ms; parts sum to the step)",
              expand=True)
    for col in ("run", "rank", "host", "step", *PART_LABELS.values()):
        t.add_column(col, justify="right" if col not in ("run", "host") else "left",
                     no_wrap=True)
    runs = [r for r in (b.baseline, b.incident) if r is not None]
    for run in runs:
        for rk in sorted(run.ranks, key=lambda r: (r.rank is None, r.rank or 0, r.path)):
            m = rk.median_step
            parts = [f"{getattr(m, p) / 1000:.1f}" if m else "—" for p in PARTS]
            t.add_row(markup(run.label), "—" if rk.rank is None else str(rk.rank),
                      markup(rk.host or "—"), f"{rk.median_step_us / 1000:.1f}", *parts)
    console.print(t)


def _verdict_line(rec: InvestigationRecord) -> str:
    """The conclusion; for a run killed before it concluded, what it had recorded by then."""
    c = rec.conclusion
    if c is not None:
        return (f"verdict {markup(c['category'])} · confidence {c['confidence']} · "
                f"exit {c['exit_code']}")
    done = (f"tool calls {len(rec.tool_calls)}, evidence {len(rec.evidence)}, claims "
            f"{len(rec.claims)}, actions {len(rec.actions)}")
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
    if usage:  # the LLM planner's calls (planner/claude_store.usage_totals)
        cost = usage.get("cost_usd")
        llm = (f"\nmodel {usage['model']} · {usage['calls']} calls · tokens in "
               f"{usage['input_tokens'] or 0} (cache write {usage['cache_write'] or 0}, read "
               f"{usage['cache_read'] or 0}) out {usage['output_tokens'] or 0} · cost "
               + ("unknown" if cost is None else f"${cost:.4f}"))
    console.print(Panel(
        f"[bold]{markup(inv['question'])}[/]\nkind {markup(inv['kind'])} · planner "
        f"{markup(inv['planner'])} · target {markup(inv['target'])}\n{_verdict_line(rec)}{llm}",
        title=markup(inv["id"])))
    t = Table(title="Claims", expand=True)
    for col in ("id", "status", "category", "conf", "statement", "evidence"):
        t.add_column(col)
    for cl in rec.claims:
        t.add_row(str(cl["id"]), markup(cl["status"]), markup(cl["category"]),
                  f"{cl['confidence']:.2f}", markup(cl["statement"]),
                  markup(f"+{cl['supporting']} -{cl['contradicting']}"))
    console.print(t)
    t = Table(title="Evidence", expand=True)
    for col in ("id", "locator", "excerpt"):
        t.add_column(col)
    for ev in rec.evidence:
        t.add_row(str(ev["id"]), markup(ev["locator"]), markup(str(ev["excerpt"])[:200]))
    console.print(t)
    t = Table(title="Tool calls", expand=True)
    for col in ("#", "tool", "args", "ms", "output", "error"):
        t.add_column(col)
    for tc in rec.tool_calls:
        t.add_row(str(tc["seq"]), markup(tc["tool"]), markup(tc["args_json"]),
                  f"{tc['duration_ms']:.1f}", markup(str(tc["output_summary"])[:80]),
                  markup(tc["error"] or ""))
    console.print(t)
    if rec.actions or rec.action_events:  # what happened to each; a verification of advice
        from goodput_agent.cli.render_actions import render_action_chain

        render_action_chain(rec, console)


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
    title = "Baseline vs incident"
    if w:
        title += (f" (windows: {w.get('how')}; baseline {_clock(w['baseline']['start'])}–"
                  f"{_clock(w['baseline']['end'])}, incident {_clock(w['incident']['start'])}–"
                  f"{_clock(w['incident']['end'])})")
    t = Table(title=title, expand=True)
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
