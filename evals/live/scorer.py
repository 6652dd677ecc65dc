"""`goodput eval --suite live`: replay each generated running job poll by poll (every 10 s,
as the watch polls a running job), run the same detection `goodput check` runs
(goodput_agent/detect/assess.py) on what was visible at that moment, and score the first alarm
of each job against what was planted; beside it two baselines: fixed thresholds (no progress
for 5 min; an SM clock under 85 % of its maximum, a temperature over 85 °C or power under
60 % of its usual, in any sample) and the NCCL watchdog's own timing (a hang is noticed when
the collective times out, 600 s by default; nothing else is noticed, no culprit named).

A job counts as detected when its first alarm comes at or after the onset and names the
fault's family (a hang, or a slow node: straggler or throttling); an alarm on a healthy job,
before the onset, or of the wrong family is a false positive. Culprit accuracy is over the
detected faults that have a culprit node; a hang planted without one is right when the
verdict names none.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from pydantic import BaseModel, Field

from goodput_agent.analysis.live.failslow import judge_failslow
from goodput_agent.analysis.live.stall import Phase, StallSettings
from goodput_agent.detect.assess import Finding, Observation, RankCollective, assess, stall_of
from goodput_agent.detect.progress import read_progress
from goodput_agent.evals.live.generator import (
    COUNTER_SCRAPE_S,
    GRID_S,
    RANKS_PER_NODE,
    LiveCase,
    dumps_at,
    make_suite,
    metric_streams,
)

POLL_S = 10.0
WINDOW_POINTS = 3  # quantile_over_time(0.5, m[30s]) over the 10 s grid
PERSIST = (0, 1, 2, 3, 4)  # evaluation points back from now: every poll of the last 40 s
REDUMP_S = 60.0  # while a job stays silent, its stacks are dumped again at most this often
WATCHDOG_S = 600.0
FIXED_STALL_S = 300.0


class JobResult(BaseModel):
    job: str
    fault: str
    nodes: int
    onset: float | None
    expected_node: str | None
    alarm_at: float | None = None
    alarm_kind: str | None = None
    alarm_node: str | None = None
    confidence: float = 0.0
    summary: str = ""
    # the bound for a stall: 60 s after the onset, or 3x the job's p99 step time
    deadline_s: float | None = None


class MethodScores(BaseModel):
    precision: float
    recall: float
    f1: float
    detect_median_s: float | None
    detect_p95_s: float | None
    culprit_accuracy: float | None
    tp: int
    fp: int
    fn: int
    # of the hangs detected, the share detected within their deadline (60 s or 3x p99 step)
    hangs_within_deadline: float | None = None


class LiveScores(BaseModel):
    jobs: int
    by_fault: dict[str, int]
    ours: MethodScores
    baseline: dict[str, MethodScores]
    results: list[JobResult] = Field(default_factory=list)


def _family(kind: str | None) -> str | None:
    return {"hang": "hang", "straggler": "slow", "throttle": "slow",
            "gpu_throttling": "slow"}.get(kind or "")


class _Replay:
    """What was visible of one job at any poll time."""

    def __init__(self, case: LiveCase, work: Path):
        self.case = case
        if case.source == "log":
            path = work / f"{case.job}.log"
            path.write_text("\n".join(case.log_lines) + "\n")
            log = read_progress(path)
            self.marks = np.array([m.t for m in log.marks])
            self.steps = np.array([float(m.step or 0) for m in log.marks])
            self.phases = log.phases
            self.samples = None
        else:
            grid = np.arange(case.start - 60, case.end, COUNTER_SCRAPE_S)
            if case.counter_gap:
                a, b = case.counter_gap
                grid = grid[(grid < a) | (grid > b)]
            counts = np.searchsorted(np.array(case.marks), grid, side="right")
            rose = np.flatnonzero(np.diff(counts) > 0) + 1
            self.marks, self.steps = grid[rose], counts[rose].astype(float)
            self.phases, self.samples = [], grid
        self.times, self.series = metric_streams(case)
        # quantile_over_time(0.5, m[30s]) at every grid point (the window ending there)
        self.avg = {k: np.median(sliding_window_view(v, WINDOW_POINTS, axis=0), axis=-1)[1:]
                    for k, v in self.series.items()}

    def observation(self, t: float) -> Observation:
        n = int(np.searchsorted(self.marks, t, side="right"))
        phases = [Phase(kind=p.kind, start=p.start, end=p.end if p.end and p.end <= t else None)
                  for p in self.phases if p.start <= t]
        samples = None
        if self.samples is not None:
            samples = self.samples[self.samples <= t].tolist()
        return Observation(job=self.case.job, now=t, progress=self.marks[:n].tolist(),
                           steps=self.steps[:n].tolist(), phases=phases, samples=samples,
                           world_size=self.case.nodes * RANKS_PER_NODE)

    def failslow_at(self, t: float):  # noqa: ANN201 - a FailSlowVerdict
        i = int(np.searchsorted(self.times, t, side="right")) - 1 - WINDOW_POINTS
        if i - max(PERSIST) < 0:
            return None
        data = {k: v[[i - back for back in reversed(PERSIST)]] for k, v in self.avg.items()}
        return judge_failslow(self.case.node_names, data)


def _with_dumps(case: LiveCase, obs: Observation, t: float) -> Observation:
    dumps, flight = dumps_at(case, t)
    names = case.node_names
    obs.dumps = dumps
    obs.rank_nodes = {r: names[r // RANKS_PER_NODE] for r in dumps}
    obs.flight = [RankCollective(rank=r, last_enqueued=s, op=op) for r, (s, op) in flight.items()]
    return obs


def replay(case: LiveCase, r: _Replay, settings: StallSettings | None = None) -> JobResult:
    s = settings or StallSettings()
    r.dumped_at, r.dumps = None, None
    out = JobResult(job=case.job, fault=case.fault, nodes=case.nodes, onset=case.onset,
                    expected_node=case.culprit_node)
    if case.onset is not None:
        steps = np.diff([m for m in case.marks if m <= case.onset])
        p99 = float(np.percentile(steps, 99)) if len(steps) else 0.0
        out.deadline_s = max(60.0, 3 * p99)
    t = case.start + 60
    stop = case.end if case.onset is None else min(case.end, case.onset + 900)
    while t <= stop:
        finding = _poll(case, r, t, s)
        if finding is not None and finding.alarm:
            out.alarm_at, out.alarm_kind, out.alarm_node = t, finding.kind, finding.node
            out.confidence, out.summary = finding.confidence, finding.summary[:300]
            break
        t += POLL_S
    return out


def _poll(case: LiveCase, r: _Replay, t: float, s: StallSettings) -> Finding | None:
    obs = r.observation(t)
    last = obs.progress[-1] if obs.progress else None
    slow = r.failslow_at(t)
    if last is not None and t - last >= s.min_stall_s:
        stall = stall_of(obs, s)
        if stall.suspect:  # the watch dumps the ranks' stacks only now
            if r.dumped_at is None or t - r.dumped_at >= REDUMP_S or \
                    r.dumped_at < (obs.progress[-1] if obs.progress else 0):
                r.dumped_at, r.dumps = t, _with_dumps(case, obs.model_copy(), t)
            obs.dumps, obs.rank_nodes = r.dumps.dumps, r.dumps.rank_nodes
            obs.flight, obs.world_size = r.dumps.flight, r.dumps.world_size
        obs.failslow = slow
        return assess(obs, s, stall=stall)
    if slow is None or not slow.slow:
        return None
    obs.failslow = slow
    return assess(obs, s)


def baseline_fixed(case: LiveCase, r: _Replay) -> JobResult:
    out = JobResult(job=case.job, fault=case.fault, nodes=case.nodes, onset=case.onset,
                    expected_node=case.culprit_node)
    marks = r.marks
    t = case.start + 60
    stop = case.end if case.onset is None else min(case.end, case.onset + 900)
    clock, temp, power = r.series["sm_clock"], r.series["temp"], r.series["power"]
    bad = (clock < 0.85 * 1980) | (temp > 85) | (power < 0.6 * 620)
    while t <= stop:
        n = int(np.searchsorted(marks, t, side="right"))
        if n and t - marks[n - 1] > FIXED_STALL_S:
            out.alarm_at, out.alarm_kind = t, "hang"
            return out
        i = int(np.searchsorted(r.times, t, side="right")) - 1
        hit = np.flatnonzero(bad[i]) if i >= 0 else []
        if len(hit):
            out.alarm_at, out.alarm_kind = t, "gpu_throttling"
            out.alarm_node = case.node_names[int(hit[0])]
            return out
        t += POLL_S
    return out


def baseline_watchdog(case: LiveCase) -> JobResult:
    out = JobResult(job=case.job, fault=case.fault, nodes=case.nodes, onset=case.onset,
                    expected_node=case.culprit_node)
    if case.fault == "hang" and case.onset is not None:
        out.alarm_at, out.alarm_kind = case.onset + WATCHDOG_S, "hang"
    return out


def score(results: list[JobResult]) -> MethodScores:
    tp = fp = fn = 0
    delays: list[float] = []
    hangs: list[bool] = []
    culprit_right = culprit_total = 0
    for r in results:
        faulty = r.fault != "healthy"
        hit = (faulty and r.alarm_at is not None and r.alarm_at >= (r.onset or 0)
               and _family(r.alarm_kind) == _family(r.fault))
        if hit:
            tp += 1
            delays.append(r.alarm_at - r.onset)  # type: ignore[operator]
            if r.fault == "hang" and r.deadline_s is not None:
                hangs.append(delays[-1] <= r.deadline_s)
            if r.expected_node is not None or r.fault == "hang":
                culprit_total += 1
                culprit_right += r.alarm_node == r.expected_node
        else:
            fp += r.alarm_at is not None
            fn += faulty
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return MethodScores(
        precision=round(precision, 4), recall=round(recall, 4), f1=round(f1, 4),
        detect_median_s=round(statistics.median(delays), 1) if delays else None,
        detect_p95_s=round(float(np.percentile(delays, 95)), 1) if delays else None,
        culprit_accuracy=round(culprit_right / culprit_total, 4) if culprit_total else None,
        tp=tp, fp=fp, fn=fn,
        hangs_within_deadline=round(sum(hangs) / len(hangs), 4) if hangs else None)


def score_live(seed: int = 29, jobs: int = 240) -> LiveScores:
    cases = make_suite(seed, jobs)
    ours, fixed, watchdog = [], [], []
    with tempfile.TemporaryDirectory(prefix="goodput-live-eval-") as tmp:
        for case in cases:
            r = _Replay(case, Path(tmp))
            ours.append(replay(case, r))
            fixed.append(baseline_fixed(case, r))
            watchdog.append(baseline_watchdog(case))
    by_fault: dict[str, int] = {}
    for c in cases:
        by_fault[c.fault] = by_fault.get(c.fault, 0) + 1
    return LiveScores(jobs=len(cases), by_fault=by_fault, ours=score(ours),
                      baseline={"fixed_thresholds": score(fixed), "watchdog": score(watchdog)},
                      results=ours)


def live_json(s: LiveScores) -> dict:
    """The shape `goodput eval --suite live --json` prints."""
    o = s.ours
    return {"live": {"precision": o.precision, "recall": o.recall, "f1": o.f1,
                     "detect_median_s": o.detect_median_s, "detect_p95_s": o.detect_p95_s,
                     "culprit_accuracy": o.culprit_accuracy, "jobs": s.jobs,
                     "by_fault": s.by_fault, "counts": {"tp": o.tp, "fp": o.fp, "fn": o.fn},
                     "hangs_within_deadline": o.hangs_within_deadline,
                     "baseline": {k: v.model_dump() for k, v in s.baseline.items()}}}


__all__ = ["GRID_S", "LiveScores", "live_json", "score_live"]
