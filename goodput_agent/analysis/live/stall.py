"""Has a running job stopped making progress? Judged against the job's own recent history.

Input: the times of the job's progress marks (step/iteration lines, or the moments a step
counter metric went up), the phases the job announced (checkpoint save, evaluation), and,
for a metric source, the times samples exist. Output: one `StallVerdict`.

The rules, each from the job's own history, never a fixed number alone:
- the normal step interval is learned from the recent intervals that no announced phase
  overlapped (a step counter that jumps by k counts k steps);
- a silence is a stall once it exceeds `factor` × the p99 of those intervals, and never
  before `min_stall_s` (a floor for jobs whose steps take milliseconds);
- during an announced checkpoint or evaluation phase the allowance is the longest such phase
  seen before × `phase_factor` (or `first_phase_s` when the job never had one: the first save
  is given room, and the verdict says so);
- pauses the job makes without announcing them (a save with no log line) are learned when they
  recur: once two or more are in the history, the silence due at that point is allowed the
  longest of them × `phase_factor`;
- start-up (fewer than `min_intervals` intervals seen) never alarms: there is no history yet;
- a metric series whose samples stopped is missing data, not a stall: the silence counts only
  up to the last sample, and the verdict says `no_data` when the samples themselves stopped.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

PhaseKind = Literal["checkpoint", "eval"]
State = Literal["progressing", "starting", "in_phase", "stalled", "no_data"]


class Phase(BaseModel):
    """An announced pause: started at `start`, ended at `end` (None: still going)."""

    kind: PhaseKind
    start: float
    end: float | None = None


class StallSettings(BaseModel):
    factor: float = 2.5  # × the p99 step interval
    min_stall_s: float = 30.0  # no stall is called on a shorter silence
    min_intervals: int = 5  # history needed before any alarm (start-up)
    history: int = 200  # the most recent intervals learned from
    phase_factor: float = 1.5  # × the longest earlier phase of that kind
    first_phase_s: float = 1800.0  # an announced phase the job never had before
    recurring_min: int = 2  # unannounced pauses seen before they are allowed again
    scrape_gap_factor: float = 3.0  # samples missing for this × their usual spacing: no data


class StallVerdict(BaseModel):
    state: State
    silent_s: float = 0.0  # since the last progress (up to the last sample, for metrics)
    allowed_s: float | None = None  # the silence this job is allowed now
    normal_s: float | None = None  # the silence allowed between two ordinary steps
    last_progress: float | None = None
    step_p50_s: float | None = None
    step_p99_s: float | None = None
    intervals: int = 0  # how many step intervals the verdict learned from
    reason: str = ""
    notes: list[str] = Field(default_factory=list)

    @property
    def stalled(self) -> bool:
        return self.state == "stalled"

    @property
    def suspect(self) -> bool:
        """Silent past an ordinary step's allowance (a phase may still explain it): the moment
        to look at the ranks' stacks."""
        return self.normal_s is not None and self.silent_s > self.normal_s and \
            self.state in ("stalled", "in_phase")


def _learn(times: np.ndarray, steps: np.ndarray | None, phases: list[Phase],
           s: StallSettings) -> tuple[np.ndarray, dict[str, list[float]], list[tuple[int, float]]]:
    """(normal per-step intervals, announced phase lengths by kind, unannounced long pauses as
    (index of the mark that ended them, length)). Vectorised: a poll costs the same at 10 and
    at 10,000 marks."""
    gaps = np.diff(times)
    per = np.ones_like(gaps)
    if steps is not None and len(steps) == len(times):
        per = np.maximum(np.diff(steps), 1.0)
    phase_len: dict[str, list[float]] = {"checkpoint": [], "eval": []}
    in_phase = np.zeros(len(gaps), dtype=bool)
    for p in phases:
        if p.end is not None:
            phase_len[p.kind].append(p.end - p.start)
        end = p.end if p.end is not None else np.inf
        in_phase |= (p.start < times[1:]) & (end > times[:-1])
    index = np.flatnonzero(~in_phase)
    value = gaps[index] / per[index]
    if len(index) < s.min_intervals:
        return value, phase_len, []
    long = max(6 * float(np.median(value)), 1.0)  # an unannounced pause: far over a step
    pauses = [(int(i) + 1, float(gaps[i])) for i in index[value > long]]
    return value[value <= long][-s.history:], phase_len, pauses


def _recurring_allowance(pauses: list[tuple[int, float]], marks: int,
                         s: StallSettings) -> float | None:
    """The room for an unannounced pause due now: it recurred, and as many marks have passed
    since the last one as usually pass between them (90 % of the usual spacing)."""
    if len(pauses) < s.recurring_min:
        return None
    starts = [i for i, _ in pauses]
    spacing = float(np.median(np.diff(starts))) if len(starts) > 1 else float(starts[0])
    since = marks - starts[-1]
    if since < 0.9 * spacing:
        return None
    return max(g for _, g in pauses) * s.phase_factor


def judge_stall(progress: list[float], now: float, *, steps: list[float] | None = None,
                phases: list[Phase] | None = None, samples: list[float] | None = None,
                settings: StallSettings | None = None) -> StallVerdict:
    """`progress`: times (seconds, any epoch) of progress marks, oldest first; `steps`: the
    step number at each (optional); `samples`: for a metric source, the times samples exist."""
    s = settings or StallSettings()
    phases = sorted(phases or [], key=lambda p: p.start)
    times = np.asarray(progress, dtype=float)
    notes: list[str] = []
    until = now
    if samples is not None:
        if len(samples) == 0:
            return StallVerdict(state="no_data", reason="the metric series has no samples")
        spacing = float(np.median(np.diff(samples))) if len(samples) > 1 else 60.0
        last_sample = float(samples[-1])
        if now - last_sample > s.scrape_gap_factor * max(spacing, 1.0):
            return StallVerdict(state="no_data", last_progress=_last(times),
                                reason=f"no sample for {now - last_sample:.0f} s (usually one "
                                       f"every {spacing:.0f} s): missing data, not a stall")
        until = last_sample
    if len(times) == 0:
        return StallVerdict(state="starting", reason="no progress mark yet (start-up)")
    silent = max(0.0, until - float(times[-1]))
    normal, phase_len, pauses = _learn(times, np.asarray(steps, float) if steps else None,
                                       phases, s)
    base = StallVerdict(state="progressing", silent_s=silent, last_progress=float(times[-1]),
                        intervals=len(normal))
    if len(normal) < s.min_intervals:
        base.state, base.reason = "starting", (
            f"{len(normal)} step intervals seen, {s.min_intervals} needed (start-up)")
        return base
    p50, p99 = float(np.percentile(normal, 50)), float(np.percentile(normal, 99))
    base.step_p50_s, base.step_p99_s = p50, p99
    allowed = base.normal_s = float(max(s.min_stall_s, s.factor * p99))
    open_phase = next((p for p in reversed(phases) if p.start >= times[-1] - 1e-9
                       and p.end is None), None)
    state: State = "progressing"
    if open_phase is not None:
        earlier = phase_len[open_phase.kind]
        room = max(earlier) * s.phase_factor if earlier else s.first_phase_s
        if not earlier:
            notes.append(f"first {open_phase.kind} phase of this job: allowed "
                         f"{s.first_phase_s:.0f} s")
        allowed = max(allowed, (open_phase.start - times[-1]) + room)
        state = "in_phase"
    for p in phases:  # a phase that ended after the last mark: its length is not a stall
        if p.end is not None and p.start >= times[-1] - 1e-9:
            allowed = max(allowed, (p.end - times[-1]) + max(s.min_stall_s, s.factor * p99))
    recurring = _recurring_allowance(pauses, len(times) - 1, s)
    if recurring is not None:
        allowed = max(allowed, recurring)
        notes.append(f"{len(pauses)} earlier unannounced pauses (longest "
                     f"{max(g for _, g in pauses):.0f} s): one is due now")
    base.allowed_s = float(allowed)
    base.notes = notes
    if silent > allowed:
        base.state = "stalled"
        base.reason = (f"no progress for {silent:.0f} s; this job's steps take {p50:.2f} s "
                       f"(p99 {p99:.2f} s over {len(normal)} steps), allowed {allowed:.0f} s")
    else:
        base.state = state
        base.reason = (f"silent {silent:.0f} s of {allowed:.0f} s allowed"
                       + (f" ({open_phase.kind} under way)" if open_phase else ""))
    return base


def _last(times: np.ndarray) -> float | None:
    return float(times[-1]) if len(times) else None
