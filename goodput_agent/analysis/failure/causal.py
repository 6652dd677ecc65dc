"""Whether an event could have started the failure: a cause sits next to the cascade it starts.

A distributed job fails as a cascade: one rank or node stops, its peers wait in a collective,
their watchdogs fire, the launcher tears the rest down and the scheduler ends the job. The
cascade has an onset (when the collectives stopped progressing, or, lacking that, the first
burst of symptoms, or the job's end), and a cause sits just before it. An event long before the
onset, after which the job went on making progress (it started, logged steps, enqueued
collectives), did not stop the job: it is a pre-existing condition, reported as node health,
never the verdict.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel

from goodput_agent.core.events import Clock, Event, EventKind, Role

from .model import SCHEDULER_KINDS, Alternative, Candidate
from .notes import fmt_time
from .observations import NodeNames, Observations, iso_time
from .scheduler_rows import job_rows, scheduler_end

# A collective is enqueued a little ahead of the fault that stalls it (the CPU runs ahead).
EXACT_LEAD = timedelta(minutes=5)
# Without a dated stall, a stuck job may linger up to a watchdog timeout before anything prints.
DEFAULT_WATCHDOG = timedelta(minutes=30)
LEAD_MARGIN = timedelta(minutes=5)
# Ranks that lose a peer still print their own lines for a short while before they block.
PROGRESS_SLACK = timedelta(minutes=5)
BURST_WINDOW = timedelta(minutes=5)
# A step logged this long after an event finished after it (logging trails the step a little).
STEP_SLACK = timedelta(seconds=60)
# slurmctld declares a node down only after it went SlurmdTimeout without answering (300 s by
# default, raised on large clusters, then a ping cycle): its NODE_FAIL is dated when it noticed,
# minutes after the node left; within this lag of a stall it may be the stall's cause
NODE_DOWN_NOTICE = timedelta(minutes=30)
# Symptoms that date a cascade: ranks losing their peers, the launcher tearing the job down.
CASCADE_KINDS = (EventKind.nccl_watchdog_timeout, EventKind.connection_reset,
                 EventKind.nccl_error, EventKind.signal, EventKind.elastic_failure,
                 EventKind.ib_error, EventKind.exit_status)
# A node's state as a controller reports it (Kubernetes NotReady, Slurm not responding): the
# node may work on for minutes before the controller acts on it.
CONTROLLER_STATES = (EventKind.node_not_ready, EventKind.node_fail)
# The scheduler's own word on why it ended the job outweighs an earlier log line.
DECISIVE_END_STATES = {"TIMEOUT": "time_limit", "PREEMPTED": "preempted",
                       "NODE_FAIL": "node_failure", "OUT_OF_MEMORY": "host_oom"}


class Cascade(BaseModel):
    onset: datetime | None = None
    how: str = "no cascade could be dated"
    exact: bool = False  # dated by the stalled collective itself, not by its later echoes
    lead: timedelta = DEFAULT_WATCHDOG + LEAD_MARGIN  # how long before the onset a cause may sit

    def distant(self, at: datetime | None) -> bool:
        return bool(self.onset and at and self.onset - at > self.lead)


class Progress(BaseModel):
    """One sign that the job was working at a time: a log that started, a normal last line,
    a collective that was enqueued, the scheduler starting the job."""

    at: datetime
    node: str | None
    rank: int | None
    what: str
    path: str | None = None
    completed: bool = False  # a finished training step: every rank's collectives completed


def watchdog_timeout(events: list[Event]) -> timedelta | None:
    values = [float(e.detail["timeout_ms"]) for e in events
              if e.kind == EventKind.nccl_watchdog_timeout
              and isinstance(e.detail.get("timeout_ms"), int | float)]
    return timedelta(milliseconds=max(values)) if values else None


def stall_starts(events: list[Event]) -> list[tuple[Event, datetime]]:
    """Each watchdog line dates its stuck collective: the time it fired minus how long it ran."""
    out = []
    for e in events:
        ran = e.detail.get("ran_ms") or e.detail.get("timeout_ms")
        if e.kind == EventKind.nccl_watchdog_timeout and e.ts and isinstance(ran, int | float):
            out.append((e, e.ts - timedelta(milliseconds=float(ran))))
    return out


def symptom_burst(events: list[Event]) -> datetime | None:
    """The first time at least two ranks or nodes show symptoms together: one stray line is
    not a cascade."""
    timed = sorted((e for e in events if e.role == Role.symptom and e.kind in CASCADE_KINDS
                    and e.ts and e.clock != Clock.carried), key=lambda e: e.ts)  # type: ignore
    for i, first in enumerate(timed):
        assert first.ts is not None
        sources = {(e.node, e.rank, e.locator.path) for e in timed[i:]
                   if e.ts - first.ts <= BURST_WINDOW}  # type: ignore[operator]
        if len(sources) >= 2:
            return first.ts
    return timed[0].ts if len(timed) == 1 else None


def job_end(events: list[Event], obs: Observations) -> datetime | None:
    """When the scheduler ended the job (its own row, not a step), else the job logs' end."""
    if end := scheduler_end(events, obs):
        return end
    lasts = [a.last for a in obs.activity if a.last and a.format != "kernel_log"]
    return max(lasts) if lasts else None


def find_cascade(events: list[Event], obs: Observations) -> Cascade:
    timeout = watchdog_timeout(events) or DEFAULT_WATCHDOG
    stalls = [at for _, at in stall_starts(events)]
    if stalls:
        return Cascade(onset=min(stalls), exact=True, lead=EXACT_LEAD,
                       how="the ranks' watchdog lines date the stalled collective")
    loose = timeout + LEAD_MARGIN
    burst = symptom_burst(events)
    end = job_end(events, obs)
    if burst and (end is None or burst <= end):
        return Cascade(onset=burst, lead=loose, how="the first burst of symptoms on the ranks")
    if end:
        return Cascade(onset=end, lead=loose, how="the job's end")
    return Cascade()


def progress_marks(events: list[Event], obs: Observations, names: NodeNames) -> list[Progress]:
    marks = [Progress(at=at, node=e.node, rank=e.rank,
                      what=f"rank {e.rank} enqueued collective #{e.detail.get('seq_num', '?')}")
             for e, at in stall_starts(events)]
    failing: dict[str, list[datetime]] = {}
    for e in events:
        if e.ts and e.role != Role.context:
            failing.setdefault(e.locator.path, []).append(e.ts)
    for a in obs.activity:
        if a.format == "kernel_log":
            continue  # a kernel log shows the node alive, not the job working
        node = names.canon(a.node or (obs.rank_hosts.get(a.rank) if a.rank is not None
                                      else None))
        if a.last_progress:
            step = f" (step {a.last_step})" if a.last_step is not None else ""
            marks.append(Progress(at=a.last_progress, node=node, rank=a.rank, path=a.path,
                                  what=f"{a.path} logs training progress{step}"))
        if a.prior_progress:  # two progress lines after an event: a whole step finished after it
            marks.append(Progress(at=a.prior_progress, node=node, rank=a.rank, path=a.path,
                                  what=f"{a.path} logs two more training steps", completed=True))
        if a.first and not _part_of_failure(a.first, failing.get(a.path, [])):
            marks.append(Progress(at=a.first, node=node, rank=a.rank, path=a.path,
                                  what=f"{a.path} starts"))
        # the last line shows work only when it is not itself part of the failure
        if a.last and not _part_of_failure(a.last, failing.get(a.path, [])):
            marks.append(Progress(at=a.last, node=node, rank=a.rank, path=a.path,
                                  what=f"{a.path} goes on logging"))
    for e in job_rows(events):
        if ts := iso_time(e.detail.get("start"), obs):
            marks.append(Progress(at=ts, node=None, rank=None, what="the scheduler started "
                                                                   "the job"))
    return marks


def _part_of_failure(at: datetime, failing: list[datetime]) -> bool:
    return any(abs((at - t).total_seconds()) <= 60 for t in failing)


def progress_after(e: Event, at: datetime, marks: list[Progress],
                   slack: timedelta) -> Progress | None:
    """A sign of work after the event: its own rank's or node's first, else the job's, whose
    collectives need every rank. A carried time (a traceback that took the previous line's
    time) is only a lower bound: only a later line of the same file is surely after it."""
    later = [m for m in marks if m.at > at + slack]
    if e.clock == Clock.carried:
        later = [m for m in later if m.path == e.locator.path]
    own = [m for m in later if (e.rank is not None and m.rank == e.rank)
           or (e.node is not None and m.node == e.node)]
    pool = own or later
    return min(pool, key=lambda m: m.at) if pool else None


def decisive_end_state(events: list[Event], obs: Observations) -> tuple[str, Event] | None:
    """The scheduler's own reason for ending the job (TIMEOUT, PREEMPTED, NODE_FAIL,
    OUT_OF_MEMORY), from the job's last run; a generic FAILED says nothing specific."""
    rows = job_rows(events)
    if obs.latest_run_start:
        rows = [e for e in rows if str(e.detail.get("start") or "") >= obs.latest_run_start]
    if obs.job_id:
        rows = [e for e in rows if str(e.detail.get("job_id", "")).split(".")[0]
                .split("_")[0] == obs.job_id] or rows
    if not rows:
        return None
    last = max(rows, key=lambda e: str(e.detail.get("start") or ""))
    state = str(last.detail.get("state", "")).upper().split()[0] if last.detail.get("state") \
        else ""
    category = DECISIVE_END_STATES.get(state)
    return (category, last) if category else None


def set_aside_pre_existing(cands: list[Candidate], events: list[Event], obs: Observations,
                           names: NodeNames, cascade: Cascade
                           ) -> tuple[list[Candidate], list[Alternative]]:
    """Candidates the job went on working after are pre-existing conditions: context and node
    health, never the verdict. Long before the cascade any sign of work counts (with a dated
    stall the collectives themselves show the job working until the onset); close to it, only
    a completed training step does (peers print a few lines before they block)."""
    marks = progress_marks(events, obs, names)
    steps = [m for m in marks if m.completed]
    ended = decisive_end_state(events, obs)
    step_slack = max(STEP_SLACK, timedelta(seconds=obs.clock.skew_tolerance_s))
    kept: list[Candidate] = []
    aside: list[Alternative] = []
    for c in cands:
        if c.event.kind in SCHEDULER_KINDS or c.at is None or c.event.clock == Clock.none:
            kept.append(c)
            continue
        firm = c.event.clock != Clock.carried
        if cascade.distant(c.at):
            went_on = progress_after(c.event, c.at, marks, PROGRESS_SLACK)
            if went_on is None and not (cascade.exact and firm):
                kept.append(c)  # its rank or node may have stopped there: the job hung on it
                continue
        elif c.event.kind in CONTROLLER_STATES:
            kept.append(c)  # a controller's view of a node: its effect (eviction) comes later
            continue
        else:
            # the scheduler's own reason for the end (TIMEOUT...) outweighs an event the job
            # logged past; otherwise only a whole step finished after it clears it
            contested = ended is not None and ended[0] != c.category
            went_on = progress_after(c.event, c.at, marks if contested else steps, step_slack)
            if went_on is None:
                kept.append(c)
                continue
        aside.append(_pre_existing(c, cascade, went_on))
    return kept, _one_per_place(aside)


def _pre_existing(c: Candidate, cascade: Cascade, went_on: Progress | None) -> Alternative:
    assert c.at is not None
    shown = (f"{went_on.what} at {fmt_time(went_on.at)}" if went_on
             else f"its collectives progressed until {fmt_time(cascade.onset)}")
    before = ""
    if cascade.onset and cascade.onset > c.at:
        minutes = (cascade.onset - c.at).total_seconds() / 60
        span = f"{minutes / 60:.1f} h" if minutes >= 90 else f"{minutes:.0f} min"
        before = (f" came {span} before the failure began ({fmt_time(cascade.onset)}, dated by "
                  f"{cascade.how}) and")
    return Alternative(
        category=c.category, node=c.event.node, rank=c.event.rank, confidence=0.05,
        evidence=[c.event],
        why_not=(f"a pre-existing condition: {c.event.summary} at {fmt_time(c.at)}{before} the "
                 f"job went on working after it ({shown}), so it did not stop the job"))


def causal_doubts(best: Candidate, events: list[Event], obs: Observations,
                  cascade: Cascade) -> list[str]:
    """Why a verdict may not be the cause, however decisive its line: the scheduler ended the
    job for another reason, or nothing places the event next to the failure it would explain."""
    doubts = []
    ended = decisive_end_state(events, obs)
    if ended and ended[0] != best.category and best.event.kind not in SCHEDULER_KINDS:
        state = str(ended[1].detail.get("state", "")).upper()
        doubts.append(f"the scheduler ended the job as {state} ({ended[0]}), which "
                      f"{best.event.summary} does not explain")
    if cascade.distant(best.at) and best.event.clock != Clock.carried \
            and not _scheduler_agrees(best, ended, obs):
        doubts.append(f"{best.event.summary} at {fmt_time(best.at)} is long before the failure "
                      f"began ({fmt_time(cascade.onset)}, dated by {cascade.how}); nothing shows "
                      "it stopped the job")
    return doubts


def _scheduler_agrees(best: Candidate, ended: tuple[str, Event] | None,
                      obs: Observations) -> bool:
    """The scheduler ended the job for this very class (NODE_FAIL for a node lost, on one of
    the job's nodes): its own record ties the event to the job's end, however early it came."""
    if not ended or ended[0] != best.category:
        return False
    node = best.event.node
    return not (node and obs.job_nodes) or node in obs.job_nodes


def _one_per_place(alts: list[Alternative]) -> list[Alternative]:
    seen: set[tuple[str, str | None]] = set()
    out = []
    for a in alts:
        if (a.category, a.node) not in seen:
            seen.add((a.category, a.node))
            out.append(a)
    return out


def noticed_later(best: Candidate, onset: datetime) -> bool:
    """The scheduler's record of a lost node dated within its notice lag after the stall: the
    node may have left when the collectives stopped and been declared down later."""
    return best.category == "node_failure" and best.event.kind in SCHEDULER_KINDS \
        and best.at is not None and best.at - onset <= NODE_DOWN_NOTICE
