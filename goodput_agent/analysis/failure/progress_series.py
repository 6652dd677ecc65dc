"""Slowdowns and hangs a training log shows by itself, without a trace (issue 24, class 8).

- The log's own per-iteration series (Megatron's `elapsed time per iteration (ms)`, tqdm's
  `s/it` / `it/s`, `step N ... time X`), read by the job-log parser as facts `iterations`
  ([step, ms, rank]): iteration times that rose (the last quarter's median at least 1.5x the
  first quarter's) are a slowdown; across ranks, one rank whose median is 1.3x the others' is a
  straggler (the measures a slowdown question uses: analysis/log_series.py). Said beside an
  `unknown` failure verdict, never as a cause: a profiler trace of a slow and a good stretch
  would confirm and attribute it.
- A job log whose last progress line came long before its end (30 min or more, and 10x the
  interval between its last two progress lines), with no timeout printed anywhere, hung: a
  `hang` at most at the silence ceiling (record_levels.py: it rests on lines not printed, as a
  hang told by the waiting ranks does; a long evaluation that prints nothing looks the same),
  saying a stack dump would confirm where it was stuck.
"""

from __future__ import annotations

from datetime import datetime

from goodput_agent.analysis.log_series import SLOWER, measure_rise, series_of, single_out
from goodput_agent.analysis.record_levels import SILENCE_CEILING
from goodput_agent.core.events import Event, EventKind

from .observations import Observations
from .scheduler_rows import ended_unfinished

SILENT_END_S = 30 * 60
SILENT_FACTOR = 10
HANG_CONFIDENCE = SILENCE_CEILING


def series_note(obs: Observations) -> str | None:
    """What the logs' iteration times say, in one sentence, or None (measured as a slowdown
    question measures them: analysis/log_series.py)."""
    points = series_of(obs.facts, obs.rank_hosts).points
    notes = []
    if (rise := measure_rise(points)) is not None and rise.ratio >= SLOWER:
        notes.append(rise.text())
    if (found := single_out(points)) is not None:
        rank, slow, others = found
        notes.append(f"rank {rank}'s median iteration ({slow:.0f} ms) is "
                     f"{slow / others:.1f}x the other ranks' ({others:.0f} ms): a straggler")
    if not notes:
        return None
    return "; ".join(notes) + " (a profiler trace of a slow and a good stretch would confirm it)"


def silent_end(events: list[Event], obs: Observations) -> str | None:
    """Why, when a job log stopped making progress long before it or the job ended and no
    collective timed out: a hang told by the log's own rhythm."""
    if any(e.kind == EventKind.nccl_watchdog_timeout for e in events):
        return None
    for a in obs.activity:
        if a.format != "job_log" or not (a.last and a.last_progress and a.prior_progress):
            continue
        gap = (a.last - a.last_progress).total_seconds()
        beat = max(1.0, (a.last_progress - a.prior_progress).total_seconds())
        if gap >= SILENT_END_S and gap >= SILENT_FACTOR * beat:
            return (f"{a.path} printed its last progress line (step {a.last_step}) "
                    f"{gap / 60:.0f} min before it ended, against one every {beat:.0f} s "
                    "before; no timeout was printed: the job hung (a py-spy dump of its "
                    "processes, or a Flight Recorder dump, would show where)")
    # the log's last line may be its last progress line, and the scheduler ended the job
    # hours later (cancelled by its user, or at its limit): the silence is the job's
    end = ended_unfinished(events, obs)
    if end and (stalled := stalled_before(end, obs)):
        return (f"{stalled}; no timeout was printed: the job hung (a py-spy dump of its "
                "processes, or a Flight Recorder dump, would show where)")
    return None


def stalled_before(end: datetime, obs: Observations) -> str | None:
    """Why the job had stopped making progress long before `end` (the same measure as
    silent_end, against the time the job was ended rather than its log's last line), or None
    when some job log was still progressing."""
    lasts = [a for a in obs.activity if a.format == "job_log" and a.last_progress
             and a.prior_progress]
    if not lasts:
        return None
    a = max(lasts, key=lambda a: a.last_progress)  # type: ignore[arg-type, return-value]
    gap = (end - a.last_progress).total_seconds()  # type: ignore[operator]
    beat = max(1.0, (a.last_progress - a.prior_progress).total_seconds())  # type: ignore[operator]
    if gap < SILENT_END_S or gap < SILENT_FACTOR * beat:
        return None
    return (f"the last progress line of any log ({a.path}, step {a.last_step}) came "
            f"{gap / 60:.0f} min before the job was ended, against one every {beat:.0f} s before")
