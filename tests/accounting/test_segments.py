"""An attempt's segments tile its run exactly, whatever the logs show."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from goodput_agent.accounting.model import Attempt, FailureCause, JobAccount, Segment
from goodput_agent.accounting.progress import Progress, Save, Step
from goodput_agent.accounting.segments import cut_run, split_input_stall

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def steps(*minutes: float) -> Progress:
    return Progress(steps=[Step(time=at(m), step=i, locator=f"log:{i}")
                           for i, m in enumerate(minutes)])


def save(start: float, end: float) -> Save:
    return Save(family="megatron", start=at(start), end=at(end), locator="log:99")


def assert_tiles(segments: list[Segment], start: datetime, end: datetime, gpus: int) -> None:
    """Contiguous, no gap or overlap (share-split pairs share one interval), and the GPU-time
    adds up to the run's."""
    intervals = sorted({(s.start, s.end) for s in segments})
    assert intervals[0][0] == start and intervals[-1][1] == end
    for (_, e1), (s2, _) in zip(intervals, intervals[1:], strict=False):
        assert e1 == s2
    assert sum(s.seconds * s.gpus for s in segments) == pytest.approx(
        (end - start).total_seconds() * gpus, rel=1e-12)


def test_failed_attempt_with_a_checkpoint() -> None:
    cause = FailureCause(category="gpu_hardware", summary="Xid 79", time=at(50))
    segs = cut_run(at(0), at(60), 8, steps(5, 10, 20, 30, 40, 49), [save(20, 22), save(40, 41)],
                   cause, failed=True, first_run=True, previous_failure=None, have_logs=True)
    assert_tiles(segs, at(0), at(60), 8)
    kinds = [(s.kind, s.start, s.end) for s in segs]
    assert kinds == [("startup", at(0), at(5)), ("productive", at(5), at(20)),
                     ("checkpointing", at(20), at(22)), ("productive", at(22), at(40)),
                     ("checkpointing", at(40), at(41)), ("lost_progress", at(41), at(50)),
                     ("failure", at(50), at(60))]
    assert {s.failure for s in segs if s.kind in ("lost_progress", "failure")} == {"gpu_hardware"}


def test_restart_overhead_is_owed_to_the_previous_failure() -> None:
    segs = cut_run(at(0), at(30), 4, steps(3, 29), [], None, failed=False, first_run=False,
                   previous_failure="network_fault", have_logs=True)
    assert_tiles(segs, at(0), at(30), 4)
    assert (segs[0].kind, segs[0].cause, segs[0].failure) == (
        "startup", "restart_overhead", "network_fault")
    assert segs[-1].kind == "productive" and segs[-1].end == at(30)


def test_failure_before_the_first_step_and_no_logs() -> None:
    cause = FailureCause(category="gpu_oom", summary="OOM", time=at(2))
    segs = cut_run(at(0), at(5), 2, Progress(), [], cause, failed=True, first_run=True,
                   previous_failure=None, have_logs=True)
    assert_tiles(segs, at(0), at(5), 2)
    assert [s.kind for s in segs] == ["startup", "failure"]
    blind = cut_run(at(0), at(5), 2, Progress(), [], None, failed=False, first_run=True,
                    previous_failure=None, have_logs=False)
    assert [s.kind for s in blind] == ["unobserved"]


def test_times_outside_the_run_are_clamped() -> None:
    # log lines a little after the scheduler's end (second-precision End, ms log times)
    cause = FailureCause(category="hang", summary="hang", time=at(10.5))
    segs = cut_run(at(0), at(10), 1, steps(-1, 2, 9), [save(9.5, 10.2)], cause, failed=True,
                   first_run=True, previous_failure=None, have_logs=True)
    assert_tiles(segs, at(0), at(10), 1)


def test_input_stall_share_keeps_the_total() -> None:
    segs = cut_run(at(0), at(60), 8, steps(5, 59), [save(30, 31)], None, failed=False,
                   first_run=True, previous_failure=None, have_logs=True)
    split = split_input_stall(segs, 0.25, "traces/rank0.json")
    assert_tiles(split, at(0), at(60), 8)
    stall = sum(s.gpu_hours for s in split if s.kind == "input_stall")
    productive = sum(s.gpu_hours for s in segs if s.kind == "productive")
    assert stall == pytest.approx(productive * 0.25)


def test_account_totals() -> None:
    cause = FailureCause(category="gpu_hardware", summary="x", time=at(50))
    first = Attempt(index=0, job_id="1", submit=at(-10), start=at(0), end=at(60), state="FAILED",
                    gpus=8, failure=cause,
                    segments=cut_run(at(0), at(60), 8, steps(5, 49), [save(20, 22)], cause, True,
                                     True, None, True))
    second = Attempt(index=1, run=1, job_id="1", submit=at(60), start=at(70), end=at(100),
                     state="COMPLETED", gpus=8,
                     segments=cut_run(at(70), at(100), 8, steps(75, 99), [], None, False, False,
                                      "gpu_hardware", True))
    acct = JobAccount(target="job 1", attempts=[first, second])
    held = (60 + 30) * 8 / 60
    assert acct.allocated_gpu_hours == pytest.approx(held)
    badput_held = sum(h for c, h in acct.badput_gpu_hours_by_cause.items() if c != "queueing")
    assert acct.productive_gpu_hours + badput_held == pytest.approx(held)
    assert acct.badput_gpu_hours_by_cause["queueing"] == pytest.approx(20 * 8 / 60)
    # 5..20 and 22 productive in the first run (lost after 22), 75..100 in the second
    assert acct.productive_s == pytest.approx((15 + 25) * 60)
    assert acct.effective_training_time_ratio == pytest.approx(40 / 100)
    assert acct.goodput_fraction == pytest.approx(acct.productive_gpu_hours / held)
    # what the Xid cost: lost progress 22..50, the tail 50..60, the restart 70..75
    assert acct.badput_gpu_hours_by_failure["gpu_hardware"] == pytest.approx((28 + 10 + 5) * 8 / 60)
