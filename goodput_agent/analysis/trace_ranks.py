"""Across the ranks of one run: how long each rank waits inside collectives for the others, and
the straggler they wait for.

Steps are aligned by number. The i-th collective kernel of a step on every rank is the same
collective; it ends at about the same time everywhere, so its duration on the rank that arrived
last (the shortest one) is the transfer, and every other rank's extra duration is waiting. A DDP
all-reduce barrier evens out per-rank step totals, so a straggler does not show in step times:
it shows as the rank that waits least while the others wait much.
"""

from __future__ import annotations

import statistics
from collections import Counter

from pydantic import BaseModel, Field

from goodput_agent.analysis.trace_steps import RankTimeline, steps_of
from goodput_agent.parsing.trace_model import COMM, Trace

MIN_OTHERS_WAIT_SHARE = 0.10  # the others must wait at least this share of the step
MIN_CONSISTENCY = 0.6  # ...with the same rank waiting least in this share of the steps


class RankWaits(BaseModel):
    path: str
    rank: int | None
    host: str | None
    waits: dict[int, float] = Field(default_factory=dict)  # step -> µs waiting in collectives
    transfer: dict[int, float] = Field(default_factory=dict)  # step -> µs of fastest durations
    step_us: dict[int, float] = Field(default_factory=dict)


class Straggler(BaseModel):
    rank: int | None
    path: str
    host: str | None
    consistency: float  # share of aligned steps where this rank waited least
    own_wait_share: float  # its median wait / step
    others_wait_share: float  # the other ranks' median wait / step
    steps: int


class RunWaits(BaseModel):
    ranks: list[RankWaits] = Field(default_factory=list)
    aligned_steps: list[int] = Field(default_factory=list)
    straggler: Straggler | None = None

    def waits_of(self, path: str) -> dict[int, float]:
        return next((r.waits for r in self.ranks if r.path == path), {})


def _collectives(tl: RankTimeline, lo: float, hi: float) -> list[tuple[str, float]]:
    return [(op.name, op.dur) for op in tl.ops_in(lo, hi) if op.kind == COMM and op.ts >= lo]


def collective_waits(traces: list[Trace]) -> RunWaits:
    out = RunWaits()
    if len(traces) < 2:
        return out
    per_rank = []
    for t in traces:
        tl = RankTimeline(t)
        per_rank.append({s.number: (s.dur, _collectives(tl, s.ts, s.end)) for s in steps_of(t)})
    common = sorted(set.intersection(*(set(p) for p in per_rank)))
    out.aligned_steps = common
    out.ranks = [RankWaits(path=t.meta.path, rank=t.meta.rank, host=t.meta.host)
                 for t in traces]
    for s in common:
        colls = [p[s][1] for p in per_rank]
        n = min(len(c) for c in colls)
        for rw, p in zip(out.ranks, per_rank, strict=True):
            rw.waits[s], rw.transfer[s], rw.step_us[s] = 0.0, 0.0, p[s][0]
        for k in range(n):
            durs = [c[k][1] for c in colls]
            fastest = min(durs)
            for rw, d in zip(out.ranks, durs, strict=True):
                rw.waits[s] += d - fastest
                rw.transfer[s] += fastest
    out.straggler = _straggler(out)
    return out


def _straggler(run: RunWaits) -> Straggler | None:
    if not run.aligned_steps:
        return None
    least = Counter()
    for s in run.aligned_steps:
        waits = [r.waits[s] for r in run.ranks]
        if max(waits) <= 0:
            continue
        least[min(range(len(waits)), key=waits.__getitem__)] += 1
    if not least:
        return None
    idx, count = least.most_common(1)[0]
    consistency = count / len(run.aligned_steps)
    share = [statistics.median(r.waits[s] / r.step_us[s] for s in run.aligned_steps
                               if r.step_us[s] > 0) for r in run.ranks]
    others = statistics.median(x for i, x in enumerate(share) if i != idx)
    if consistency < MIN_CONSISTENCY or others < MIN_OTHERS_WAIT_SHARE or share[idx] > others / 3:
        return None
    r = run.ranks[idx]
    return Straggler(rank=r.rank, path=r.path, host=r.host, consistency=consistency,
                     own_wait_share=share[idx], others_wait_share=others,
                     steps=len(run.aligned_steps))
