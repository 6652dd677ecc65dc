"""Hangs without an error of their own: align every rank's collective progress.

When one rank stops issuing collectives (stuck in a data step, a deadlock, a barrier only it
entered), the others wait in the next collective and their watchdogs fire. The stuck rank is the
one whose progress is behind, or the one that printed no watchdog line at all. find_hang asks
this of a bundle (the ranks it heard from, the world's size); hang_verdict.py turns what it finds
into the verdict.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from goodput_agent.core.events import Event, EventKind

from .observations import Observations
from .stack_dumps import OddProcessOut, odd_process_out


class RankProgress(BaseModel):
    rank: int
    position: int | None = None  # highest collective sequence number the rank reached
    timed_out: bool = False
    events: list[Event] = Field(default_factory=list)


class HangFinding(BaseModel):
    rank: int | None
    node: str | None = None  # when the silent ranks are one node's, not one rank
    reason: str
    evidence: list[Event]
    strength: float  # 0..1, how decisive the alignment is
    ranks_behind: list[int] = Field(default_factory=list)
    timed_out_ranks: int = 0
    # ranks whose output is not in the bundle at all: their silence is no evidence
    unaccounted: list[int] = Field(default_factory=list)
    world_known: bool = True
    from_dumps: bool = False  # told by the processes' stacks, not by the collectives' progress


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _position(e: Event) -> int | None:
    d = e.detail
    candidates = [_int(d.get(k)) for k in ("seq_num", "last_enqueued", "last_scheduled_seq",
                                             "last_started_seq", "last_completed",
                                             "last_completed_seq")]
    known = [c for c in candidates if c is not None]
    return max(known) if known else None


def _waiting_on_work(e: Event) -> bool:
    """PyTorch 2.1-2.2 wording: "detected by watchdog at work: N, last completed ... : N-1"."""
    work, done = _int(e.detail.get("work")), _int(e.detail.get("last_completed"))
    return work is not None and done is not None and work > done


def progress_by_rank(events: list[Event]) -> dict[int, RankProgress]:
    out: dict[int, RankProgress] = {}
    for e in events:
        if e.rank is None or e.kind not in (EventKind.nccl_watchdog_timeout,
                                            EventKind.collective_progress):
            continue
        if e.detail.get("heartbeat"):
            # "heartbeat monitor timed out / watchdog got stuck": the rank's own process is
            # stuck, which is what a stuck rank looks like, not a rank waiting for a peer
            continue
        p = out.setdefault(e.rank, RankProgress(rank=e.rank))
        p.events.append(e)
        if e.kind == EventKind.nccl_watchdog_timeout or _waiting_on_work(e):
            p.timed_out = True
        pos = _position(e)
        if pos is not None:
            p.position = pos if p.position is None else max(p.position, pos)
    return out


def find_stuck_rank(events: list[Event], all_ranks: set[int],
                    rank_hosts: dict[int, str] | None = None, heard: set[int] | None = None,
                    world_known: bool = True) -> HangFinding | None:
    """`heard`: the ranks whose output the bundle holds (any line). A rank that printed no
    watchdog line is evidence only when its output is there and the world size is known;
    otherwise the ranks unaccounted for are named and no rank is singled out by silence."""
    progress = progress_by_rank(events)
    if not any(p.timed_out for p in progress.values()):
        return _stuck_watchdogs(events)
    timed_out = sum(p.timed_out for p in progress.values())
    unheard = sorted(all_ranks - (heard if heard is not None else all_ranks) - set(progress))
    positioned = {r: p.position for r, p in progress.items() if p.position is not None}
    if len(positioned) >= 2 and min(positioned.values()) < max(positioned.values()):
        low = min(positioned.values())
        behind = sorted(r for r, pos in positioned.items() if pos == low)
        ahead = max(positioned.values())
        rank = behind[0]
        strength = 0.9 if len(behind) == 1 else 0.6
        return HangFinding(
            rank=rank, ranks_behind=behind, strength=strength, timed_out_ranks=timed_out,
            evidence=progress[rank].events[:2] + _first_of_others(progress, rank),
            reason=(f"rank {rank}'s last collective is #{low} while the other ranks reached "
                    f"#{ahead}: it stopped issuing collectives and the others waited for it"))
    if unheard or not world_known:
        return _unaccounted(progress, timed_out, unheard, world_known)
    silent = sorted(all_ranks - set(progress))
    if len(silent) == 1 and timed_out >= 1:
        rank = silent[0]
        return HangFinding(
            rank=rank, ranks_behind=silent, strength=0.8, timed_out_ranks=timed_out,
            evidence=_first_of_others(progress, rank),
            reason=(f"{timed_out} ranks timed out waiting in a collective; rank {rank} printed "
                    "no watchdog line: it never entered the collective the others waited in"))
    hosts = {(rank_hosts or {}).get(r) for r in silent}
    if len(silent) > 1 and len(hosts) == 1 and None not in hosts and timed_out >= 1:
        node = next(iter(hosts))
        return HangFinding(
            rank=None, node=node, ranks_behind=silent, strength=0.6, timed_out_ranks=timed_out,
            evidence=_first_of_others(progress, None),
            reason=(f"{timed_out} ranks timed out waiting in a collective; all {len(silent)} "
                    f"ranks that printed no watchdog line ran on {node}: the node stopped "
                    "taking part (its logs, GPU and NIC are where to look)"))
    waiting = sorted(r for r, p in progress.items() if p.timed_out)
    if silent and len(waiting) <= max(1, len(all_ranks) // 10):
        # the reverse picture: only a few ranks wait, the others never entered that collective
        # (a barrier or all-reduce inside `if rank == 0`, a rank-local extra collective)
        rank = waiting[0]
        return HangFinding(
            rank=rank, ranks_behind=waiting, strength=0.7 if len(waiting) == 1 else 0.5,
            timed_out_ranks=timed_out, evidence=progress[rank].events[:2],
            reason=(f"only rank{'s' if len(waiting) > 1 else ''} "
                    f"{', '.join(map(str, waiting[:8]))} waited in a collective that the other "
                    f"{len(silent)} ranks never entered: a collective issued by "
                    f"{'these ranks' if len(waiting) > 1 else 'that rank'} alone (e.g. a barrier "
                    "inside `if rank == 0`)"))
    return HangFinding(
        rank=None, strength=0.3, timed_out_ranks=timed_out, ranks_behind=silent,
        evidence=_first_of_others(progress, None),
        reason=(f"{timed_out} ranks timed out in collectives with no error of their own; the "
                "progress of the ranks does not single one out"))


def _unaccounted(progress: dict[int, RankProgress], timed_out: int, unheard: list[int],
                 world_known: bool) -> HangFinding:
    waiting = sorted(r for r, p in progress.items() if p.timed_out)
    missing = f"ranks {span(unheard)}" if unheard else "the other ranks"
    world = "" if world_known else " (the world size is not in the bundle either)"
    return HangFinding(
        rank=None, strength=0.0, timed_out_ranks=timed_out, ranks_behind=[],
        unaccounted=unheard, world_known=world_known,
        evidence=_first_of_others(progress, None),
        reason=(f"rank{'s' if len(waiting) != 1 else ''} {span(waiting)} timed out waiting in "
                f"a collective, but the bundle holds no output of {missing}{world}: which rank "
                "stopped first is not known, and it may have failed on its own rather than "
                "hung"))


def span(ranks: list[int]) -> str:
    """Ranks as runs: [0, 1, 2, 5] -> "0-2, 5"."""
    out: list[str] = []
    for r in sorted(ranks):
        if out and "-" not in out[-1] and int(out[-1]) == r - 1:
            out[-1] = f"{out[-1]}-{r}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == r - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ", ".join(out[:12]) + (", ..." if len(out) > 12 else "")


def _stuck_watchdogs(events: list[Event]) -> HangFinding | None:
    """No rank timed out waiting, but ranks' watchdogs themselves stopped (PyTorch's heartbeat
    monitor: "watchdog got stuck ... without making progress"): those processes hung inside a
    CUDA or NCCL call. A hang, though which rank stopped first is not told."""
    stuck = [e for e in events if e.kind == EventKind.nccl_watchdog_timeout
             and e.detail.get("heartbeat")]
    if not stuck:
        return _ras_mismatch(events) or _waiting_in_collective(events)
    ranks = sorted({e.rank for e in stuck if e.rank is not None})
    nodes = {e.node for e in stuck}
    return HangFinding(
        rank=None, node=next(iter(nodes)) if len(nodes) == 1 else None, strength=0.0,
        ranks_behind=ranks, evidence=sorted(stuck, key=Event.sort_key)[:2],
        reason=(f"the watchdog of {len(ranks) or 'a'} rank{'s' if len(ranks) != 1 else ''} "
                "got stuck without progress (a NCCL or CUDA call that never returned); no "
                "collective timed out, so which rank stopped first is not told"))


def _first_of_others(progress: dict[int, RankProgress], skip: int | None) -> list[Event]:
    firsts = [p.events[0] for r, p in sorted(progress.items()) if r != skip and p.timed_out]
    return firsts[:2]


def silent_ranks_own_errors(finding: HangFinding, events: list[Event],
                            rank_hosts: dict[int, str] | None = None) -> list[Event]:
    """The errors the ranks that never entered the stalled collective raised themselves (an
    NCCL call of theirs failing: system, internal or CUDA error) no later than the first
    watchdog line of a waiting rank: why those ranks stopped, rather than a hang. An error with
    no time of its own is kept too (whether it came first cannot be checked, and the verdict
    says so): a rank that raised its own error did not sit in the collective."""
    silent = set(finding.ranks_behind)
    if finding.node is not None:
        silent |= {r for r, h in (rank_hosts or {}).items() if h == finding.node}
    if finding.rank is not None:
        silent.add(finding.rank)
    waits = [e.ts for e in events if e.kind == EventKind.nccl_watchdog_timeout and e.ts
             and e.rank not in silent]
    if not silent:
        return []
    first_wait = min(waits) if waits else None
    own = [e for e in events if e.kind == EventKind.nccl_error and e.rank in silent
           and e.category and (e.ts is None or (first_wait is not None and e.ts <= first_wait))]
    return sorted(own, key=Event.sort_key)


def _ras_mismatch(events: list[Event]) -> HangFinding | None:
    """NCCL RAS's MISMATCH: the ranks it lists launched a different number of collectives than
    the rest. Listed ranks behind the rest stopped issuing them; listed ranks ahead leave the
    ranks behind unnamed (RAS names only the smaller group)."""
    ras = [e for e in events if e.detail.get("ras_mismatch")]
    if not ras:
        return None
    d = ras[0].detail
    listed = sorted({e.rank for e in ras if e.rank is not None})
    if d["operation"] < d["others_at"]:
        return HangFinding(
            rank=listed[0] if len(listed) == 1 else None, ranks_behind=listed,
            strength=0.8 if len(listed) == 1 else 0.5, evidence=ras[:2],
            reason=(f"NCCL RAS: rank{'s' if len(listed) > 1 else ''} {span(listed)} launched up "
                    f"to operation {d['operation']} while {d['others']} other ranks reached "
                    f"{d['others_at']}: they stopped issuing collectives"))
    return HangFinding(
        rank=None, strength=0.3, evidence=ras[:2],
        reason=(f"NCCL RAS: {d['others']} ranks are stuck at operation {d['others_at']} while "
                f"rank{'s' if len(listed) > 1 else ''} {span(listed)} went on to "
                f"{d['operation']}: the ranks behind are the larger group, which RAS does not "
                "list (the listed ranks are ahead, not the culprits)"))


def _waiting_in_collective(events: list[Event]) -> HangFinding | None:
    """A py-spy dump with a thread inside a collective: that process waits; which rank
    stopped first is not in it."""
    waits = [e for e in events if e.detail.get("stuck_in_collective")]
    if not waits:
        return None
    return HangFinding(
        rank=None, strength=0.0, evidence=waits[:2],
        reason=(f"a stack dump shows a thread waiting in {waits[0].detail['stuck_in_collective']}"
                ": the collective did not complete; which rank stopped first is not told (a "
                "dump of every rank, or a Flight Recorder dump, would)"))


def find_hang(events: list[Event], obs: Observations) -> HangFinding | None:
    heard = heard_ranks(events, obs)
    all_ranks = set(heard)
    world = max((int(f.get("world_size", 0) or 0) for f in obs.facts.values()), default=0)
    if world:
        all_ranks |= set(range(world))
    if all_ranks:  # ranks are 0..N-1: a rank that printed nothing at all is still a rank
        all_ranks |= set(range(max(all_ranks) + 1))
    # the world is known from its size, or from NCCL's rank map when it covers ranks 0..N-1
    mapped = set(obs.rank_hosts)
    known = bool(world) or bool(mapped) and mapped == set(range(max(mapped) + 1)) and \
        max(mapped) >= max(heard, default=0)
    found = find_stuck_rank(events, all_ranks, obs.rank_hosts, heard, world_known=known)
    if found is None or (found.rank is None and found.node is None):
        # the collectives' progress names no one: the processes' stacks may
        odd = odd_process_out(events, obs)
        if odd is not None:
            return _from_dumps(odd)
    return found


def _from_dumps(odd: OddProcessOut) -> HangFinding:
    p = odd.odd
    return HangFinding(
        rank=p.rank, node=p.node if p.rank is None else None, strength=odd.strength,
        ranks_behind=[p.rank] if p.rank is not None else [], reason=odd.reason,
        evidence=[p.event, *(w.event for w in odd.waiting[:1])], from_dumps=True)


def heard_ranks(events: list[Event], obs: Observations) -> set[int]:
    """The ranks whose output the bundle holds: a line of theirs (an event, an NCCL line that
    names them, a rank prefix) or a log file of their own."""
    heard = {e.rank for e in events if e.rank is not None} | set(obs.rank_hosts)
    heard |= {a.rank for a in obs.activity if a.rank is not None}
    for facts in obs.facts.values():
        heard |= {int(r) for r in facts.get("ranks_seen") or []}
    return heard
