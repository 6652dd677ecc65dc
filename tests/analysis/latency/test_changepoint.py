"""The change in e2e latency is found where it is, and windows compare fairly around it."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from goodput_agent.analysis.latency.changepoint import (
    GUARD_AFTER_S,
    GUARD_BEFORE_S,
    MIN_WINDOW_S,
    choose_windows,
    find_change,
)
from goodput_agent.metrics.source import Point, TimeWindow

T0 = 1_748_937_600.0
RW = 120.0


def series(level: list[float], noise: float = 0.08, seed: int = 1) -> list[Point]:
    """One point a minute; each point shows the rate window that ends at it."""
    rng = random.Random(seed)
    return [Point(t=T0 + 60 * k, v=v * rng.lognormvariate(0, noise)) for k, v in
            enumerate(level)]


def step(n: int, at: int, before: float, after: float) -> list[float]:
    # the point at `at` is the first whose rate window is mostly after the change
    return [before if k < at else after for k in range(n)]


def at_minute(minute: float) -> datetime:
    return datetime.fromtimestamp(T0 + 60 * minute, UTC)


def test_a_step_is_found_within_two_minutes() -> None:
    p90 = series(step(90, 50, 2.0, 5.0))
    p50 = series(step(90, 50, 1.0, 2.4), seed=2)
    ch = find_change([p50, p90], RW)
    assert ch is not None and ch.significant
    # the true change lies about half a rate window before the first point that shows it
    assert abs((ch.at - at_minute(49)).total_seconds()) <= 120
    assert ch.ratio == pytest.approx(2.45, rel=0.15)


def test_noise_and_a_spike_are_not_a_change() -> None:
    level = [3.0] * 90
    level[40] = 60.0  # one terrible minute
    ch = find_change([series(level), series([1.5] * 90, seed=3)], RW)
    assert ch is not None and not ch.significant


def test_a_ramp_is_traced_back_to_where_it_starts() -> None:
    level = [2.0] * 45 + [2.0 * (1 + 0.25 * k) for k in range(45)]
    ch = find_change([series(level, noise=0.05)], RW)
    assert ch is not None and ch.significant
    assert abs((ch.at - at_minute(45)).total_seconds()) <= 180


def test_too_few_points_gives_no_answer() -> None:
    assert find_change([series([1.0] * 10)], RW) is None
    assert find_change([], RW) is None


def test_windows_either_side_of_a_rise() -> None:
    span = TimeWindow(start=at_minute(0), end=at_minute(90))
    ch = find_change([series(step(90, 50, 2.0, 5.0))], RW)
    w = choose_windows(span, ch)
    assert w is not None and w.how == "change_point" and w.change_at == ch.at
    assert w.baseline.end == ch.at - timedelta(seconds=GUARD_BEFORE_S)
    assert w.incident.start == ch.at + timedelta(seconds=GUARD_AFTER_S)
    assert w.baseline.seconds == w.incident.seconds >= 30 * 60
    assert w.baseline.start >= at_minute(9)  # the warm-up (a tenth of the span) is skipped


def test_a_fall_makes_the_slow_side_the_incident() -> None:
    span = TimeWindow(start=at_minute(0), end=at_minute(90))
    ch = find_change([series(step(90, 40, 6.0, 2.0))], RW)
    w = choose_windows(span, ch)
    assert w is not None and w.incident.end <= ch.at <= w.baseline.start
    assert "latency fell" in w.notes[0]


def test_without_a_change_the_first_and_last_stretch_are_compared() -> None:
    span = TimeWindow(start=at_minute(0), end=at_minute(60))
    ch = find_change([series([3.0] * 60)], RW)
    w = choose_windows(span, ch)
    assert w is not None and w.how == "no_change_point"
    assert w.incident.end == span.end and w.baseline.end <= w.incident.start
    assert w.baseline.seconds == w.incident.seconds


def test_user_windows_win() -> None:
    span = TimeWindow(start=at_minute(0), end=at_minute(120))
    b = TimeWindow(start=at_minute(10), end=at_minute(30))
    i = TimeWindow(start=at_minute(80), end=at_minute(100))
    ch = find_change([series(step(120, 60, 1.0, 4.0))], RW)
    assert choose_windows(span, ch, b, i).model_dump() == \
        {"baseline": b.model_dump(), "incident": i.model_dump(), "how": "user",
         "change_at": None, "change_ratio": None, "detection": "", "notes": []}
    only_incident = choose_windows(span, ch, None, i)
    assert only_incident.how == "user+adjacent"
    assert only_incident.baseline == TimeWindow(start=at_minute(60), end=at_minute(80))
    only_baseline = choose_windows(span, ch, b, None)
    assert only_baseline.incident == TimeWindow(start=at_minute(100), end=at_minute(120))


def test_no_room_for_two_windows() -> None:
    span = TimeWindow(start=at_minute(0), end=at_minute(8))
    assert choose_windows(span, None) is None
    i = TimeWindow(start=span.start + timedelta(seconds=MIN_WINDOW_S / 2), end=span.end)
    assert choose_windows(span, None, None, i) is None
