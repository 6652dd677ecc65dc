"""Is the confidence honest? Verdicts grouped by the confidence they were given, each group's
accuracy beside its mean confidence (a reliability table), and the Brier score: the mean of
(confidence - correct)^2 over the cases, 0 for a perfectly calibrated and sure product.

A case is correct when its category is; a case whose expected answer is `unknown` is correct
when the verdict is `unknown`, and that verdict's confidence is the confidence in it.

What an `unknown` verdict's confidence means (goodput_agent/analysis/abstention.py): the
confidence that the bundle supports no class, that a careful reader of every file would not
name a cause either. It rests on what was read, like any verdict's: 0.8 when a first-hand
record says there is nothing to explain (the scheduler's COMPLETED 0:0, latency measured flat
over both windows), 0.6 when the sources that would show each class were read and rule each
out with a number, 0.3 when nothing was found (silence, a guess), 0.15 when something failed
and its start was not read, 0.1 when a file went unread; never 0. So an `unknown` is scored
like any verdict: right at its confidence when the answer key says `unknown` (or, with a
`max_confidence`, a guess at or below it), wrong at its confidence otherwise. No case is left
out of the score for being `unknown` either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

# bin edges: a confidence falls in [lo, hi), the last bin also takes 1.0
EDGES = (0.0, 0.3, 0.5, 0.7, 0.9, 1.0)


class Scored(BaseModel):
    """One case as calibration sees it."""

    confidence: float
    correct: bool


class ReliabilityBin(BaseModel):
    low: float
    high: float
    cases: int = 0
    mean_confidence: float | None = None  # None for an empty bin
    accuracy: float | None = None

    @property
    def label(self) -> str:
        return f"{self.low:.1f}–{self.high:.1f}"


class Calibration(BaseModel):
    brier: float | None = None  # None without cases
    bins: list[ReliabilityBin]


def _bin_index(confidence: float, edges: Sequence[float]) -> int:
    c = min(max(confidence, edges[0]), edges[-1])
    return next((i for i in range(len(edges) - 2) if c < edges[i + 1]), len(edges) - 2)


def calibrate(rows: Iterable[Scored], edges: Sequence[float] = EDGES) -> Calibration:
    rows = list(rows)
    members: list[list[Scored]] = [[] for _ in edges[:-1]]
    for r in rows:
        members[_bin_index(r.confidence, edges)].append(r)
    bins = [ReliabilityBin(low=lo, high=hi, cases=len(m),
                           mean_confidence=sum(r.confidence for r in m) / len(m) if m else None,
                           accuracy=sum(r.correct for r in m) / len(m) if m else None)
            for lo, hi, m in zip(edges[:-1], edges[1:], members, strict=True)]
    brier = sum((r.confidence - r.correct) ** 2 for r in rows) / len(rows) if rows else None
    return Calibration(brier=brier, bins=bins)


def render_calibration(cal: Calibration, console: Console,
                       title: str = "Reliability (confidence bins against accuracy)") -> None:
    t = Table(title=title)
    for col in ("confidence", "cases", "mean confidence", "accuracy"):
        t.add_column(col, justify="left" if col == "confidence" else "right")
    for b in cal.bins:
        t.add_row(b.label, str(b.cases),
                  "" if b.mean_confidence is None else f"{b.mean_confidence:.2f}",
                  "" if b.accuracy is None else f"{b.accuracy:.0%}")
    console.print(t)
    if cal.brier is not None:
        console.print(f"Brier score of the confidence: {cal.brier:.3f} "
                      "(0 is best; a constant 0.5 scores 0.250)")
