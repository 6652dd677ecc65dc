"""Slowdowns, stragglers and hangs a training log tells by itself (issue 24, class 8): said at
honest confidence, never as a failure's cause."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from goodput_agent.analysis.failure.analyze import diagnose
from goodput_agent.analysis.failure.observations import Activity, Observations
from goodput_agent.analysis.record_levels import SILENCE_CEILING
from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER

T0 = datetime(2024, 5, 1, 10, tzinfo=UTC)


def test_megatron_iteration_lines_are_read_as_the_logs_own_series(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("".join(
        f" iteration {i:>8}/  500000 | consumed samples: {i * 512} | elapsed time per "
        f"iteration (ms): {900.0 if i < 20 else 2100.0} | lm loss: 2.1E+00 |\n"
        for i in range(1, 31)))
    res = PARSER.parse(p, ParseContext(rel_path="train.log"))
    assert len(res.facts["iterations"]) == 30
    v = diagnose(Observations(facts={"train.log": res.facts}))
    assert v.category == "unknown" and "rose from 900 to 2100 ms" in v.summary
    assert "profiler trace" in v.summary


def test_one_slow_rank_among_eight_is_named_a_straggler() -> None:
    pts = [[s, 1500.0 if r == 6 else 1000.0, r] for r in range(8) for s in range(10)]
    v = diagnose(Observations(facts={"logs": {"iterations": pts}}))
    assert v.category == "unknown" and "rank 6" in v.summary and "straggler" in v.summary


def test_a_log_that_went_silent_long_before_its_end_hung() -> None:
    act = Activity(path="logs/rank0.log", node="n0", rank=0, first=T0, format="job_log",
                   last=T0 + timedelta(hours=3), last_progress=T0 + timedelta(minutes=40),
                   prior_progress=T0 + timedelta(minutes=39), last_step=2400)
    v = diagnose(Observations(activity=[act]))
    assert v.category == "hang" and v.confidence <= SILENCE_CEILING
    assert "step 2400" in v.summary and "140 min" in v.summary


def test_a_steady_log_is_no_hang() -> None:
    act = Activity(path="logs/rank0.log", node="n0", rank=0, first=T0, format="job_log",
                   last=T0 + timedelta(hours=3), last_progress=T0 + timedelta(hours=3),
                   prior_progress=T0 + timedelta(hours=3) - timedelta(minutes=1), last_step=9)
    assert diagnose(Observations(activity=[act])).category == "unknown"


def _quiet_log() -> Activity:
    """A log whose last line is its last progress line, at T0 + 40 min."""
    return Activity(path="logs/rank0.log", node="n0", rank=0, first=T0, format="job_log",
                    last=T0 + timedelta(minutes=40), last_progress=T0 + timedelta(minutes=40),
                    prior_progress=T0 + timedelta(minutes=39), last_step=2400)


def _job_row(state: str, end: datetime, kind: EventKind = EventKind.job_state,
             category: str | None = None) -> Event:
    return Event(kind=kind, role=Role.primary if category else Role.context, category=category,
                 ts=end, clock=Clock.absolute, summary=f"job {state}", excerpt=state,
                 locator=Locator(path="slurm/sacct.txt", line_start=2, line_end=2),
                 detail={"state": state, "end": end.isoformat()})


def test_a_job_its_scheduler_ended_hours_after_its_last_progress_hung() -> None:
    # the log ends on a progress line; the silence is the job's, until the scheduler ended it
    end = T0 + timedelta(hours=3, minutes=40)
    for state in ("CANCELLED by 4021", "FAILED"):
        v = diagnose(Observations(activity=[_quiet_log()],
                                  events=[_job_row(state, end)]))
        assert v.category == "hang" and v.confidence <= SILENCE_CEILING, state
        assert "step 2400" in v.summary and "180 min before the job was ended" in v.summary
    done = diagnose(Observations(activity=[_quiet_log()],
                                 events=[_job_row("COMPLETED", end)]))
    assert done.category == "unknown"  # a job that finished may write nothing at its end


def test_a_time_limit_that_ended_a_silent_job_ended_a_hang() -> None:
    silent = Observations(activity=[_quiet_log()], events=[_job_row(
        "TIMEOUT", T0 + timedelta(hours=3, minutes=40), EventKind.time_limit, "time_limit")])
    v = diagnose(silent)
    assert v.category == "hang" and v.confidence <= SILENCE_CEILING
    assert [a.category for a in v.alternatives][:1] == ["time_limit"]
    busy = Observations(activity=[_quiet_log()], events=[_job_row(
        "TIMEOUT", T0 + timedelta(minutes=41), EventKind.time_limit, "time_limit")])
    assert diagnose(busy).category == "time_limit"
