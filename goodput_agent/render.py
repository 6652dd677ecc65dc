"""Terminal rendering with rich: the report and the ledger, for people (--json is for scripts)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from goodput_agent.analysis.slowdown_model import PARTS, Breakdown
from goodput_agent.ledger import InvestigationRecord
from goodput_agent.report import Report


class TerminalConsole(Console):
    """rich's Console, except that a reader who left (`goodput ... | head`) is not an error:
    the BrokenPipeError reaches the CLI, which exits 0 (rich's own handler exits 1)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


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
    where = ", ".join(x for x in (f"node {rc.node}" if rc.node else "",
                                  f"rank {rc.rank}" if rc.rank is not None else "",
                                  f"GPU {rc.gpu}" if rc.gpu else "") if x) or "not located"
    head = Text.assemble((f"{rc.category}", "bold"), "  ",
                         (f"confidence {rc.confidence:.2f}", _conf_style(rc.confidence)),
                         "  ", (where, "cyan"))
    body: list = [head, Text(rc.summary)]
    if report.retry:
        verdict = {True: "yes", False: "no", None: "unknown"}[report.retry.useful]
        body.append(Text.assemble(("Retry useful: ", "bold"), verdict, f" — {report.retry.why}"))
    console.print(Panel(Group(*body), title=f"[bold]{escape(report.question or report.kind)}[/]",
                        subtitle=report.investigation_id or "", expand=True))
    if rc.evidence:
        t = Table(title="Evidence", show_lines=False, expand=True)
        t.add_column("id", justify="right", style="dim")
        t.add_column("where", style="cyan", no_wrap=True)
        t.add_column("excerpt")
        for ev in rc.evidence:
            t.add_row(str(ev.id or ""), escape(ev.locator), escape(ev.excerpt[:240]))
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
            t.add_row(_clock(e.time), escape(e.node or "—"),
                      "—" if e.rank is None else str(e.rank), e.role, escape(e.summary[:120]),
                      style=style)
        console.print(t)
    if report.alternatives:
        t = Table(title="Alternatives considered", expand=True)
        t.add_column("category", no_wrap=True)
        t.add_column("conf", justify="right")
        t.add_column("why not")
        for a in report.alternatives:
            t.add_row(a.category, f"{a.confidence:.2f}", escape(a.why_not))
        console.print(t)
    if report.actions:
        t = Table(title="Proposed actions (nothing has been executed)", expand=True)
        for col in ("id", "tool", "args", "mutating", "why"):
            t.add_column(col)
        for a in report.actions:
            t.add_row(str(a.id), a.tool, escape(json.dumps(a.args)), "yes" if a.mutating else "no",
                      escape(a.rationale))
        console.print(t)
    notes = [*(f"unknown: {u}" for u in report.unknowns),
             *(f"unread: {p} ({r})" for p, r in report.unread_reasons.items())]
    if report.clock:
        notes += [f"clock: {a}" for a in report.clock.assumptions]
    if report.pictures:
        notes += [f"picture: {p}" for p in report.pictures]
    if notes:
        console.print(Panel("\n".join(escape(n) for n in notes), title="Notes", style="dim"))


PART_LABELS = {"compute_us": "compute", "comm_transfer_us": "comm", "comm_wait_us": "wait ranks",
               "memory_us": "memory", "idle_input_us": "idle input", "idle_host_us": "idle host",
               "idle_other_us": "idle other"}


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
            t.add_row(run.label, "—" if rk.rank is None else str(rk.rank),
                      escape(rk.host or "—"), f"{rk.median_step_us / 1000:.1f}", *parts)
    console.print(t)


def render_record(rec: InvestigationRecord, console: Console,
                  usage: dict | None = None) -> None:
    inv = rec.investigation
    c = rec.conclusion or {}
    llm = ""
    if usage:  # the LLM planner's calls (planner/claude_store.usage_totals)
        cost = usage.get("cost_usd")
        llm = (f"\nmodel {usage['model']} · {usage['calls']} calls · tokens in "
               f"{usage['input_tokens'] or 0} (cache write {usage['cache_write'] or 0}, read "
               f"{usage['cache_read'] or 0}) out {usage['output_tokens'] or 0} · cost "
               + ("unknown" if cost is None else f"${cost:.4f}"))
    console.print(Panel(
        f"[bold]{escape(str(inv['question']))}[/]\nkind {inv['kind']} · planner {inv['planner']}"
        f" · target {escape(str(inv['target']))}\nverdict {c.get('category', 'not concluded')}"
        f" · confidence {c.get('confidence', '—')} · exit {c.get('exit_code', '—')}{llm}",
        title=inv["id"]))
    t = Table(title="Claims", expand=True)
    for col in ("id", "status", "category", "conf", "statement", "evidence"):
        t.add_column(col)
    for cl in rec.claims:
        t.add_row(str(cl["id"]), cl["status"], cl["category"], f"{cl['confidence']:.2f}",
                  escape(cl["statement"]),
                  f"+{cl['supporting']} -{cl['contradicting']}")
    console.print(t)
    t = Table(title="Evidence", expand=True)
    for col in ("id", "locator", "excerpt"):
        t.add_column(col)
    for ev in rec.evidence:
        t.add_row(str(ev["id"]), escape(ev["locator"]), escape(str(ev["excerpt"])[:200]))
    console.print(t)
    t = Table(title="Tool calls", expand=True)
    for col in ("#", "tool", "args", "ms", "output", "error"):
        t.add_column(col)
    for tc in rec.tool_calls:
        t.add_row(str(tc["seq"]), tc["tool"], escape(tc["args_json"]),
                  f"{tc['duration_ms']:.1f}", escape(str(tc["output_summary"])[:80]),
                  escape(tc["error"] or ""))
    console.print(t)
    if rec.actions:  # with what happened to each: approvals, executions, verifications
        from goodput_agent.render_actions import render_action_chain

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
        console.print(f"config {escape(c['key'])}: {escape(str(c['baseline']))} -> "
                      f"{escape(str(c['incident']))} ({escape(c['source'])})")
