"""The slowdown verdict from a training log's own series (no trace): a straggler by its
iteration times or by a part of the step it prints, a timer that grew alone, and unknowns that
say what was measured, each at most 0.6."""

from __future__ import annotations

from goodput_agent.analysis.abstention import (
    NOTHING_NAMES_A_CAUSE,
    NOTHING_TO_COMPARE,
    SILENCE,
    UNREAD,
)
from goodput_agent.analysis.log_series import LogPoint, LogSeries, TimerBlock
from goodput_agent.analysis.record_levels import ONE_ARTIFACT
from goodput_agent.analysis.slowdown.from_logs import MAX_CONFIDENCE, log_verdict


def _text(path: str, line: int) -> str:
    return f"{path}:{line}"


def _series(ms_of, ranks=(None,), steps=40) -> list[LogPoint]:
    return [LogPoint(step, ms_of(step, rank), rank, "train.log", 10 + step * 8 + (rank or 0))
            for step in range(steps) for rank in ranks]


def _timers(times_of, n=24, path="rank0.log") -> list[TimerBlock]:
    out = []
    for i in range(n):
        times = times_of(i)
        out.append(TimerBlock(path, 100 + i * 10, times,
                              {name: 101 + i * 10 + k for k, name in enumerate(times)}))
    return out


def test_one_slow_rank_is_the_straggler_on_its_node() -> None:
    pts = _series(lambda s, r: 1500.0 if r == 6 else 1000.0 + r, ranks=range(8))
    v = log_verdict(LogSeries(points=pts, rank_hosts={6: "gpu-07", 0: "gpu-01"}), _text)
    assert (v.category, v.rank, v.node) == ("straggler", 6, "gpu-07")
    assert v.confidence <= MAX_CONFIDENCE and "trace" in v.summary
    assert v.evidence[0].rank == 6 and v.evidence[0].locator.line_start > 0


def test_a_rank_whose_compute_part_grew_is_the_straggler_though_step_times_agree() -> None:
    """Synchronous ranks print the same step time; the slow one's compute part tells it."""
    pts = _series(lambda s, r: 900.0 if s < 20 else 1300.0, ranks=range(6))
    fwd = _series(lambda s, r: 1250.0 if (r == 3 and s >= 20) else 800.0, ranks=range(6))
    wait = _series(lambda s, r: 20.0 if (r == 3 or s < 20) else 450.0, ranks=range(6))
    v = log_verdict(LogSeries(points=pts, parts={"fwd_bwd": fwd, "allreduce_wait": wait},
                              rank_hosts={3: "hpc-g9n4"}), _text)
    assert (v.category, v.rank, v.node) == ("straggler", 3, "hpc-g9n4")
    assert "fwd_bwd" in v.summary and v.confidence <= MAX_CONFIDENCE


def test_a_rank_slower_by_a_part_too_small_to_cost_the_step_is_no_straggler() -> None:
    pts = _series(lambda s, r: 1000.0, ranks=range(6))
    data = _series(lambda s, r: 3.0 if r == 2 else 2.0, ranks=range(6))
    v = log_verdict(LogSeries(points=pts, parts={"data_time": data}), _text)
    assert v.category == "unknown"


def test_a_uniform_slowdown_with_nothing_else_is_unknown_saying_what_was_measured() -> None:
    pts = _series(lambda s, r: 1000.0 if s < 30 else 2000.0, ranks=range(4))
    v = log_verdict(LogSeries(points=pts), _text)
    assert v.category == "unknown" and v.confidence == SILENCE
    assert "rose from 1000 to 2000 ms" in v.summary and "step 30" in v.summary
    assert "profiler" in v.summary and "timing-log-level" in v.summary and "DCGM" in v.summary


def test_a_rise_in_a_bundle_read_whole_and_quiet_rests_on_every_line() -> None:
    pts = _series(lambda s, r: 1000.0 if s < 30 else 2000.0, ranks=range(4))
    v = log_verdict(LogSeries(points=pts, quiet=True), _text)
    assert v.category == "unknown" and v.confidence == NOTHING_NAMES_A_CAUSE > SILENCE
    assert "every line of the bundle was read" in v.summary


def test_an_unread_file_holds_the_unknown_to_unread() -> None:
    pts = _series(lambda s, r: 1000.0 if s < 30 else 2000.0)
    for quiet in (False, True):
        assert log_verdict(LogSeries(points=pts, unread_files=1, quiet=quiet),
                           _text).confidence == UNREAD


def test_a_class_from_the_logs_numbers_is_one_artifacts_level() -> None:
    """Who is slow, or which timer grew, is the log's own numbers; what would confirm it (a
    trace, DCGM) is missing: one artifact's level (record_levels.py), never more."""
    pts = _series(lambda s, r: 1500.0 if r == 6 else 1000.0 + r, ranks=range(8))
    assert log_verdict(LogSeries(points=pts), _text).confidence == MAX_CONFIDENCE == ONE_ARTIFACT


def test_a_steady_series_is_unknown_with_nothing_to_compare() -> None:
    pts = _series(lambda s, r: 127000.0 + (s % 3) * 900)
    v = log_verdict(LogSeries(points=pts), _text)
    assert v.category == "unknown" and v.confidence == NOTHING_TO_COMPARE
    assert "steady" in v.summary


def test_a_few_steady_points_are_unknown_too() -> None:
    pts = _series(lambda s, r: 127000.0 + s * 100, steps=4)
    v = log_verdict(LogSeries(points=pts), _text)
    assert v.category == "unknown" and "too few" in v.summary


def _megatron(i: int, grown: str | None, by: float) -> dict[str, float]:
    late = i >= 16
    times = {"forward-backward": 1500.0, "forward-compute": 480.0, "backward-compute": 960.0,
             "batch-generator": 2.5, "all-grads-sync": 25.0, "optimizer": 35.0}
    if late and grown:
        times[grown] += by
    return times


def test_a_batch_generator_that_grew_alone_is_an_input_stall() -> None:
    pts = _series(lambda s, r: 1550.0 if s < 26 else 1900.0)
    v = log_verdict(LogSeries(points=pts, timers=_timers(
        lambda i: _megatron(i, "batch-generator", 340.0))), _text)
    assert v.category == "input_stall" and v.confidence <= MAX_CONFIDENCE
    assert "batch-generator" in v.summary and "trace" in v.summary
    assert v.evidence[0].excerpt.startswith("rank0.log:")


def test_gradient_sync_that_grew_alone_is_communication() -> None:
    v = log_verdict(LogSeries(timers=_timers(lambda i: _megatron(i, "all-grads-sync", 400.0))),
                    _text)
    assert v.category == "communication" and v.confidence <= MAX_CONFIDENCE


def test_a_sync_whose_min_held_while_its_max_grew_is_waiting_not_communication() -> None:
    """The ranks that arrive first wait in the collective for a late one: its max grows, the
    late rank's own time (the min) does not."""
    blocks = _timers(lambda i: _megatron(i, "all-grads-sync", 400.0))
    for b in blocks:
        b.mins = {"all-grads-sync": 24.0}
    v = log_verdict(LogSeries(timers=blocks), _text)
    assert v.category == "unknown" and "late one" in v.summary
    for b in blocks:
        b.mins = {"all-grads-sync": b.times["all-grads-sync"] - 2.0}
    assert log_verdict(LogSeries(timers=blocks), _text).category == "communication"


def test_a_compute_timer_that_grew_names_no_class() -> None:
    v = log_verdict(LogSeries(timers=_timers(
        lambda i: _megatron(i, "backward-compute", 600.0))), _text)
    assert v.category == "unknown" and "backward-compute" in v.summary


def test_an_input_timer_that_grew_beside_communication_names_no_class() -> None:
    def both(i: int) -> dict[str, float]:
        t = _megatron(i, "batch-generator", 300.0)
        if i >= 16:
            t["all-grads-sync"] += 200.0
        return t
    v = log_verdict(LogSeries(timers=_timers(both)), _text)
    assert v.category == "unknown"


def test_steady_timers_leave_the_series_to_decide() -> None:
    pts = _series(lambda s, r: 1000.0 if s < 30 else 2000.0)
    v = log_verdict(LogSeries(points=pts, timers=_timers(lambda i: _megatron(i, None, 0))),
                    _text)
    assert v.category == "unknown" and "rose from 1000" in v.summary
