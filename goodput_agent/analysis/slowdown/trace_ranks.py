"""Across the ranks of one run: how long each rank waits inside collectives for the others, and
the straggler they wait for.

Steps are aligned by number when every rank has ProfilerStep spans with numbers in common,
else by order (the i-th step of each rank). Within an aligned step, the k-th collective of a
family (`ncclDevKernel_AllReduce`, ...) on every rank is the same collective. It ends at about
the same time everywhere, so its duration on the rank that arrived last (the shortest one)
approximates the transfer, and every other rank's extra duration is waiting: wait_r = dur_r -
min(dur). The wait is the start of the kernel (a collective waits for its peers, then moves
data), so the part of [ts, ts + wait_r) not hidden under the rank's compute is the exposed
wait that step_breakdown carves out of the exposed communication.

A DDP all-reduce barrier evens out per-rank step totals, so a backward-pass straggler does not
show in step times: it shows as the rank that waits least (and so has the most time of its own)
while the others wait a meaningful share of the step. Such a step votes for that rank; the rank
is the run's straggler when it gets the vote in most aligned steps; a step where a second rank
also waits little votes for nobody (several late ranks are a group, which the verdict weighs by
what they spend their time on). Uniformly slower
communication is the other case: every rank's transfer (the fastest duration) is long and the
waits are small or spread over ranks, so no rank stands out.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from pydantic import BaseModel, Field

from goodput_agent.analysis.intervals import Intervals, clip, subtract, total, union
from goodput_agent.parsing.kineto.model import COMM, COMPUTE, GpuOp, Step, Trace

from .kernel_families import family_of
from .trace_steps import RankTimeline

MIN_OTHERS_WAIT_SHARE = 0.10  # a step votes only when the other ranks wait this share of it
MIN_CONSISTENCY = 0.6  # a straggler gets the vote in at least this share of aligned steps
MAX_OWN_WAIT_RATIO = 1 / 3  # ...and waits at most this fraction of what the others wait
RUNNER_UP_WAIT_RATIO = 0.5  # ...while every other rank waits at least this fraction of theirs


class RankWaits(BaseModel):
    """One rank's collective waits per step (keys: that rank's own step numbers)."""

    path: str
    rank: int | None
    host: str | None
    waits: dict[int, float] = Field(default_factory=dict)  # µs waiting in collectives
    exposed: dict[int, float] = Field(default_factory=dict)  # ...not hidden under compute
    transfer: dict[int, float] = Field(default_factory=dict)  # µs of fastest durations
    step_us: dict[int, float] = Field(default_factory=dict)
    collectives: dict[int, int] = Field(default_factory=dict)  # collectives matched per step

    def wait_share(self) -> float:
        shares = [self.exposed[s] / d for s, d in self.step_us.items() if d > 0]
        return statistics.median(shares) if shares else 0.0

    def transfer_share(self) -> float:
        shares = [self.transfer[s] / d for s, d in self.step_us.items() if d > 0]
        return statistics.median(shares) if shares else 0.0


class Straggler(BaseModel):
    rank: int | None
    path: str
    host: str | None
    consistency: float  # share of aligned steps that voted for this rank
    own_wait_share: float  # its median exposed wait / step
    others_wait_share: float  # the other ranks' median of the same
    busy_us: float  # its median time of its own per step (step minus exposed wait)
    others_busy_us: float  # the other ranks' median of the same
    steps: int  # aligned steps


class RunWaits(BaseModel):
    ranks: list[RankWaits] = Field(default_factory=list)  # in the order of the traces given
    aligned_by: str | None = None  # "number" | "order" | None (fewer than two ranks)
    aligned_steps: int = 0
    straggler: Straggler | None = None
    # median over ranks of the transfer share: high with no straggler = slow communication
    transfer_share: float = 0.0
    wait_share: float = 0.0  # median over ranks of the exposed-wait share

    def waits_of(self, path: str) -> dict[int, float]:
        """A rank's exposed waits per step, as rank_breakdown takes them."""
        return next((r.exposed for r in self.ranks if r.path == path), {})


def _align(tls: list[RankTimeline]) -> tuple[list[list[Step]], str]:
    by_number = [{s.number: s for s in tl.steps} for tl in tls]
    common = set.intersection(*(set(m) for m in by_number))
    if common and all(s.source == "ProfilerStep" for tl in tls for s in tl.steps):
        return [[m[n] for m in by_number] for n in sorted(common)], "number"
    n = min(len(tl.steps) for tl in tls)
    return [[tl.steps[i] for tl in tls] for i in range(n)], "order"


def _collectives(tl: RankTimeline, step: Step, names: dict[str, str]) -> dict[str, list[GpuOp]]:
    out: dict[str, list[GpuOp]] = defaultdict(list)
    for op in tl.ops_in(step.ts, step.end):
        if op.kind == COMM and op.ts >= step.ts:
            fam = names.get(op.name)
            if fam is None:
                fam = names[op.name] = family_of(op.name)
            out[fam].append(op)
    return out


def _compute(tl: RankTimeline, step: Step) -> Intervals:
    ops = tl.ops_in(step.ts, step.end)
    return clip(union((o.ts, o.end) for o in ops if o.kind == COMPUTE), step.ts, step.end)


def collective_waits(traces: list[Trace] | list[RankTimeline]) -> RunWaits:
    tls = [t if isinstance(t, RankTimeline) else RankTimeline(t) for t in traces]
    out = RunWaits(ranks=[RankWaits(path=tl.trace.meta.path, rank=tl.trace.meta.rank,
                                    host=tl.trace.meta.host) for tl in tls])
    if len(tls) < 2 or not all(tl.steps for tl in tls):
        return out
    rows, out.aligned_by = _align(tls)
    out.aligned_steps = len(rows)
    names: dict[str, str] = {}
    for row in rows:
        colls = [_collectives(tl, s, names) for tl, s in zip(tls, row, strict=True)]
        wait_spans: list[list[tuple[float, float]]] = [[] for _ in tls]
        for rw, s in zip(out.ranks, row, strict=True):
            rw.waits[s.number] = rw.transfer[s.number] = 0.0
            rw.step_us[s.number] = s.dur
            rw.collectives[s.number] = 0
        for fam in set.intersection(*(set(c) for c in colls)):
            for k in range(min(len(c[fam]) for c in colls)):
                ops = [c[fam][k] for c in colls]
                fastest = min(op.dur for op in ops)
                for i, (rw, s, op) in enumerate(zip(out.ranks, row, ops, strict=True)):
                    rw.waits[s.number] += op.dur - fastest
                    rw.transfer[s.number] += fastest
                    rw.collectives[s.number] += 1
                    wait_spans[i].append((op.ts, op.ts + op.dur - fastest))
        for i, (tl, rw, s) in enumerate(zip(tls, out.ranks, row, strict=True)):
            spans = clip(union(wait_spans[i]), s.ts, s.end)
            rw.exposed[s.number] = total(subtract(spans, _compute(tl, s)))
    out.transfer_share = statistics.median(r.transfer_share() for r in out.ranks)
    out.wait_share = statistics.median(r.wait_share() for r in out.ranks)
    out.straggler = _straggler(out, rows)
    return out


def _straggler(run: RunWaits, rows: list[list[Step]]) -> Straggler | None:
    votes: Counter[int] = Counter()
    for row in rows:
        waits = [rw.exposed[s.number] for rw, s in zip(run.ranks, row, strict=True)]
        busy = [s.dur - w for s, w in zip(row, waits, strict=True)]
        least = min(range(len(waits)), key=waits.__getitem__)
        shares = [w / s.dur for i, (w, s) in enumerate(zip(waits, row, strict=True))
                  if i != least and s.dur > 0]
        if not shares:
            continue
        typical = statistics.median(shares)
        # one rank stands alone: the next-least-waiting rank waits like the rest (several
        # late ranks together are a late group, not a straggler)
        alone = min(shares) >= RUNNER_UP_WAIT_RATIO * typical
        if typical >= MIN_OTHERS_WAIT_SHARE and alone and busy[least] >= max(busy) - 1e-6:
            votes[least] += 1
    if not votes:
        return None
    idx, count = votes.most_common(1)[0]
    consistency = count / len(rows)
    shares = [r.wait_share() for r in run.ranks]
    others = statistics.median(x for i, x in enumerate(shares) if i != idx)
    if consistency < MIN_CONSISTENCY or shares[idx] > others * MAX_OWN_WAIT_RATIO:
        return None
    busy = [statistics.median(r.step_us[n] - r.exposed[n] for n in r.step_us)
            for r in run.ranks]
    r = run.ranks[idx]
    return Straggler(rank=r.rank, path=r.path, host=r.host, consistency=consistency,
                     own_wait_share=shares[idx], others_wait_share=others, busy_us=busy[idx],
                     others_busy_us=statistics.median(b for i, b in enumerate(busy) if i != idx),
                     steps=len(rows))
