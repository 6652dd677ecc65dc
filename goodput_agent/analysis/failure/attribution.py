"""Where a failure is: the node of a link fault, the rank of a node-level event.

A link fault is where the link is, not where the error was printed; a kernel event (an Xid, an
OOM kill) names a node and a process, and the rank is the one that ran that process or on that
GPU, else the one whose own failure on that node came first.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from goodput_agent.core.events import Clock, Event, EventKind, Role

from .hang import HangFinding
from .model import Candidate
from .observations import NodeNames, Observations


def host_of_ip(obs: Observations) -> dict[str, str]:
    ips: dict[str, str] = {}
    for facts in obs.facts.values():
        for host, addrs in (facts.get("host_ips") or {}).items():
            for ip in addrs:
                ips.setdefault(ip, host)
    for alias, node in obs.host_aliases.items():
        if alias.replace(".", "").isdigit():
            ips.setdefault(alias, node)
    return ips


def locate_link_fault(best: Candidate, cands: list[Candidate], events: list[Event],
                       obs: Observations, names: NodeNames) -> Candidate:
    """A link fault is where the link is, not where the error was printed: a NIC/port fault in
    a node's kernel log wins; else the peer that the most reporters name."""
    # a fault of the node's own port: a kernel link-down, or a NIC error naming no peer
    links = [c for c in cands if c.category == "network_fault" and c.event.node and (
        (c.event.kind == EventKind.link_down and c.event.rank is None)
        or (c.event.kind == EventKind.ib_error and not c.event.detail.get("peer")))]
    if links:
        return min(links, key=lambda c: (c.at is None, c.at or best.at or datetime.max))
    ips = host_of_ip(obs)
    refused = str(best.event.detail.get("peer") or "").split("<")[0]
    if best.event.detail.get("peer_refused") and (peer_host := names.canon(ips.get(refused))):
        # nothing listened at the peer's address: the peer, named by the address's host
        moved = best.event.model_copy(update={"node": peer_host, "rank": None, "gpu": None})
        return best.model_copy(update={"event": moved, "note": (
            f"{refused} is {peer_host}; {best.event.node or 'the reporter'} only reported it")})
    votes: dict[str, set[str]] = {}
    for e in events:
        peer = str(e.detail.get("peer") or "").split("<")[0].strip("[]")
        if e.kind in (EventKind.ib_error, EventKind.nccl_error) and peer \
                and e.category == "network_fault":
            node = names.canon(ips.get(peer) or (peer if not peer[0].isdigit() else None))
            if node:
                votes.setdefault(node, set()).add(e.node or str(e.rank))
    if not votes:
        return best
    peer_node, reporters = max(votes.items(), key=lambda kv: len(kv[1]))
    lost = [c for c in cands if c.event.node == peer_node
            and c.category in ("node_failure", "gpu_hardware", "host_oom")]
    if lost:  # the peer went away (lost node, dead GPU): the IB errors are its symptoms
        return min(lost, key=lambda c: -c.strength)
    if len(reporters) < 2 or peer_node == best.event.node:
        return best
    note = (f"{len(reporters)} nodes' NCCL NET/IB errors name {peer_node} as the peer; "
            f"{best.event.node or 'the first reporter'} only reported it")
    moved = best.event.model_copy(update={"node": peer_node, "rank": None, "gpu": None})
    return best.model_copy(update={"event": moved, "note": note})


def locate_lost_node(best: Candidate, hang: HangFinding | None, obs: Observations,
                     names: NodeNames) -> Candidate:
    """The scheduler's NODE_FAIL names the job's nodes, not the one that left: that one is where
    the collectives stopped, the rank behind the others or the ranks that went silent while
    the others waited for them (every rank's output read, the world known: silence counts
    only then)."""
    if hang is None or hang.unaccounted or not hang.world_known or hang.from_dumps:
        return best
    node = names.canon(obs.rank_hosts.get(hang.rank) if hang.rank is not None else hang.node)
    listed = best.event.detail.get("nodes") or []
    if not node or (listed and node not in {names.canon(n) for n in listed}):
        return best
    note = (f"{node} is where the collectives stopped ({hang.reason}); the scheduler declares "
            "a node down minutes after it stops answering")
    moved = best.event.model_copy(update={"node": node, "rank": None, "gpu": None})
    return best.model_copy(update={"event": moved, "note": note})


def culprit_rank(primary: Event, events: list[Event], obs: Observations,
                  names: NodeNames) -> int | None:
    if primary.rank is not None:
        return primary.rank
    if primary.node is None:
        return None
    # 1. the rank that failed on that very GPU (its own error is the most direct evidence)
    if primary.gpu:
        on_gpu = [e for e in events if e.node == primary.node and e.gpu == primary.gpu
                  and e.rank is not None and e.role == Role.primary]
        if on_gpu:
            return on_gpu[0].rank
    # 2. the rank whose process the kernel named (OOM kill, Xid pid) — NCCL lines give pids
    pid = primary.detail.get("pid")
    if pid is not None:
        for facts in obs.facts.values():
            for key, rank in (facts.get("rank_pids") or {}).items():
                host, _, p = key.rpartition(":")
                if p == str(pid) and names.canon(host) == primary.node:
                    return int(rank)
        for e in events:
            if e.node == primary.node and e.rank is not None \
                    and str(e.detail.get("pid")) == str(pid):
                return e.rank
    # 3. the rank NCCL placed on that GPU of that node
    if primary.gpu:
        placed = sorted(r for r, g in obs.rank_gpus.items()
                        if g == primary.gpu and names.canon(obs.rank_hosts.get(r)) == primary.node)
        if len(placed) == 1:
            return placed[0]
    # a rank whose host no log names, with a weak CUDA error: the one GPU fault is its cause
    orphans = {e.rank for e in events if e.kind == EventKind.cuda_error and e.node is None
               and e.rank is not None and e.role == Role.primary}
    if len(orphans) == 1 and primary.category == "gpu_hardware":
        return orphans.pop()
    killed = _killed_rank(primary, events)
    if killed is not None:
        return killed
    # the first rank on that node to fail after it (a carried time is only a lower bound)
    after = [e for e in events if e.node == primary.node and e.rank is not None
             and e.role in (Role.primary, Role.symptom)
             and (primary.ts is None or e.ts is None or e.clock == Clock.carried
                  or e.ts >= primary.ts - timedelta(seconds=5))]
    own = [e for e in after if e.role == Role.primary]
    if own:  # the rank's own error comes before its peers' symptoms
        return sorted(own, key=Event.sort_key)[0].rank
    if after and primary.category == "gpu_hardware" and primary.kind != EventKind.link_down:
        # a dead GPU's own rank is usually the first on the node to lose its collectives;
        # a NIC or an OOM kill names no rank this way
        return sorted(after, key=Event.sort_key)[0].rank
    on_node = sorted(r for r, h in obs.rank_hosts.items() if h == primary.node)
    return on_node[0] if len(on_node) == 1 else None


def _killed_rank(primary: Event, events: list[Event]) -> int | None:
    """An OOM kill whose pid names no rank (a dataloader worker, an unmapped pid): the rank on
    that node whose process died of SIGKILL, the first if several did; its peers only stop."""
    if primary.category != "host_oom":
        return None
    killed = [e for e in events if e.node == primary.node and e.rank is not None
              and e.ts is not None and _sigkilled(e)]
    return min(killed, key=Event.sort_key).rank if killed else None


def _sigkilled(e: Event) -> bool:
    d = e.detail
    return d.get("signal") in (9, -9, "SIGKILL", "Killed") or d.get("signal_name") == "SIGKILL" \
        or d.get("exitcode") in (-9, 137)


EXIT_KINDS = (EventKind.exit_status, EventKind.elastic_failure)
TEARDOWN_SIGNALS = (15, -15, "SIGTERM")  # a rank the launcher stopped did not fail on its own


def own_exits(events: list[Event]) -> dict[int, datetime]:
    """When each rank's process ended on its own, as its launcher dated it (torchelastic's
    "failed (exitcode: 1) local_rank: 3 (pid: ...)" line or its failure summary)."""
    out: dict[int, datetime] = {}
    for e in events:
        if e.kind not in EXIT_KINDS or e.rank is None or e.ts is None \
                or e.clock in (Clock.carried, Clock.none):
            continue
        d = e.detail
        if d.get("signal") in TEARDOWN_SIGNALS or d.get("exitcode") in TEARDOWN_SIGNALS:
            continue
        if e.rank not in out or e.ts < out[e.rank]:
            out[e.rank] = e.ts
    return out


def date_by_exit(cands: list[Candidate], events: list[Event]) -> list[Candidate]:
    """A traceback has no time of its own (none, or the previous line's): the rank's process
    exits right after printing it, so its launcher's exit time places it on the one clock
    that orders the ranks' errors, instead of file order or a stale carried time."""
    exits = own_exits(events)
    out = []
    for c in cands:
        e = c.event
        exit_at = exits.get(e.rank) if e.rank is not None else None
        if exit_at and e.clock in (Clock.carried, Clock.none) \
                and (c.at is None or c.at <= exit_at):
            c = c.model_copy(update={"at": exit_at})
        out.append(c)
    return out
