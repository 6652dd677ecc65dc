"""What a failure verdict's evidence cannot promise: a ceiling on its confidence, and why, when
it rests on evidence a decoy could give (one second-hand artifact nothing first-hand confirms,
an exception line without its traceback, a node state not tied to the job, words more than one
class prints). corroboration.py raises a verdict's confidence; this caps it."""

from __future__ import annotations

from goodput_agent.core.events import Event, EventKind

from .model import CONTESTED_CONFIDENCE, Candidate, weight
from .observations import Observations


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
