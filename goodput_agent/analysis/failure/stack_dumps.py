"""py-spy dumps of a job's processes, read together: the one process the others wait for.

When a rank stops issuing collectives (stuck in its data loader, a lock, a write), every other
rank blocks in the next collective, or in a CUDA synchronize waiting for it. A dump of every
process then shows all but one waiting for the collective and one somewhere else: that one
never reached the collective the others wait in (ByteRobust's rule, as analysis/live/stacks.py
applies it to a running job). The parser gives each dumped process's pid and main thread
(parsing/tool_reports.py); NCCL's `Init COMPLETE` lines give each rank's host:pid.

What is not concluded: fewer than MIN_PROCESSES dumps, no process outside the waiting ones,
or more than one (no single culprit), or a process outside whose place is itself a wait on
the GPU. A dump is one moment: it cannot tell a stuck process from a slow one, so the ranks
that were not dumped, or a save in progress, lower how decisive the picture is.
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel, Field

from goodput_agent.analysis.live.stacks import state_of
from goodput_agent.core.events import Event
from goodput_agent.parsing.pyspy_dump import Frame

from .observations import Observations, short_name

MIN_PROCESSES = 3  # with two, which of them is "the others" is not told
# places where a process waits for a collective to complete: inside it, or in a CUDA call
# (synchronize, .item(), .cpu()) that waits for the stream the collective's kernel holds
WAITING = frozenset({"collective", "cuda"})
EVERY_RANK = 0.8  # every rank of the world dumped and placed
UNCOVERED = 0.2  # some ranks were not dumped (or the world is not known): one may be the culprit
SAVING = 0.3  # the odd one is writing a checkpoint: a slow save looks the same in one moment


class DumpedProcess(BaseModel):
    pid: int | None
    rank: int | None = None
    node: str | None = None
    state: str
    where: str
    event: Event  # its first dump: the file and the line of its innermost frame
    samples: int = 1
    agreeing: int = 1  # samples whose state is the place's


class OddProcessOut(BaseModel):
    """All dumped processes but one wait for a collective; `odd` is elsewhere."""

    odd: DumpedProcess
    waiting: list[DumpedProcess] = Field(default_factory=list)
    undumped: list[int] = Field(default_factory=list)  # ranks of the world with no dump
    world: int | None = None
    strength: float
    reason: str


def _frames(e: Event) -> list[Frame]:
    return [Frame(str(f[0]), str(f[1]), f[2] if isinstance(f[2], int) else None)
            for f in e.detail.get("frames") or [] if isinstance(f, list) and len(f) == 3]


def _rank_pids(obs: Observations) -> dict[int, list[tuple[str, int]]]:
    """pid -> [(host, rank)] from every job log's NCCL init lines."""
    out: dict[int, list[tuple[str, int]]] = {}
    for facts in obs.facts.values():
        for key, rank in (facts.get("rank_pids") or {}).items():
            host, _, pid = str(key).rpartition(":")
            if pid.isdigit():
                out.setdefault(int(pid), []).append((host, int(rank)))
    return out


def _names_in(path: str, hosts: set[str]) -> list[str]:
    """The known hosts whose short name the dump's path spells out as a whole word, one name
    per host (trn-a2 and trn-a2.cluster are one)."""
    found = {short_name(h): h for h in sorted(hosts, key=len)
             if re.search(rf"(?<![A-Za-z0-9]){re.escape(short_name(h))}(?![A-Za-z0-9])",
                          path.lower())}
    return sorted(found.values())


def _place(e: Event, by_pid: dict[int, list[tuple[str, int]]], hosts: set[str],
           obs: Observations) -> tuple[int | None, str | None]:
    """The rank and node of a dumped process: its pid among NCCL's host:pid pairs, the host
    the dump's path names deciding between pids that repeat on several hosts."""
    pid = e.detail.get("pid")
    named = _names_in(e.locator.path, hosts)
    pairs = by_pid.get(pid, []) if isinstance(pid, int) else []
    if len({r for _, r in pairs}) > 1:
        pairs = [(h, r) for h, r in pairs if short_name(h) in {short_name(n) for n in named}]
    ranks = {r for _, r in pairs}
    if len(ranks) == 1:
        rank = ranks.pop()
        return rank, obs.rank_hosts.get(rank) or pairs[0][0]
    return None, named[0] if len(named) == 1 else None


def dumped_processes(events: list[Event], obs: Observations) -> list[DumpedProcess]:
    """Each dumped process once (several samples of one process are one), placed where most of
    its samples are."""
    by_pid = _rank_pids(obs)
    hosts = set(obs.rank_hosts.values()) | set(obs.job_nodes) | \
        {h for pairs in by_pid.values() for h, _ in pairs}
    groups: dict[tuple, list[tuple[Event, str, str]]] = {}
    placed: dict[tuple, tuple[int | None, str | None]] = {}
    for e in events:
        frames = _frames(e) if e.detail.get("stack_dump") else []
        if not frames:
            continue
        rank, node = _place(e, by_pid, hosts, obs)
        # an unplaced pid is one process per file: the same pid may run on several hosts
        key = ("rank", rank) if rank is not None else ("pid", e.detail.get("pid"), node,
                                                       e.locator.path)
        placed[key] = (rank, node)
        groups.setdefault(key, []).append((e, state_of(frames), frames[0].label()))
    out = []
    for key, samples in groups.items():
        (state, where), n = Counter((s, w) for _, s, w in samples).most_common(1)[0]
        first = next(e for e, s, w in samples if (s, w) == (state, where))
        rank, node = placed[key]
        out.append(DumpedProcess(pid=first.detail.get("pid"), rank=rank, node=node,
                                 state=state, where=where, event=first,
                                 samples=len(samples), agreeing=n))
    return sorted(out, key=lambda p: (p.rank is None, p.rank or 0, p.event.locator.path))


def odd_process_out(events: list[Event], obs: Observations) -> OddProcessOut | None:
    procs = dumped_processes(events, obs)
    if len(procs) < MIN_PROCESSES:
        return None
    waiting = [p for p in procs if p.state in WAITING]
    outside = [p for p in procs if p.state not in WAITING]
    if len(outside) != 1:
        return None
    odd = outside[0]
    mapped = {p.rank for p in procs if p.rank is not None}
    sizes = [int(f.get("world_size") or 0) for f in obs.facts.values()]
    world = max([*sizes, max([*obs.rank_hosts, *mapped], default=-1) + 1]) or None
    undumped = sorted(set(range(world)) - mapped) if world else []
    strength = EVERY_RANK if world and not undumped and len(mapped) == len(procs) \
        else UNCOVERED
    if odd.state == "checkpoint":
        strength -= SAVING
    if odd.agreeing * 2 <= odd.samples:
        strength -= SAVING  # its own samples do not agree on where it is
    reason = _reason(odd, waiting)
    if undumped or not world:
        reason += (f"; rank{'s' if len(undumped) > 1 else ''} {_ranks(undumped)} "
                   f"{'were' if len(undumped) > 1 else 'was'} not dumped" if undumped else
                   "; which ranks were dumped is not known (no NCCL init line maps every "
                   "dump's pid to its rank)") + ": a rank not seen may be the culprit"
    return OddProcessOut(odd=odd, waiting=waiting, undumped=undumped, world=world,
                         strength=round(max(0.0, strength), 2), reason=reason)


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks[:8])) + (f" and {len(ranks) - 8} more" if len(ranks) > 8
                                             else "")


def _who(p: DumpedProcess) -> str:
    pid = f"process {p.pid if p.pid is not None else '?'}"
    if p.rank is None:
        return pid + (f" on {p.node}" if p.node else "") + " (no NCCL init line names its rank)"
    return f"{pid} (rank {p.rank}" + (f" on {p.node})" if p.node else ")")


def _reason(odd: DumpedProcess, waiting: list[DumpedProcess]) -> str:
    places = Counter((p.state, p.where) for p in waiting).most_common()
    shown = "; ".join(f"{n} {_HOW[state]} at {where}" for (state, where), n in places[:3])
    more = f"; {len(places) - 3} other places" if len(places) > 3 else ""
    doing = "writing a checkpoint" if odd.state == "checkpoint" else odd.state.replace("_", " ")
    return (f"py-spy dumps of {len(waiting) + 1} processes: {len(waiting)} wait for the "
            f"collective ({shown}{more}); {_who(odd)} is elsewhere, {doing} at {odd.where} "
            f"({odd.event.locator}): it never reached the collective the others wait in")


_HOW = {"collective": "in it", "cuda": "in a CUDA call"}
