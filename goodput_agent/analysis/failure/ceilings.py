"""What a failure verdict's evidence cannot promise: a ceiling on its confidence, and why, when
it rests on evidence a decoy could give (one second-hand artifact nothing first-hand confirms,
an exception line without its traceback, a node state not tied to the job, words more than one
class prints), or on the record of the component that acted or owns the state while the
kernel's own record is missing. corroboration.py raises a verdict's confidence; this caps it.

Who recorded the fault decides the ceiling:
- a bystander (a shell's `Killed`, a DataLoader's "killed by signal: Killed", exit -9): it saw a
  kill whose sender it does not know; at most UNCORROBORATED alone (issue 24);
- the owner (the memory monitor that did the kill, the kubelet or Ray; the GPU's state as its
  driver, NVML, lspci or the device plugin report it to user space): the fault is recorded by
  the component that acted or holds the state, and only the kernel's corroboration is missing;
  at most OWNERS_RECORD alone when its words state the class;
- anyone, in words more than one class prints: at most AMBIGUOUS."""

from __future__ import annotations

from goodput_agent.analysis.record_levels import AMBIGUOUS, ONE_ARTIFACT, OWNERS_RECORD
from goodput_agent.core.events import Event, EventKind, Role

from .model import CONTESTED_CONFIDENCE, Candidate, weight
from .observations import Observations


def thin_evidence(best: Candidate, cands: list[Candidate], obs: Observations
                  ) -> tuple[float | None, list[str]]:
    """A ceiling on the confidence, and why, when the verdict rests on evidence a decoy could
    give: one exception line without its traceback, or a node's state with nothing tying the
    node to the job."""
    e = best.event
    if (secondhand(e) or owners_record(e)) and not _corroborated(best, cands, obs):
        confirm = CONFIRMS.get(best.category, 'a second source')
        alone, twice = secondhand_ceilings(e)
        if _unambiguous_elsewhere(best, cands) or _seen_there_too(best, obs):
            # two tools or processes saw the same fault (lspci and the CUDA runtime, the device
            # plugin and the rank): the class is corroborated, the first-hand record still not
            return twice, [
                f"the verdict rests on what others recorded ({e.locator}: {e.summary}, and "
                f"another file agrees); the first-hand record is not in the bundle: {confirm}"]
        if alone >= OWNERS_RECORD:
            return alone, [
                f"the verdict rests on {_owner(e)}'s own record ({e.locator}: {e.summary}); "
                f"the kernel's record is not in the bundle: {confirm}"]
        return alone, [
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
        return AMBIGUOUS, [
            f"the verdict rests on {e.locator} ({e.summary}), words more than one class "
            f"prints, and no unambiguous line of {best.category} corroborates it"]
    return None, []


def secondhand_ceilings(e: Event) -> tuple[float, float]:
    """The ceilings of a bystander's or owner's record alone, and with another file agreeing.
    A bystander's stays at most UNCORROBORATED whatever its words (issue 24: real answers
    resting on one such artifact were wrong at 0.67-0.80); an owner's that states its class,
    OWNERS_RECORD; words several classes print stay below both."""
    if weight(e) <= AMBIGUOUS_WEIGHT:
        return AMBIGUOUS, SECONDHAND_TWICE
    if owners_record(e) and not secondhand(e) and weight(e) >= STATES_ITS_CLASS:
        return OWNERS_RECORD, OWNERS_TWICE
    return UNCORROBORATED, SECONDHAND_TWICE


UNCORROBORATED = ONE_ARTIFACT  # one artifact's word, its confirmation missing from the bundle
SECONDHAND_TWICE = 0.7  # two independent second-hand records agree; the first-hand one missing
# OWNERS_RECORD (record_levels.py): the owner's record alone, in words that state the class
OWNERS_TWICE = 0.9  # above the owner's record alone: another file agrees
STATES_ITS_CLASS = 0.8  # a parser's weight at or above which the words name one class
# AMBIGUOUS (record_levels.py): words several classes print ("unspecified launch failure", a
# bare SIGKILL, "No devices were found"), the class that usually prints them taken
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
    """A bystander's report: a kill whose sender is not shown (a shell's `Killed`, a DataLoader
    worker's SIGKILL, exit -9)."""
    return bool(e.detail.get("kernel_record_missing"))


def owners_record(e: Event) -> bool:
    """The record of the component that acted or holds the state, not the kernel's: a memory
    monitor's kill, a GPU lost or unhealthy as NVML, nvidia-smi, lspci or the device plugin
    read it, a CUDA error the GPU caused as its driver reports it."""
    d = e.detail
    return bool(d.get("user_space") or d.get("monitor")) or (
        e.kind == EventKind.cuda_error and e.category == "gpu_hardware")


def _owner(e: Event) -> str:
    d = e.detail
    if d.get("monitor"):
        return f"the memory monitor ({d['monitor']})"
    if d.get("user_space"):
        return str(d["user_space"])
    return "the CUDA driver"


def _unambiguous_elsewhere(best: Candidate, cands: list[Candidate]) -> bool:
    """Another file records the same class in words that are not ambiguous."""
    e = best.event
    return any(c.category == best.category and c.event.locator.path != e.locator.path
               and weight(c.event) > AMBIGUOUS_WEIGHT for c in cands)


def _seen_there_too(best: Candidate, obs: Observations) -> bool:
    """An artifact whose own words state the class (weight above AMBIGUOUS_WEIGHT), and another
    file's record of the same class on the same node, even in words several classes print
    (such a line is then no candidate of its own: the fault explains it): two observers of one
    place, the device plugin's `nvml: GPU is lost` and a rank's `CUDA error: unknown error` on
    that node, agree."""
    e = best.event
    return weight(e) > AMBIGUOUS_WEIGHT and e.node is not None and any(
        o.role == Role.primary and o.category == best.category and o.locator.path !=
        e.locator.path and obs.host_aliases.get(o.node or "", o.node) == e.node
        for o in obs.events)


def _corroborated(best: Candidate, cands: list[Candidate], obs: Observations) -> bool:
    """Another artifact records the same fault first-hand: a kernel-log line, or a scheduler's
    or kubelet's own record, of the same class."""
    kernel_logs = {a.path for a in obs.activity if a.format == "kernel_log"}
    e = best.event
    return any(c.category == best.category and c.event.locator.path != e.locator.path
               and not secondhand(c.event) and not owners_record(c.event)
               and (c.event.locator.path in kernel_logs or c.event.kind in _FIRST_HAND)
               for c in cands)


_FIRST_HAND = (EventKind.xid, EventKind.host_oom_kill, EventKind.cgroup_oom, EventKind.ecc_error,
               EventKind.gpu_reset_required, EventKind.node_fail)
