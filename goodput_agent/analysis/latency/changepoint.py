"""Where did end-to-end latency change, and which windows compare fairly on either side.

The search runs on the latency itself (percentiles of the e2e histogram over time, usually p50
and p90 at a 1-minute step): a two-segment split of the log-latency that minimises the sum of
absolute deviations from each segment's median (robust to spikes), scored jointly over the
series and with a minimum segment length. A ramp is traced back to its start. The windows are
the same length on both sides, a guard away from the change, and skip the warm-up at the start.
Windows the user gives override all of this.
"""

from __future__ import annotations

import math
from bisect import insort
from datetime import UTC, datetime, timedelta
from statistics import median

from pydantic import BaseModel

from goodput_agent.metrics.source import Point, TimeWindow

from .model import WindowChoice

STEP_S = 60.0
RATE_WINDOW_S = 120.0
WARMUP_S = 600.0  # skipped at the start of the data (cold caches, counters starting)
# kept between a window and the change: more before it, since effects build up after their
# cause (a queue fills, a cache fills) and the latency moves later than what moved it
GUARD_BEFORE_S = 240.0
GUARD_AFTER_S = 60.0
MAX_WINDOW_S = 3600.0
MIN_WINDOW_S = 300.0
MIN_RATIO = 1.25  # the smallest after/before median ratio called a change
MIN_GAIN = 0.3  # the share of the one-segment cost the split must remove
_MIN_POINTS = 8


class Change(BaseModel):
    at: datetime
    ratio: float  # after/before median of the series that moved most (linear)
    gain: float  # 1 - cost(two segments) / cost(one segment)
    significant: bool
    before_median: float
    after_median: float


def _seg_costs(x: list[float]) -> list[float]:
    """cost[s] = sum |x_i - median(x[:s])| for s = 0..n (L1 deviation of each prefix)."""
    out = [0.0]
    ordered: list[float] = []
    for v in x:
        insort(ordered, v)
        m = ordered[len(ordered) // 2] if len(ordered) % 2 else \
            (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
        out.append(sum(abs(o - m) for o in ordered))
    return out


def _mad(x: list[float]) -> float:
    m = median(x)
    return median(abs(v - m) for v in x)


def _aligned(series: list[list[Point]]) -> tuple[list[float], list[list[float]]]:
    common = set.intersection(*({p.t for p in s} for s in series)) if series else set()
    times = sorted(common)
    cols = []
    for s in series:
        by_t = {p.t: p.v for p in s}
        cols.append([math.log(max(by_t[t], 1e-6)) for t in times])
    return times, cols


def find_change(series: list[list[Point]], rate_window_s: float = RATE_WINDOW_S,
                min_points: int = _MIN_POINTS) -> Change | None:
    """The most likely single change in the series (all on one time grid), or None when there
    are too few points. `significant` says whether it is a change worth explaining."""
    times, cols = _aligned([s for s in series if s])
    n = len(times)
    if n < 2 * min_points:
        return None
    scales = [max(_mad(c), 0.02) for c in cols]
    pre = [_seg_costs(c) for c in cols]
    suf = [_seg_costs(c[::-1])[::-1] for c in cols]
    total = sum(p[n] / s for p, s in zip(pre, scales, strict=True))
    best_s, best_cost = min(
        ((s, sum((p[s] + q[s]) / sc for p, q, sc in zip(pre, suf, scales, strict=True)))
         for s in range(min_points, n - min_points + 1)), key=lambda x: x[1])
    logs = [median(c[best_s:]) - median(c[:best_s]) for c in cols]
    k = max(range(len(cols)), key=lambda i: abs(logs[i]))
    x, direction = cols[k], (1.0 if logs[k] >= 0 else -1.0)
    # trace a ramp back to where it leaves the before-level
    before = x[:best_s]
    level = median(before)
    threshold = max(3 * 1.4826 * _mad(before), math.log(1.1))
    j = best_s
    while j > min_points // 2 and direction * (x[j - 1] - level) > threshold:
        j -= 1
    gain = 1.0 - best_cost / total if total > 0 else 0.0
    ratio = math.exp(logs[k])
    at = (times[j - 1] + times[j]) / 2 - rate_window_s / 2
    return Change(at=datetime.fromtimestamp(at, UTC), ratio=ratio, gain=gain,
                  significant=abs(logs[k]) >= math.log(MIN_RATIO) and gain >= MIN_GAIN,
                  before_median=math.exp(level), after_median=math.exp(median(x[best_s:])))


def _win(start: float, end: float) -> TimeWindow:
    return TimeWindow(start=datetime.fromtimestamp(start, UTC),
                      end=datetime.fromtimestamp(end, UTC))


def usable_span(span: TimeWindow, warmup_s: float = WARMUP_S) -> TimeWindow:
    """The span without its warm-up (at most a tenth of the span)."""
    skip = min(warmup_s, span.seconds / 10)
    return TimeWindow(start=span.start + timedelta(seconds=skip), end=span.end)


def choose_windows(span: TimeWindow, change: Change | None, baseline: TimeWindow | None = None,
                   incident: TimeWindow | None = None, *, detection: str = "",
                   guard_before_s: float = GUARD_BEFORE_S,
                   guard_after_s: float = GUARD_AFTER_S, max_s: float = MAX_WINDOW_S,
                   warmup_s: float = WARMUP_S) -> WindowChoice | None:
    """Windows to compare. User windows win; one user window gets a same-length partner
    (before an incident, or the latest data after a baseline). Otherwise the windows sit on
    either side of a significant change; without one, the first and the last stretch of the
    data are compared. None when the data cannot hold two windows of MIN_WINDOW_S."""
    use = usable_span(span, warmup_s)
    s0, s1 = use.start.timestamp(), use.end.timestamp()
    if baseline and incident:
        return WindowChoice(baseline=baseline, incident=incident, how="user")
    if incident:
        length = incident.seconds
        start = max(incident.start.timestamp() - length, s0)
        if incident.start.timestamp() - start < MIN_WINDOW_S:
            return None
        return WindowChoice(baseline=_win(start, incident.start.timestamp()), incident=incident,
                            how="user+adjacent",
                            notes=["baseline: the same length right before the incident window"
                                   + ("" if start > s0 else " (shortened by the data's start)")])
    if baseline:
        length = baseline.seconds
        start = max(s1 - length, baseline.end.timestamp())
        if s1 - start < MIN_WINDOW_S:
            return None
        return WindowChoice(baseline=baseline, incident=_win(start, s1), how="user+adjacent",
                            notes=["incident: the latest stretch of the data, as long as the "
                                   "baseline window"])
    if change and change.significant:
        c = change.at.timestamp()
        length = min(max_s, c - guard_before_s - s0, s1 - c - guard_after_s)
        if length >= MIN_WINDOW_S:
            before = _win(c - guard_before_s - length, c - guard_before_s)
            after = _win(c + guard_after_s, c + guard_after_s + length)
            rose = change.ratio >= 1
            notes = [] if rose else ["latency fell at the change: the slower side (before it) "
                                     "is the incident"]
            return WindowChoice(baseline=before if rose else after,
                                incident=after if rose else before, how="change_point",
                                change_at=change.at, change_ratio=change.ratio,
                                detection=detection, notes=notes)
    length = min(max_s, (s1 - s0 - guard_before_s - guard_after_s) / 2)
    if length < MIN_WINDOW_S:
        return None
    why = "no significant change in end-to-end latency" if change else \
        "too few latency points to search for a change"
    return WindowChoice(baseline=_win(s0, s0 + length), incident=_win(s1 - length, s1),
                        how="no_change_point", change_ratio=change.ratio if change else None,
                        detection=detection,
                        notes=[f"{why}: the first and the last stretch of the data are compared"])
