"""Why did this distributed job fail: the first failure on one clock, not the loudest symptom.

Reads Observations, returns a FailureVerdict. The ordering rule: among events that can start a
failure (Role.primary), the earliest wins; events within the skew tolerance of each other are
ranked by how decisive their kind is. Symptoms (NCCL timeouts, connection resets, SIGTERMs)
never win; they become the alternatives the verdict explains away. With no primary event at
all, the ranks' collective progress is aligned to find a hang.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from goodput_agent.analysis.abstention import NOTHING_TO_EXPLAIN
from goodput_agent.core.events import Clock, Event, EventKind, Role

from .attribution import (
    culprit_rank,
    date_by_exit,
    host_of_ip,
    locate_link_fault,
    locate_lost_node,
)
from .causal import (
    Cascade,
    causal_doubts,
    find_cascade,
    noticed_later,
    set_aside_pre_existing,
    stall_starts,
)
from .corroboration import CORROBORATION_STEP, contest_hang, failure_confidence
from .hang import HangFinding, find_hang
from .hang_verdict import hang_confidence, hang_or_unknown, symptom_alternative
from .model import (  # noqa: F401 - the models are failure's API
    BASE_CONFIDENCE,
    CONTESTED_CONFIDENCE,
    FAILURE_CATEGORIES,
    GENERIC_STATE_CONFIDENCE,
    JOB_LEVEL,
    ON_NODE,
    SCHEDULER_KINDS,
    STRENGTH,
    SYMPTOM_KINDS,
    Alternative,
    Candidate,
    FailureVerdict,
    weight,
)
from .notes import after_the_verdict, clock_notes, note_missing_sources, where
from .notes import fmt_time as _fmt
from .observations import NodeNames, Observations, in_window, job_window
from .stop_order import ended_by_the_stop
from .timeline import set_timeline


def normalize(obs: Observations) -> tuple[list[Event], NodeNames]:
    """Give every event its node (via the rank-to-host map) under one spelling of the name; a
    node named by its address (NCCL RAS) is the host the bundle's own records give it."""
    names = names_for(obs)
    ips = host_of_ip(obs)
    out = []
    for e in obs.events:
        node = e.node or (obs.rank_hosts.get(e.rank) if e.rank is not None else None) \
            or obs.host_aliases.get(_stem(e.locator.path))
        node = ips.get(node, node) if node else node
        gpu = e.gpu
        if gpu is None and e.rank is not None and e.kind != EventKind.job_state:
            gpu = obs.rank_gpus.get(e.rank)
        node = names.canon(node)
        if node != e.node or gpu != e.gpu:
            e = e.model_copy(update={"node": node, "gpu": gpu})
        out.append(e)
    return out, names


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.split(".", 1)[0]


def last_sign_of_life(obs: Observations, names: NodeNames) -> dict[str, datetime]:
    seen: dict[str, datetime] = {}
    for a in obs.activity:
        node = names.canon(a.node or (obs.rank_hosts.get(a.rank) if a.rank is not None else None)
                           or obs.host_aliases.get(_stem(a.path)))
        if node and a.last and (node not in seen or a.last > seen[node]):
            seen[node] = a.last
    return seen


def _candidates(events: list[Event], obs: Observations, names: NodeNames,
                notes: list[str]) -> list[Candidate]:
    window = job_window(obs)
    alive = last_sign_of_life(obs, names)
    job_nodes = {names.canon(n) for n in obs.job_nodes}
    out: list[Candidate] = []
    outside: list[Event] = []
    for e in events:
        if e.role != Role.primary or e.category not in FAILURE_CATEGORIES:
            continue
        if not in_window(e.ts, window) or _other_job(e, obs):
            outside.append(e)
            continue
        if job_nodes and e.node and e.node not in job_nodes and e.rank is None \
                and e.kind != EventKind.job_state:
            outside.append(e)
            continue
        at, note = e.ts, None
        if e.category == "node_failure" and e.node in alive and (at is None or alive[e.node] < at):
            at = alive[e.node]
            note = f"{e.node}'s logs stop at {_fmt(at)}"
        strength = STRENGTH[e.category] * weight(e)
        out.append(Candidate(event=e, at=at, strength=strength, note=note))
    # A weak CUDA error ("unspecified launch failure") on a GPU that has a hardware fault is
    # that fault seen from the process: the hardware event tells the story.
    hardware = [(c.event.node, c.event.gpu) for c in out if c.category == "gpu_hardware"
                and (c.event.kind != EventKind.cuda_error or weight(c.event) >= 1)]  # not itself

    def explained(e: Event) -> bool:
        if e.kind != EventKind.cuda_error or weight(e) >= 1 or not hardware:
            return False
        if e.node is None:  # a rank whose host is unknown: one GPU fault can only be that one
            return len({h for h in hardware if h[0]} or set(hardware)) == 1  # smi names none
        return any(n == e.node and (g is None or e.gpu is None or g == e.gpu)
                   for n, g in hardware)

    out = [c for c in out if not explained(c.event)]
    # A scheduler state that only says "FAILED, exit 1" is the fallback, never a rival of a log
    # that says why (nor of a hang found in the ranks' collective progress).
    specific = [c for c in out if not _generic_state(c.event)]
    if specific:
        out = specific
    if outside:
        first = outside[0]
        notes.append(f"ignored {len(outside)} failure event(s) outside the job's window or nodes "
                     f"(e.g. {first.summary} on {first.node or '?'} at {_fmt(first.ts)})")
    return out


STALL_SLACK = timedelta(minutes=2)
# how far a carried time may trail the true one: a traceback printed a few minutes after the
# last timestamped line is plausible, a quarter of an hour is not
CARRIED_SLACK = timedelta(minutes=5)  # a collective may start a little before its peer dies


def _before_the_stall(best: Candidate, cands: list[Candidate], events: list[Event],
                      unknowns: list[str]) -> Candidate:
    """A failure placed after the collectives had already stalled cannot have caused the
    stall; an unplaced candidate may have, and is preferred."""
    starts = [at for _, at in stall_starts(events)]
    onset = min(starts) if starts else None
    if onset is None or best.at is None or best.at <= onset + STALL_SLACK \
            or noticed_later(best, onset):
        return best
    untimed = [c for c in cands if c.at is None and c.category != best.category]
    unknowns.append(f"the collectives had stalled since {_fmt(onset)}, before "
                    f"{best.event.summary} at {_fmt(best.at)}: that failure may be a consequence")
    early = [c for c in cands if c.at is not None and c.at <= onset + STALL_SLACK]
    if early:  # placed (if only by a carried time) before the stall: a cause, not an effect
        return max(early, key=lambda c: (c.strength, -c.at.timestamp()))  # type: ignore
    if untimed:
        return max(untimed, key=lambda c: c.strength)
    return best.model_copy(update={"strength": best.strength * 0.8})


def _job_succeeded(events: list[Event], obs: Observations) -> bool:
    """The job's own (latest run's) scheduler row says COMPLETED 0:0."""
    rows = [e for e in events if e.kind == EventKind.job_state and not _other_job(e, obs)
            and "." not in str(e.detail.get("job_id", ""))]
    if not rows:
        return False
    last = max(rows, key=lambda e: str(e.detail.get("start") or ""))
    state = str(last.detail.get("state", "")).upper()
    return state.startswith("COMPLETED") and str(last.detail.get("exit_code", "0:0")) in (
        "0:0", "0", "None")


def _other_job(e: Event, obs: Observations) -> bool:
    """An event of another job: another Slurm job id in the same output or log file, an
    earlier run of a requeued job, or a Kubernetes event about a pod that is not the job's."""
    pod = e.detail.get("object") if e.detail.get("object_kind") == "Pod" else None
    if pod and obs.job_pods and pod not in obs.job_pods:
        return True
    start = e.detail.get("start")
    if e.kind in SCHEDULER_KINDS and isinstance(start, str) and obs.latest_run_start \
            and start < obs.latest_run_start:
        return True  # superseded by a requeue: the last run is the one that failed
    if not obs.job_id:
        return False
    jid = e.detail.get("job_id") or obs.facts.get(e.locator.path, {}).get("slurm_job_id")
    return bool(jid) and str(jid).split(".")[0].split("_")[0] != obs.job_id


def _generic_state(e: Event) -> bool:
    return e.kind in (EventKind.job_state, EventKind.step_state, EventKind.exit_status) \
        and e.category == "application_error"


def _pick_first(cands: list[Candidate], tolerance: timedelta) -> Candidate:
    best = _pick_placed(cands, tolerance)
    # A carried time (a line that inherited the previous line's time) is only a lower bound:
    # such an event before the first firmly placed one may in truth come after it, so it wins
    # only if it is the more decisive of the two.
    firm = [c for c in cands if c.at is not None and c.event.clock != Clock.carried]
    if best.event.clock == Clock.carried and firm:
        first_firm = _pick_placed(firm, tolerance)
        close = first_firm.at and best.at and first_firm.at - best.at <= CARRIED_SLACK
        if first_firm.strength > best.strength and close:
            best = first_firm
    return best


def _pick_placed(cands: list[Candidate], tolerance: timedelta) -> Candidate:
    timed = sorted((c for c in cands if c.at is not None), key=lambda c: c.at)  # type: ignore
    if not timed:  # as among co-first events: of equal strength, the one that locates it
        return max(cands, key=lambda c: (c.strength, c.event.node is not None,
                                         c.event.rank is not None))
    t0 = timed[0].at
    assert t0 is not None
    co_first = [c for c in timed if c.at - t0 <= tolerance]  # type: ignore[operator]
    # equal strength: the event that locates the failure (node, rank) tells more
    best = max(co_first, key=lambda c: (c.strength, c.event.node is not None,
                                        c.event.rank is not None, -c.at.timestamp()))  # type: ignore
    # An unplaced event cannot be ordered; when it is more decisive than the first placed one
    # (raw dmesg without a boot anchor, a traceback without timestamps) it tells the story
    # better, and the confidence says the order is unknown.
    untimed = [c for c in cands if c.at is None and c.strength > best.strength
               and (c.event.node is not None or best.event.node is None)]
    if untimed:
        return max(untimed, key=lambda c: c.strength)
    # the same failure told twice, once with its time and once with its place (slurmstepd's
    # cancel line and srun's "Node failure on X"): the one that says where locates it
    where = [c for c in cands if c.at is None and c.category == best.category
             and best.event.node is None and c.event.node is not None]
    return max(where, key=lambda c: c.strength) if where else best


def names_for(obs: Observations) -> NodeNames:
    return NodeNames(obs.job_nodes + obs.launcher_nodes + sorted(set(obs.rank_hosts.values())),
                     obs.host_aliases)


def _support(primary: Event, events: list[Event], rank: int | None) -> list[Event]:
    """Other events that tell the same story: the culprit rank's own error, the scheduler state."""
    out = [primary]
    for e in events:
        if e is primary or len(out) >= 5:
            continue
        same_place = (e.node == primary.node and primary.node is not None) or \
                     (rank is not None and e.rank == rank)
        agrees = e.category == primary.category
        if (same_place and e.role != Role.context) or (agrees and e.role == Role.primary):
            out.append(e)
    return out


def diagnose(obs: Observations) -> FailureVerdict:
    events, names = normalize(obs)
    notes = clock_notes(obs, events)
    unknowns: list[str] = []
    cands = _candidates(events, obs, names, notes)
    cascade = find_cascade(events, obs)
    # set aside first: a carried time with a later line of its own file is the tighter bound
    cands, pre_existing = set_aside_pre_existing(cands, events, obs, names, cascade)
    cands = date_by_exit(cands, events)
    tolerance = timedelta(seconds=obs.clock.skew_tolerance_s)
    if _job_succeeded(events, obs):
        seen = [c.event for c in cands]
        unknowns.append("the scheduler says the job COMPLETED with exit 0:0; errors in its logs "
                        f"({len(seen)} that could start a failure) did not end it")
        # the scheduler's first-hand end state: nothing failed (abstention.NOTHING_TO_EXPLAIN)
        verdict = FailureVerdict(category="unknown", confidence=NOTHING_TO_EXPLAIN,
                                 evidence=seen[:3],
                                 summary="The job completed successfully: there is no failure "
                                         "to explain")
        verdict.clock_notes, verdict.unknowns = notes, unknowns
        return set_timeline(verdict, events)
    specific = [c for c in cands if not _generic_state(c.event)]
    hang = None if specific else find_hang(events, obs)
    if specific or (cands and hang is None):
        best = ended_by_the_stop(_pick_first(cands, tolerance), cands, unknowns)
        best = _before_the_stall(best, cands, events, unknowns)
        stuck = _stuck_elsewhere(best, cascade, events, obs, names)
        # the stuck rank's node may show why it stopped (its own fault, however late it printed)
        there = [c for c in cands if stuck and c.event.node == stuck[1]]
        if stuck and not there:
            verdict = hang_or_unknown(events, obs, unknowns, stuck[0], names)
            verdict.alternatives.append(_after_the_stall(best, cascade))
        elif there:
            late = best
            best = _pick_first(there, tolerance)
            verdict = _from_candidate(best, cands, events, obs, unknowns, names, cascade)
            verdict.alternatives = [_after_the_stall(late, cascade)] + [
                a for a in verdict.alternatives if (a.category, a.node) != (late.category,
                                                                          late.event.node)]
        else:
            verdict = _from_candidate(best, cands, events, obs, unknowns, names, cascade)
    else:
        verdict = hang_or_unknown(events, obs, unknowns, hang, names)
    if verdict.category == "hang":
        contest_hang(verdict, events, obs)
    verdict.alternatives += [a for a in pre_existing
                             if (a.category, a.node) != (verdict.category, verdict.node)]
    verdict.clock_notes = notes
    set_timeline(verdict, events)
    note_missing_sources(verdict, obs)
    verdict.unknowns = unknowns + verdict.unknowns
    return after_the_verdict(verdict, events, obs)


def _stuck_elsewhere(best: Candidate, cascade: Cascade, events: list[Event],
                     obs: Observations, names: NodeNames
                     ) -> tuple[HangFinding, str] | None:
    """A failure placed after the collectives had stalled cannot have started the stall;
    when the ranks' progress singles out a stuck rank on another node, that rank is the story."""
    if not cascade.exact or cascade.onset is None or best.at is None \
            or best.event.clock in (Clock.carried, Clock.none) \
            or best.at <= cascade.onset + STALL_SLACK or noticed_later(best, cascade.onset):
        return None
    hang = find_hang(events, obs)
    if hang is None or hang.strength < 0.6:
        return None
    node = names.canon(obs.rank_hosts.get(hang.rank) if hang.rank is not None else hang.node)
    return (hang, node) if node and node != best.event.node else None


def _after_the_stall(best: Candidate, cascade: Cascade) -> Alternative:
    e = best.event
    return Alternative(
        category=best.category, node=e.node, rank=e.rank, confidence=0.1, evidence=[e],
        why_not=(f"{e.summary} on {where(e.node, e.rank)} at {_fmt(best.at)} came after the "
                 f"collectives had stalled ({_fmt(cascade.onset)}, dated by {cascade.how}): it "
                 "cannot have started the stall"))


def _from_candidate(best: Candidate, cands: list[Candidate], events: list[Event],
                    obs: Observations, unknowns: list[str], names: NodeNames,
                    cascade: Cascade) -> FailureVerdict:
    if best.category == "network_fault":
        best = locate_link_fault(best, cands, events, obs, names)
    placed_by_silence = None
    if best.category == "node_failure" and best.event.node is None \
            and (hang := find_hang(events, obs)) is not None:
        best = locate_lost_node(best, hang, obs, names)
        # the class is the scheduler's record; the place rests on silence, which it corroborates
        placed_by_silence = hang_confidence(hang) + CORROBORATION_STEP if best.event.node \
            else None
    e = best.event
    if best.category in JOB_LEVEL and not e.detail.get("pod"):
        # the scheduler ended the whole job: no node or rank is at fault (a preempted
        # Kubernetes pod, though, was on one node)
        e = e.model_copy(update={"node": None, "rank": None, "gpu": None})
    rank = culprit_rank(e, events, obs, names)
    support = _support(e, events, rank)
    conf = failure_confidence(best, cands, events, obs, cascade, unknowns)
    if placed_by_silence is not None:
        conf = min(conf, round(placed_by_silence, 2))
    doubts = causal_doubts(best, events, obs, cascade)
    if doubts:  # a wrong answer said with confidence costs more trust than a hedged one
        conf = min(conf, CONTESTED_CONFIDENCE)
        unknowns.extend(doubts)
    if _generic_state(e):
        conf = min(conf, GENERIC_STATE_CONFIDENCE)
        unknowns.append("only the scheduler's exit status says the application failed; no log "
                        "line shows why (add the rank logs)")
    gpu = e.gpu or next((s.gpu for s in support if s.gpu and s.rank == rank
                         and rank is not None), None)
    if gpu is None and rank is not None:
        gpu = obs.rank_gpus.get(rank)
    if rank is None and gpu and e.node:  # the rank that ran on that GPU of that node
        on_gpu = sorted(r for r, g in obs.rank_gpus.items()
                        if g == gpu and names.canon(obs.rank_hosts.get(r)) == e.node)
        rank = on_gpu[0] if len(on_gpu) == 1 else None
    at = f" at {_fmt(best.at)}" if best.at else ""
    summary = f"{e.summary} ({where(e.node, rank)}{at})"
    if best.note:
        summary += f"; {best.note}"
    alts: list[Alternative] = []
    seen = {best.category}
    for c in sorted(cands, key=lambda c: (c.at is None, c.at or datetime.max.astimezone())):
        if c.category in seen:
            continue
        seen.add(c.category)
        later = best.at and c.at and c.at > best.at
        why = (f"{c.event.summary} on {where(c.event.node, c.event.rank)} happened later "
               f"({_fmt(c.at)}), after the first failure" if later
               else f"{c.event.summary} on {where(c.event.node, c.event.rank)} is less decisive "
                    f"than the verdict's evidence and not clearly earlier")
        alts.append(Alternative(category=c.category, node=c.event.node, rank=c.event.rank,
                                confidence=round(min(0.3, conf / 3), 2), why_not=why,
                                evidence=[c.event]))
    sym = symptom_alternative(events, best.at, e.node)
    if sym and "network_fault" not in seen:
        alts.append(sym)
    return FailureVerdict(category=best.category, summary=summary, node=e.node, rank=rank,
                          gpu=gpu, confidence=conf, evidence=support, alternatives=alts,
                          primary=e)
