"""A report for people (`goodput investigate`, `check`, `demo`), laid out for any width from
80 columns up: the verdict's panel, evidence as blocks (its id and where, the excerpt below),
the question's own section (render_slowdown.py, render_latency.py), the failure timeline with
the columns that fit, the alternatives with where each points, the proposals as blocks, and the
notes (unknowns, unread files, clock assumptions). Identifiers (ids, node names, paths) are
never wrapped where the width allows them whole; every cut says what it cut."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime

from rich import box
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from goodput_agent.cli.render_latency import render_latency
from goodput_agent.cli.render_slowdown import render_breakdown
from goodput_agent.cli.term import SETTINGS
from goodput_agent.core.untrusted import markup, rich_text, visible
from goodput_agent.report import (
    Alternative,
    EvidenceItem,
    ProposedAction,
    Report,
    TimelineEntry,
)

EXCERPT_LINES = 4  # of an evidence excerpt, unless --wide
EXCERPT_CHARS = 360
TIMELINE_ROWS = 20  # rows of the failure timeline on a terminal, unless --wide
NARROW = 100  # below this many columns, tables choose and abbreviate their columns


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


def where_of(ev: EvidenceItem) -> str:
    """The locator without the excerpt it repeats: a trace span or a metric query is both the
    place and the text, and is shown once, as the excerpt."""
    head = f"{ev.source} ["
    if ev.locator.startswith(head) and ev.locator.endswith("]") \
            and ev.locator[len(head):-1] == ev.excerpt:
        return ev.source
    return ev.locator


def cut_excerpt(text: str) -> str:
    """At most EXCERPT_LINES lines and EXCERPT_CHARS characters, saying what was left out;
    --wide shows it whole (as stored)."""
    if SETTINGS.wide:
        return text
    lines = text.splitlines() or [""]
    shown = lines[:EXCERPT_LINES]
    body = "\n".join(shown)
    cut_chars = 0
    if len(body) > EXCERPT_CHARS:
        cut_chars, body = len(body) - EXCERPT_CHARS, body[:EXCERPT_CHARS]
    more = []
    if len(lines) > len(shown):
        more.append(f"{len(lines) - len(shown)} more lines")
    if cut_chars:
        more.append(f"{cut_chars} more characters")
    return body + (f" … ({', '.join(more)}; --wide shows all)" if more else "")


def _short_time(iso: str | None) -> str:
    if not iso:
        return ""
    try:
        return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return ""


def evidence_blocks(items: Sequence[EvidenceItem], title: str = "Evidence") -> RenderableType:
    """One block per evidence row: `#id  where  time`, the excerpt below, indented."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for ev in items:
        head = Text(visible(where_of(ev), newlines=False), style="cyan", overflow="fold")
        if when := _short_time(ev.time):
            head.append(f"  {when}", style="dim")
        grid.add_row("—" if ev.id is None else f"#{ev.id}",
                     Group(head, Text(visible(cut_excerpt(ev.excerpt)))))
    return Group(Text(title, style="bold"), grid)


def _timeline_clock(iso: str | None, with_date: bool) -> str:
    if not iso:
        return "—"
    try:
        t = datetime.fromisoformat(iso).astimezone(UTC)
    except ValueError:
        return visible(iso[:23], newlines=False)
    return t.strftime("%m-%d %H:%M:%S.%f" if with_date else "%H:%M:%S.%f")[:-3]


ROLE_STYLES = {"primary": "bold red", "context": "dim"}


def timeline_table(entries: Sequence[TimelineEntry], width: int, left_out: int = 0) -> Table:
    """Each node's and rank's first events, at most TIMELINE_ROWS (all with --wide), and a
    last line saying how many are not shown. The date moves to the title when every entry
    has the same one and the width is narrow."""
    rows = list(entries) if SETTINGS.wide else list(entries)[:TIMELINE_ROWS]
    dates = {e.time[:10] for e in entries if e.time}
    one_date = len(dates) == 1 and width < NARROW
    title = "Timeline (first event per node and rank, UTC" + (
        f", {next(iter(dates))})" if one_date else ")")
    t = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
              expand=True, title_justify="left")
    for col in ("time", "node", "rank", "role"):
        t.add_column(col, no_wrap=True)
    t.add_column("what", ratio=1, overflow="fold")
    for e in rows:
        t.add_row(_timeline_clock(e.time, not one_date), visible(e.node or "—", newlines=False),
                  "—" if e.rank is None else str(e.rank), visible(e.role, newlines=False),
                  Text(visible(e.summary[:300] if not SETTINGS.wide else e.summary)),
                  style=ROLE_STYLES.get(e.role, ""))
    hidden = len(entries) - len(rows)
    if hidden or left_out:
        said = []
        if hidden:
            said.append(f"{hidden} more not shown (--wide or --json lists them)")
        if left_out:
            said.append(f"{left_out} later events left out of the report")
        t.caption = "… " + "; ".join(said)
        t.caption_justify = "left"
    return t


def _located(node: str | None, rank: int | None) -> str:
    return ", ".join(x for x in (f"node {node}" if node else "",
                                 f"rank {rank}" if rank is not None else "") if x)


def alternatives_table(alternatives: Sequence[Alternative]) -> Table:
    """Each alternative, with where it points when it names a place: an alternative of the
    verdict's own class is another culprit, and says which."""
    t = Table(title="Alternatives considered", box=box.SIMPLE_HEAD, show_edge=False,
              pad_edge=False, expand=True, title_justify="left")
    t.add_column("category", no_wrap=True)
    t.add_column("conf", justify="right", no_wrap=True)
    t.add_column("why not", ratio=1)
    for a in alternatives:
        where = _located(a.node, a.rank)
        why = Text(f"{where}: " if where else "", style="cyan")
        why.append(visible(a.why_not))
        t.add_row(visible(a.category, newlines=False), f"{a.confidence:.2f}", why)
    return t


def proposal_blocks(actions: Sequence[ProposedAction]) -> RenderableType:
    """`#id tool (mutating)`, its exact arguments, why; nothing has run."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for a in actions:
        head = Text(visible(a.tool, newlines=False), style="bold")
        head.append("  mutating, needs approval" if a.mutating else "  read-only",
                    style="yellow" if a.mutating else "dim")
        args = Text(visible(json.dumps(a.args, ensure_ascii=False)), style="cyan")
        grid.add_row("—" if a.id is None else f"#{a.id}",
                     Group(head, args, Text(visible(a.rationale))))
    return Group(Text("Proposed actions (nothing has been executed; goodput approve ID)",
                      style="bold"), grid)
