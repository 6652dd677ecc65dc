"""A slowdown report's own section in the terminal: the step breakdown per run and rank (the
median step and its parts, which sum to it)."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from goodput_agent.analysis.slowdown.model import PART_LABELS, PARTS, Breakdown
from goodput_agent.core.untrusted import markup, visible


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
