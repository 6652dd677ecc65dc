"""One attempt's run [start, end] cut into segments that tile it.

    start ── startup ── first step ── productive (checkpoint saves cut out) ── last checkpoint
          ── lost progress ── failure ── failure tail ── end

The failure instant is the investigation's first failure when it lies inside the run, else the
last training step the logs show (nothing after it was progress). A run that completed is
productive from its first step to its end. Without a step line the run never got past start-up
(or, with no logs at all, is unobserved). Every boundary is clamped into [start, end], so the
segments' times add up to the run's exactly.
"""

from __future__ import annotations

from datetime import datetime

from goodput_agent.accounting.model import (
    CHECKPOINTING,
    INPUT_STALL,
    LOST_PROGRESS,
    PRODUCTIVE,
    RESTART_OVERHEAD,
    STARTUP,
    UNOBSERVED,
    FailureCause,
    Segment,
    SegmentKind,
)
from goodput_agent.accounting.progress import Progress, Save


class _Cutter:
    def __init__(self, start: datetime, end: datetime, gpus: int):
        self.start, self.end, self.gpus = start, end, gpus
        self.at = start
        self.out: list[Segment] = []

    def clamp(self, t: datetime) -> datetime:
        return min(max(t, self.start), self.end)

    def to(self, t: datetime, kind: SegmentKind, cause: str, failure: str | None = None,
           evidence: str | None = None) -> None:
        t = max(self.clamp(t), self.at)
        if t > self.at:
            self.out.append(Segment(kind=kind, start=self.at, end=t, gpus=self.gpus,
                                    cause=cause, failure=failure, evidence=evidence))
            self.at = t


def _productive_until(c: _Cutter, until: datetime, saves: list[Save]) -> None:
    """Productive up to `until`, with each save's [start, end] cut out as checkpointing."""
    for s in saves:
        if s.end <= c.at or s.start >= until:
            continue
        c.to(s.start, "productive", PRODUCTIVE)
        c.to(min(s.end, until), "checkpointing", CHECKPOINTING, evidence=s.locator)
    c.to(until, "productive", PRODUCTIVE)


def cut_run(start: datetime, end: datetime, gpus: int, progress: Progress, saves: list[Save],
            failure: FailureCause | None, failed: bool, first_run: bool,
            previous_failure: str | None, have_logs: bool) -> list[Segment]:
    c = _Cutter(start, end, gpus)
    steps = progress.steps
    startup_cause = STARTUP if first_run else RESTART_OVERHEAD
    owed = None if first_run else previous_failure
    category = (failure.category if failure else "unknown") if failed else None
    if not have_logs:
        c.to(end, "unobserved", UNOBSERVED)
        return c.out
    if not steps:  # never reached a training step
        fail_at = failure.time if failed and failure and failure.time else end
        c.to(fail_at, "startup", startup_cause, owed)
        c.to(end, "failure", category or startup_cause, category or owed)
        return c.out
    c.to(steps[0].time, "startup", startup_cause, owed, steps[0].locator)
    if not failed:
        _productive_until(c, end, saves)
        return c.out
    last_step = steps[-1]
    fail_at = last_step.time
    if failure and failure.time and c.clamp(failure.time) >= steps[0].time:
        fail_at = c.clamp(failure.time)
    done = [s for s in saves if s.end <= fail_at]
    kept_until = max((s.end for s in done), default=c.at)
    _productive_until(c, kept_until, done)
    lost_evidence = done[-1].locator if done else steps[0].locator
    c.to(fail_at, "lost_progress", LOST_PROGRESS, category, lost_evidence)
    evidence = failure.evidence[0] if failure and failure.evidence else None
    c.to(end, "failure", category or "unknown", category, evidence)
    return c.out


def split_input_stall(segments: list[Segment], share: float, evidence: str) -> list[Segment]:
    """Each productive segment as two on the same interval: (1 - share) productive, share
    input stall (a trace measures how much of a step waited for input, not when)."""
    if share <= 0.0:
        return segments
    share = min(share, 1.0)
    out: list[Segment] = []
    for s in segments:
        if s.kind != "productive" or share >= 1.0:
            out.append(s)
            continue
        out.append(s.model_copy(update={"share": 1.0 - share}))
        out.append(s.model_copy(update={"kind": "input_stall", "cause": INPUT_STALL,
                                        "share": share, "evidence": evidence}))
    return out
