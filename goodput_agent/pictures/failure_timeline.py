"""A failure on one clock: a row per node and rank, each row's first events (the report's
timeline: first event per node and rank) as marks coloured by role, and the first failure
marked across every row — the picture of "one rank fails, the rest stop making progress".

The x axis is seconds since the first failure, so the symptoms that follow it read as
positive delays. Events the report could not place on the clock are counted, not drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from goodput_agent.core.svg import Scale, Svg, axis, grid, legend
from goodput_agent.report import Report, TimelineEntry

WIDTH = 1100.0
LABEL_W = 190.0
RIGHT = 30.0
TOP = 70.0
ROW_STEP = 16.0
MARK = 9.0
MAX_ROWS = 256
ROLE_COLOURS = {"primary": "#d62728", "secondary": "#8c6bb1", "symptom": "#f58518",
                "context": "#9e9e9e"}
FIRST_COLOUR = "#111111"


@dataclass(frozen=True, slots=True)
class Mark:
    t: float  # seconds since the first failure
    entry: TimelineEntry


@dataclass(slots=True)
class Row:
    node: str | None
    rank: int | None
    marks: list[Mark]

    @property
    def label(self) -> str:
        parts = [self.node or "no node", "" if self.rank is None else f"rank {self.rank}"]
        return " · ".join(p for p in parts if p)


def _when(e: TimelineEntry) -> datetime | None:
    if not e.time:
        return None
    try:
        return datetime.fromisoformat(e.time)
    except ValueError:
        return None


def first_failure(report: Report) -> TimelineEntry | None:
    """The timeline entry the verdict rests on: the one at the root cause's first evidence
    locator, else the earliest primary event, else None."""
    timed = [(w, e) for e in report.timeline if (w := _when(e)) is not None]
    locators = {ev.locator for ev in report.root_cause.evidence[:1]}
    hit = [(w, e) for w, e in timed if e.locator in locators and e.role == "primary"]
    primaries = hit or [(w, e) for w, e in timed if e.role == "primary"]
    return min(primaries, key=lambda we: we[0])[1] if primaries else None


def failure_rows(report: Report) -> tuple[list[Row], TimelineEntry | None, int]:
    """Rows ordered by node then rank (a node's own events first), the first failure, and how
    many timeline entries had no time."""
    first = first_failure(report)
    times = [w for w in map(_when, report.timeline) if w is not None]
    if not times:
        return [], None, len(report.timeline)
    ref = _when(first) if first is not None else min(times)
    assert ref is not None
    rows: dict[tuple[str | None, int | None], Row] = {}
    untimed = 0
    for e in report.timeline:
        w = _when(e)
        if w is None:
            untimed += 1
            continue
        key = (e.node, e.rank)
        rows.setdefault(key, Row(e.node, e.rank, [])).marks.append(
            Mark((w - ref).total_seconds(), e))
    ordered = sorted(rows.values(), key=lambda r: (r.node or "", r.rank is not None,
                                                   r.rank or 0))
    for r in ordered:
        r.marks.sort(key=lambda m: m.t)
    return ordered, first, untimed


def failure_timeline_svg(report: Report) -> Svg | None:
    """The picture, or None when no timeline entry has a time."""
    rows, first, untimed = failure_rows(report)
    if not rows:
        return None
    shown, hidden = rows[:MAX_ROWS], len(rows) - MAX_ROWS
    ts = [m.t for r in shown for m in r.marks]
    lo, hi = min(ts + [0.0]), max(ts + [0.0])
    pad = max((hi - lo) * 0.03, 0.5)
    sec = Scale(lo - pad, hi + pad, LABEL_W, WIDTH - RIGHT)
    plot_bottom = TOP + len(shown) * ROW_STEP
    svg = Svg(WIDTH, plot_bottom + 90)
    svg.text(10, 20, "Failure timeline: each node's and rank's first events on one clock",
             size=13, bold=True)
    sub = (f"first failure {first.time} on {first.node or 'no node'}"
           f"{'' if first.rank is None else f' rank {first.rank}'}: {first.summary}"
           if first is not None else "no primary failure found: times are since the first event")
    svg.text(10, 36, sub, size=11, limit=150)
    notes = []
    if untimed:
        notes.append(f"{untimed} event(s) without a time are not drawn")
    if hidden > 0:
        notes.append(f"{hidden} more row(s) not drawn")
    if notes:
        svg.text(10, 52, "; ".join(notes), size=10, fill="#666")
    grid(svg, sec, TOP - 6, plot_bottom, 8)
    for i, row in enumerate(shown):
        y = TOP + i * ROW_STEP
        with svg.group(f"row {row.label}"):
            if i % 2:
                svg.rect(LABEL_W, y - 2, WIDTH - RIGHT - LABEL_W, ROW_STEP, "#f6f6f6")
            svg.text(LABEL_W - 6, y + MARK, row.label, size=10, anchor="end", limit=40)
            for m in row.marks:
                e = m.entry
                colour = ROLE_COLOURS.get(e.role, "#9e9e9e")
                svg.rect(sec(m.t) - MARK / 2, y + 1, MARK, MARK, colour,
                         stroke=FIRST_COLOUR if e is first else None,
                         title=f"{e.time} {e.role} {e.kind}: {e.summary} ({e.locator})")
    if first is not None:
        x = sec(0.0)
        with svg.group("first failure"):
            svg.line(x, TOP - 14, x, plot_bottom, stroke=FIRST_COLOUR, width=1.2, dash="4 3")
            svg.text(x + 4, TOP - 8, f"first failure: {first.kind}", size=10, bold=True,
                     limit=80)
    axis(svg, sec, plot_bottom + 4, "seconds since the first failure", 8)
    legend(svg, LABEL_W, plot_bottom + 44,
           [(role, colour) for role, colour in ROLE_COLOURS.items()], WIDTH - LABEL_W)
    return svg


def draw_failure_timeline(report: Report, out: Path) -> Path | None:
    svg = failure_timeline_svg(report)
    return svg.write(out) if svg is not None else None
