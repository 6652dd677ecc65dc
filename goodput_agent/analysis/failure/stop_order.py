"""An external stop of the whole job (a time limit, a preemption) ends whatever was running,
so a failure printed above it in the same file happened before it, though no time says so
(NCCL's lines, a traceback without timestamps, above slurmstepd's "DUE TO TIME LIMIT"). The
first cause is that failure: the stop only ended the job it had already stalled."""

from __future__ import annotations

from .model import JOB_LEVEL, Candidate
from .notes import fmt_time


def ended_by_the_stop(best: Candidate, cands: list[Candidate], unknowns: list[str]) -> Candidate:
    """The untimed failure printed first above the job-level stop `best` in its own file, or
    `best` when there is none."""
    if best.category not in JOB_LEVEL:
        return best
    stop = best.event.locator
    above = [c for c in cands if c.at is None and c.category not in JOB_LEVEL
             and c.event.locator.path == stop.path and c.event.locator.line_start < stop.line_start]
    if not above:
        return best
    first = min(above, key=lambda c: c.event.locator.line_start)
    unknowns.append(f"{best.event.summary} at {fmt_time(best.at)} ended the job after "
                    f"{first.event.summary} ({first.event.locator.path} line "
                    f"{first.event.locator.line_start}, above it): the stop only ended what that "
                    "failure had stalled; no time on the failure's line says how long before")
    return first
