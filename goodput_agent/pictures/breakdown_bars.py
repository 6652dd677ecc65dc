"""The breakdown as stacked bars: per rank, the median step split into the seven parts, the
baseline run's bar above the incident's, on one ms axis, in the timeline's colours."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.analysis.slowdown.model import (
    PART_LABELS,
    PARTS,
    Breakdown,
    RankBreakdown,
    RunBreakdown,
)
from goodput_agent.core.svg import Scale, Svg, axis, grid, legend, nice_ticks
from goodput_agent.pictures import PART_COLOURS

WIDTH = 1000.0
LABEL_W = 230.0
RIGHT = 70.0  # room for the total after the longest bar
BAR_H = 14.0
BAR_STEP = 18.0
GROUP_GAP = 8.0
TOP = 48.0


def rank_label(rk: RankBreakdown) -> str:
    who = f"rank {rk.rank}" if rk.rank is not None else rk.path.rsplit("/", 1)[-1]
    return f"{who} · {rk.host}" if rk.host else who


def _key(rk: RankBreakdown) -> tuple[int, int | str]:
    return (0, rk.rank) if rk.rank is not None else (1, rk.path)


def bar_parts(rk: RankBreakdown) -> dict[str, float] | None:
    """The median step's split; the mean split where no median step was kept."""
    if rk.median_step is not None:
        return rk.median_step.parts()
    return {p: rk.mean_parts.get(p, 0.0) for p in PARTS} if rk.mean_parts else None


def groups(b: Breakdown) -> list[list[tuple[str, RankBreakdown]]]:
    """Per rank (by rank number; ranks without one alone, but one trace against one trace is
    always a pair), its (run label, breakdown) bars, baseline first."""
    runs: list[RunBreakdown] = [r for r in (b.baseline, b.incident) if r is not None]
    one_each = len(runs) == 2 and all(len(r.ranks) == 1 for r in runs)  # two traces compared
    by_key: dict[tuple[int, int | str], list[tuple[str, RankBreakdown]]] = {}
    for run in runs:
        for rk in run.ranks:
            by_key.setdefault((2, "") if one_each else _key(rk), []).append((run.label, rk))
    return [by_key[k] for k in sorted(by_key)]  # (0, rank) before (1, path): never int vs str


def draw_breakdown_bars(breakdown: Breakdown, out: Path) -> Path:
    """Write the SVG to `out` (parent folders made); returns `out`."""
    bars = groups(breakdown)
    n_bars = sum(len(g) for g in bars)
    longest = max((sum(parts.values()) for g in bars for _, rk in g
                   if (parts := bar_parts(rk))), default=0.0) / 1000
    ticks = nice_ticks(0.0, longest or 1.0, 6)
    hi = max(ticks[-1], longest) if ticks else 1.0
    x0, x1 = LABEL_W, WIDTH - RIGHT
    ms = Scale(0.0, hi, x0, x1)
    axis_y = TOP + BAR_STEP * n_bars + GROUP_GAP * max(len(bars) - 1, 0) + 6
    items = [(PART_LABELS[p], PART_COLOURS[p]) for p in PARTS]
    legend_h = legend(Svg(WIDTH, 0), 10, 0, items, WIDTH - 20)
    svg = Svg(WIDTH, axis_y + 44 + legend_h + 8)
    runs = "baseline vs incident" if breakdown.baseline is not None else "incident"
    svg.text(10, 20, f"Median step per rank, {runs}", size=13, bold=True)
    svg.text(10, 36, "ms on the GPU timeline; the parts are disjoint and sum to the step",
             size=11)
    grid(svg, ms, TOP - 4, axis_y, 6)
    y = TOP
    for group in bars:
        for label, rk in group:
            svg.text(x0 - 6, y + BAR_H - 3, f"{rank_label(rk)} · {label}", size=10,
                     anchor="end", limit=48, bold=label == "incident")
            parts = bar_parts(rk)
            if parts is None:
                svg.text(x0 + 4, y + BAR_H - 3, "no steps", size=10, fill="#888")
                y += BAR_STEP
                continue
            total = sum(parts.values())
            left = 0.0
            with svg.group(f"{rank_label(rk)} · {label}"):
                for p in PARTS:
                    v = parts[p] / 1000
                    if v <= 0:
                        continue
                    share = parts[p] / total * 100 if total else 0.0
                    svg.rect(ms(left), y, ms(left + v) - ms(left), BAR_H, PART_COLOURS[p],
                             title=f"{rank_label(rk)} · {label}: {PART_LABELS[p]} {v:.2f} ms "
                                   f"({share:.0f}%)")
                    left += v
            svg.text(ms(left) + 4, y + BAR_H - 3, f"{total / 1000:.1f} ms", size=10)
            y += BAR_STEP
        y += GROUP_GAP
    axis(svg, ms, axis_y, "ms", 6)
    legend(svg, 10, axis_y + 44, items, WIDTH - 20)
    return svg.write(out)
