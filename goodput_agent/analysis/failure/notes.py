"""What a failure verdict says beside its answer: the clock assumptions, the missing sources,
what its evidence cannot promise, and each node's and rank's first notable event on one clock
(the picture of the cascade)."""

from __future__ import annotations

from datetime import datetime

from goodput_agent.analysis.abstention import unknown_confidence
from goodput_agent.core.events import Clock, Event, EventKind, Role

from .model import CONTESTED_CONFIDENCE, Candidate, FailureVerdict, weight
from .observations import BUNDLE_FACTS, Observations, unread_share
from .progress_series import HANG_CONFIDENCE, series_note, silent_end, stalled_before


def where(node: str | None, rank: int | None) -> str:
    parts = [f"node {node}" if node else None, f"rank {rank}" if rank is not None else None]
    return " / ".join(p for p in parts if p) or "an unidentified node"


def fmt_time(ts: datetime | None) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S UTC") if ts else "an unplaced time"


def note_missing_sources(v: FailureVerdict, obs: Observations) -> None:
    if v.node is None and v.rank is not None:
        v.unknowns.append(f"no file names the host of rank {v.rank} (no NCCL line, torchelastic "
                          "summary or nodes/<node>/ folder): its node is not known")
    if v.node and obs.kernel_log_nodes is not None and v.node not in obs.kernel_log_nodes:
        v.unknowns.append(f"no kernel log for node {v.node}: GPU Xids and OOM kills there "
                          "cannot be checked")
    if not obs.scheduler_kind:
        v.unknowns.append("no scheduler output (sacct/scontrol or kubectl): job and node "
                          "states are not known")
    if not obs.job_log_nodes and not any(e.rank is not None for e in obs.events):
        v.unknowns.append("no rank logs: which rank failed first cannot be seen")


def after_the_verdict(v: FailureVerdict, events: list[Event],
                      obs: Observations) -> FailureVerdict:
    """What the logs' own rhythm adds when nothing failed: a hang told by a long silent end,
    a slowdown or straggler in the iteration times; then a mostly-unread bundle said first."""
    stalled = stalled_before(v.primary.ts, obs) \
        if v.category == "time_limit" and v.primary and v.primary.ts else None
    if stalled:
        # the limit ended a job that had stopped making progress long before: it ended a
        # hang, and whether that hang is the failure to explain is contested
        v.confidence = min(v.confidence, CONTESTED_CONFIDENCE)
        v.unknowns.append(f"the time limit ended a job that had stopped making progress: "
                          f"{stalled}; it may have hung first (a py-spy dump would show where)")
    if v.category == "unknown" and not any(e.detail.get("never_started") for e in v.evidence):
        if silent := silent_end(events, obs):
            why, _ = silent
            v = v.model_copy(update={"category": "hang", "confidence": HANG_CONFIDENCE,
                                     "summary": f"No rank failed on its own: {why}"})
            v.unknowns.append("the hang is told by the log's silence alone: which rank or "
                              "call was stuck is not in the bundle")
        elif note := series_note(obs):
            v.summary += f"; {note}"
            v.unknowns.append(note)
        if v.category == "unknown":  # a file left unread may hold the answer
            v.confidence = unknown_confidence(v.confidence, unread_share(obs)[0])
    mostly_unread(v, obs)
    return v


def mostly_unread(v: FailureVerdict, obs: Observations) -> None:
    """A bundle whose files were mostly unread is said so first: whatever the verdict, it rests
    on the part that could be read, and an `unknown` from it is no judgement of the rest."""
    unread, total = unread_share(obs)
    if not total or unread * 2 <= total:
        return
    note = (f"Most of the bundle could not be read ({unread} of {total} files, e.g. "
            f"{(obs.facts[BUNDLE_FACTS]['bundle_unread'] or ['?'])[0]}): ")
    v.summary = note + v.summary[:1].lower() + v.summary[1:]
    v.unknowns.insert(0, note.rstrip(": ") + "; the verdict weighs only the rest")
    if v.category != "unknown":
        v.confidence = min(v.confidence, UNCORROBORATED)


def clock_notes(obs: Observations, events: list[Event]) -> list[str]:
    counts: dict[str, int] = {}
    for e in events:
        counts[e.clock.value] = counts.get(e.clock.value, 0) + 1
    notes = [f"times without a zone are taken as {obs.clock.tz_name}"
             + (" (incident.yaml timezone)" if obs.incident.timezone else " (no timezone given)"),
             f"times without a year are taken as {obs.clock.year}",
             f"events within {obs.clock.skew_tolerance_s:g} s are treated as simultaneous "
             "(clock skew between nodes)"]
    if counts.get(Clock.carried.value):
        notes.append(f"{counts[Clock.carried.value]} lines without a time took the previous "
                     "timestamped line's time")
    if counts.get(Clock.none.value):
        notes.append(f"{counts[Clock.none.value]} events have no usable time (e.g. dmesg "
                     "uptime without a boot anchor); they are ordered last")
    return notes


TIMELINE_LIMIT = 40  # entries a report keeps; it counts the rest (timeline_left_out)


def timeline(events: list[Event], limit: int = TIMELINE_LIMIT) -> list[Event]:
    """Each node's and rank's first notable event, on one clock: the picture of the cascade
    (every one: the verdict keeps the first `limit` and counts the rest)."""
    firsts: dict[tuple[str | None, int | None, str], Event] = {}
    for e in sorted(events, key=Event.sort_key):
        if e.role == Role.context and e.kind not in (EventKind.job_state, EventKind.node_fail):
            continue
        key = (e.node, e.rank, e.role.value)
        firsts.setdefault(key, e)
    ordered = sorted(firsts.values(), key=Event.sort_key)
    return ordered if limit <= 0 else ordered[:limit]


def set_timeline(verdict: FailureVerdict, events: list[Event]) -> FailureVerdict:
    """The verdict's timeline: the first TIMELINE_LIMIT entries, and how many more there were."""
    every = timeline(events, 0)
    verdict.timeline = every[:TIMELINE_LIMIT]
    verdict.timeline_left_out = len(every) - len(verdict.timeline)
    return verdict


def on_culprit_chain(e: Event, verdict: FailureVerdict) -> bool:
    """Whether an event that can start a failure is the culprit's own: one the verdict cites,
    or one on the verdict's node (and rank, when both name one). Others started no failure
    the verdict explains: another node's fault, a pre-existing condition, the job's end; a
    peer's error the verdict cites (a socket to the culprit failed) is evidence, not a cause."""
    if e.node is not None and verdict.node is not None and e.node != verdict.node:
        return False
    if any(e is x or e == x for x in verdict.evidence):
        return True
    if verdict.node is None or e.node != verdict.node:
        return False
    return e.rank is None or verdict.rank is None or e.rank == verdict.rank


def thin_evidence(best: Candidate, cands: list[Candidate], obs: Observations
                  ) -> tuple[float | None, list[str]]:
    """A ceiling on the confidence, and why, when the verdict rests on evidence a decoy could
    give: one exception line without its traceback, or a node's state with nothing tying the
    node to the job."""
    e = best.event
    if secondhand(e) and not _corroborated(best, cands, obs):
        confirm = CONFIRMS.get(best.category, 'a second source')
        if _unambiguous_elsewhere(best, cands):
            # two tools or processes saw the same fault (lspci and the CUDA runtime, the device
            # plugin and the rank): the class is corroborated, the first-hand record still not
            return SECONDHAND_TWICE, [
                f"the verdict rests on what others recorded ({e.locator}: {e.summary}, and "
                f"another file agrees); the first-hand record is not in the bundle: {confirm}"]
        # the weakest of such words (a bare SIGKILL, whoever sent it; "No devices were found",
        # which an unloaded driver says too) stay below half
        return (UNCORROBORATED if weight(e) > AMBIGUOUS_WEIGHT else CONTESTED_CONFIDENCE), [
            f"the verdict rests on one artifact ({e.locator}: {e.summary}) and what would "
            f"confirm it is not in the bundle: {confirm}"]
    if e.detail.get("without_traceback"):
        return CONTESTED_CONFIDENCE, [
            f"the verdict rests on one exception line without its traceback ({e.locator}): "
            "where it was raised is not in the bundle"]
    if e.detail.get("node_record") and not (obs.job_nodes or obs.rank_hosts):
        others = sorted({c.event.node for c in cands if c.event.detail.get("node_record")
                         and c.event.node and c.event.node != e.node})
        also = f"; {len(others)} other nodes are down too ({', '.join(others[:5])})" \
            if others else ""
        return CONTESTED_CONFIDENCE, [
            f"which nodes the job ran on is not in the bundle: {e.node}'s state alone does not "
            f"tie it to the job{also}"]
    if weight(e) <= AMBIGUOUS_WEIGHT and not _unambiguous_elsewhere(best, cands):
        # words that more than one class prints ("unspecified launch failure": a kernel bug or
        # a GPU fault) decide nothing alone, whoever printed them
        return CONTESTED_CONFIDENCE, [
            f"the verdict rests on {e.locator} ({e.summary}), words more than one class "
            f"prints, and no unambiguous line of {best.category} corroborates it"]
    return None, []


UNCORROBORATED = 0.6  # one artifact's word, its confirmation missing from the bundle
SECONDHAND_TWICE = 0.7  # two independent second-hand records agree; the first-hand one missing
AMBIGUOUS_WEIGHT = 0.5  # a line whose own parser says several classes print it (weight <= this)
# what would confirm a verdict that others announced (a shell's Killed, nvidia-smi, a monitor)
CONFIRMS = {
    "host_oom": "the node's kernel log (journalctl -k / dmesg: 'Out of memory: Killed process' "
                "or a memory-cgroup OOM line) or the job's memory accounting (sacct MaxRSS, the "
                "container's memory.events)",
    "gpu_hardware": "the node's kernel log (an NVRM Xid line for that GPU) or the GPU's own "
                    "health record (nvidia-smi -q, dcgmi diag)",
}


def secondhand(e: Event) -> bool:
    """Evidence that reports a fault someone else recorded: a kill whose sender is not shown,
    a GPU lost as user space sees it, a memory monitor's kill, a CUDA error the GPU caused."""
    d = e.detail
    return bool(d.get("kernel_record_missing") or d.get("user_space") or d.get("monitor")) or (
        e.kind == EventKind.cuda_error and e.category == "gpu_hardware")


def _unambiguous_elsewhere(best: Candidate, cands: list[Candidate]) -> bool:
    """Another file records the same class in words that are not ambiguous."""
    e = best.event
    return any(c.category == best.category and c.event.locator.path != e.locator.path
               and weight(c.event) > AMBIGUOUS_WEIGHT for c in cands)


def _corroborated(best: Candidate, cands: list[Candidate], obs: Observations) -> bool:
    """Another artifact records the same fault first-hand: a kernel-log line, or a scheduler's
    or kubelet's own record, of the same class."""
    kernel_logs = {a.path for a in obs.activity if a.format == "kernel_log"}
    e = best.event
    return any(c.category == best.category and c.event.locator.path != e.locator.path
               and not secondhand(c.event)
               and (c.event.locator.path in kernel_logs or c.event.kind in _FIRST_HAND)
               for c in cands)


_FIRST_HAND = (EventKind.xid, EventKind.host_oom_kill, EventKind.cgroup_oom, EventKind.ecc_error,
               EventKind.gpu_reset_required, EventKind.node_fail)
