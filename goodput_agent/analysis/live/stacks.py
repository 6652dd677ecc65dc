"""Who hangs (or who is slow): group the stack dumps of every rank of a running job.

Each rank's training thread is reduced to where it is: a `state` (in a collective, loading
data, in a CUDA call, in I/O, sleeping or waiting on a lock, computing) and the innermost
frame. Ranks at the same place form a group; the largest is the dominant group. When the
dominant group waits in a collective, the ranks outside it are the culprit: they never
reached the collective the others wait in (ByteRobust's rule). With several samples per
rank, each rank is placed by where most of its samples were (a slow rank spends its samples
in its own work while the others wait for it).

What cannot be concluded is said: ranks whose dump failed (permission, process gone, py-spy
absent) are listed with the reason; when every dumped rank is in the same place, or no group
dominates, the culprit is unknown; when the ranks that failed to dump could be the culprit
(everyone dumped waits), the verdict says so at a lower confidence.
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel, Field

from goodput_agent.parsing.pyspy_dump import Frame, ProcessDump, ThreadStack

# (state, names looked for among a frame's words: its function and file split at anything but
# letters, digits and "_"), in priority order: the most specific state among the innermost
# frames wins (a data loader waiting on its queue is loading data, not merely waiting)
_STATES: tuple[tuple[str, frozenset[str]], ...] = (
    # a checkpoint being written: a pause the job makes on purpose, not a culprit (not
    # torch/utils/checkpoint.py: activation checkpointing is recompute, not a save)
    ("checkpoint", frozenset({"save_checkpoint", "_save_checkpoint", "save_state",
                              "serialization", "_save", "async_save", "save_state_dict",
                              "save_pretrained", "save_model"})),
    ("collective", frozenset({
        "all_reduce", "allreduce", "all_gather", "all_gather_into_tensor", "allgather",
        "reduce_scatter", "reduce_scatter_tensor", "broadcast", "barrier", "monitored_barrier",
        "all_to_all", "all_to_all_single", "alltoall", "send", "recv", "isend", "irecv",
        "distributed_c10d", "c10d_logger", "allreduce_coalesced", "Allreduce", "Barrier",
        "Bcast", "Allgather"})),
    ("data_loading", frozenset({
        "dataloader", "_next_data", "__next__", "_try_get_data", "_get_data", "fetch",
        "collate", "default_collate", "_worker_loop", "get_batch", "load_batch", "next_batch",
        "datasets", "dataset", "__getitem__"})),
    ("cuda", frozenset({"synchronize", "cuda", "item", "cudnn", "_cuda_synchronize",
                        "record_stream", "cpu"})),
    ("io", frozenset({"read", "readinto", "readline", "write", "open", "flush", "fsync",
                      "recv_into", "socket", "ssl"})),
    ("waiting", frozenset({"sleep", "wait", "acquire", "select", "poll", "join", "lock",
                           "_wait_for_tstate_lock", "get"})),
)
STATE_FRAMES = 8  # how many innermost frames decide a rank's state
_WORD = re.compile(r"[A-Za-z0-9_]+")
DOMINANT_SHARE = 0.5  # the largest group must hold more than this share of the dumped ranks
MAX_CULPRIT_SHARE = 0.25  # more ranks outside than this: no single culprit


def state_of(frames: list[Frame]) -> str:
    words = {w for f in frames[:STATE_FRAMES] for w in _WORD.findall(f"{f.name} {f.file}")}
    for state, names in _STATES:
        if words & names:
            return state
    return "compute"


class RankPlace(BaseModel):
    rank: int
    node: str | None = None
    state: str  # checkpoint | collective | data_loading | cuda | io | waiting | compute
    where: str  # the innermost frame
    stack: list[str] = Field(default_factory=list)  # innermost first, a few frames
    samples: int = 1
    agreeing: int = 1  # samples at this place
    active: bool | None = None  # py-spy saw the thread running (not idle in a wait)

    @property
    def key(self) -> tuple[str, str]:
        return self.state, self.where


def busy(v: StackVerdict) -> bool:
    """The dominant group is running its own work (an evaluation, a long step): not a hang."""
    d = v.dominant
    return (d is not None and d.state == "compute" and bool(d.active)
            and len(v.dominant_ranks) * 2 > v.dumped)


class StackVerdict(BaseModel):
    """`checkpointing`: some rank is writing a checkpoint (the others may wait for it in a
    barrier): the job paused on purpose, and no rank is the culprit of a hang."""

    culprits: list[RankPlace] = Field(default_factory=list)
    dominant: RankPlace | None = None  # one member, for its place
    dominant_ranks: list[int] = Field(default_factory=list)
    groups: list[dict] = Field(default_factory=list)  # state, where, ranks (count), sample
    failed: dict[int, str] = Field(default_factory=dict)  # rank -> why its dump failed
    dumped: int = 0
    confidence: float = 0.0
    reason: str = ""
    checkpointing: list[int] = Field(default_factory=list)

    @property
    def culprit_nodes(self) -> list[str]:
        return sorted({c.node for c in self.culprits if c.node})


Where = tuple[str, str, list[str], bool | None]  # state, innermost frame, stack, active


def _where(thread: ThreadStack, seen: dict[tuple, Where]) -> Where:
    """A thread's place; identical stacks (most ranks of a hung job) are classified once."""
    frames = thread.frames
    key = (thread.active, *((f.name, f.file, f.line) for f in frames[:STATE_FRAMES]))
    found = seen.get(key)
    if found is None:
        found = seen[key] = (state_of(frames), frames[0].label(),
                             [f.label() for f in frames[:6]], thread.active)
    return found


def place(rank: int, node: str | None, samples: list[ProcessDump],
          seen: dict[tuple, Where] | None = None) -> RankPlace | None:
    """Where a rank is, by the place most of its dumps agree on; None when none worked."""
    seen = {} if seen is None else seen
    places = []
    for d in samples:
        thread = d.main() if d.error is None else None
        if thread is not None and thread.frames:
            places.append(_where(thread, seen))
    if not places:
        return None
    if len(places) == 1:
        state, where, stack, active = places[0]
        return RankPlace(rank=rank, node=node, state=state, where=where, stack=stack,
                         active=active)
    (state, where), n = Counter((s, w) for s, w, _, _ in places).most_common(1)[0]
    if n * 2 <= len(places):  # no majority of the exact frame: the state's majority
        state, n = Counter(s for s, _, _, _ in places).most_common(1)[0]
        where = next(w for s, w, _, _ in places if s == state)
    chosen = [p for p in places if p[0] == state and (p[1] == where or n * 2 <= len(places))]
    stack = chosen[0][2] if chosen else places[0][2]
    active = [p[3] for p in places if p[0] == state and p[3] is not None]
    return RankPlace(rank=rank, node=node, state=state, where=where, stack=stack,
                     samples=len(places), agreeing=n,
                     active=(sum(active) * 2 > len(active)) if active else None)


def group_ranks(dumps: dict[int, list[ProcessDump]], rank_nodes: dict[int, str],
                world_size: int | None = None) -> StackVerdict:
    """`dumps`: rank -> its dumps (one or several samples); a dump with `error` set failed."""
    v = StackVerdict()
    places: list[RankPlace] = []
    seen: dict[tuple, Where] = {}
    for rank, samples in sorted(dumps.items()):
        p = place(rank, rank_nodes.get(rank), samples, seen)
        if p is None:
            errors = [d.error for d in samples if d.error] or ["no thread in the dump"]
            v.failed[rank] = errors[0]
        else:
            places.append(p)
    expected = set(range(world_size)) if world_size else set()
    for rank in sorted(expected - set(dumps)):
        v.failed[rank] = "no process found for this rank"
    v.dumped = len(places)
    v.checkpointing = [p.rank for p in places if p.state == "checkpoint"]
    if not places:
        v.reason = "no rank's stack could be dumped"
        return v
    by_key: dict[tuple[str, str], list[RankPlace]] = {}
    for p in places:
        by_key.setdefault(p.key, []).append(p)
    ordered = sorted(by_key.values(), key=lambda g: (-len(g), g[0].rank))
    v.groups = [{"state": g[0].state, "where": g[0].where, "ranks": len(g),
                 "first_ranks": [p.rank for p in g[:8]]} for g in ordered]
    top = ordered[0]
    v.dominant, v.dominant_ranks = top[0], [p.rank for p in top]
    outside = [p for g in ordered[1:] for p in g]
    return _judge(v, top, outside, len(places))


def _judge(v: StackVerdict, top: list[RankPlace], outside: list[RankPlace],
           dumped: int) -> StackVerdict:
    if v.checkpointing:
        v.reason = (f"{_ranks(v.checkpointing)} writing a checkpoint "
                    f"({next(p.where for p in top + outside if p.state == 'checkpoint')}); "
                    f"{len(top)} ranks at {top[0].where}: a save, not a hang")
        return v
    share = len(top) / dumped
    waits = top[0].state == "collective"
    if share <= DOMINANT_SHARE:
        v.reason = (f"no dominant group: the largest holds {len(top)} of {dumped} ranks "
                    f"({top[0].state} at {top[0].where})")
        return v
    if not outside:
        if v.failed and waits:
            v.reason = (f"every dumped rank waits in {top[0].where}; the ranks whose dump failed "
                        f"({_ranks(list(v.failed))}) may be the culprit")
            v.confidence = 0.3
        else:
            v.reason = f"every dumped rank is at the same place ({top[0].state}: {top[0].where})"
        return v
    if len(outside) > max(1, MAX_CULPRIT_SHARE * dumped):
        v.reason = (f"{len(outside)} of {dumped} ranks are outside the dominant group: too many "
                    "for one culprit")
        return v
    v.culprits = outside
    conf = 0.85 if waits and all(p.state != "collective" for p in outside) else 0.6
    if not waits:
        conf = 0.45  # the majority is not waiting for anyone: a weaker sign
    if v.failed:
        conf -= 0.15  # a rank we could not see might be the real culprit
    agreement = min(p.agreeing / p.samples for p in outside)
    v.confidence = round(max(0.2, conf * (0.7 + 0.3 * agreement)), 2)
    where = "; ".join(f"rank {p.rank} in {p.state} at {p.where}" for p in outside[:4])
    v.reason = (f"{len(top)} of {dumped} ranks wait in {top[0].state} at {top[0].where}; "
                f"outside that group: {where}")
    return v


def _ranks(ranks: list[int]) -> str:
    shown = ", ".join(str(r) for r in sorted(ranks)[:8])
    return shown + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")
