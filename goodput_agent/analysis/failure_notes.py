"""What a failure verdict says beside its answer: the clock assumptions, the missing sources,
what its evidence cannot promise, and each node's and rank's first notable event on one clock
(the picture of the cascade)."""

from __future__ import annotations

from datetime import datetime

from goodput_agent.analysis.failure_model import CONTESTED_CONFIDENCE, Candidate, FailureVerdict
from goodput_agent.analysis.observations import Observations
from goodput_agent.events import Clock, Event, EventKind, Role


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


def timeline(events: list[Event], limit: int = 40) -> list[Event]:
    """Each node's and rank's first notable event, on one clock: the picture of the cascade."""
    firsts: dict[tuple[str | None, int | None, str], Event] = {}
    for e in sorted(events, key=Event.sort_key):
        if e.role == Role.context and e.kind not in (EventKind.job_state, EventKind.node_fail):
            continue
        key = (e.node, e.rank, e.role.value)
        firsts.setdefault(key, e)
    ordered = sorted(firsts.values(), key=Event.sort_key)
    return ordered[:limit]


def thin_evidence(best: Candidate, cands: list[Candidate], obs: Observations
                  ) -> tuple[float | None, list[str]]:
    """A ceiling on the confidence, and why, when the verdict rests on evidence a decoy could
    give: one exception line without its traceback, or a node's state with nothing tying the
    node to the job."""
    e = best.event
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
    return None, []
