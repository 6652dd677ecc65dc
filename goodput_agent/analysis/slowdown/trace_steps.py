"""One rank's steps on one clock: where each step's time goes on the GPU timeline.

Steps are the trace's `ProfilerStep#N` spans. A trace without them gets its iterations from the
GPU timeline (`source="kernel-pattern"`): the compute kernel that recurs most regularly (the
coefficient of variation of the intervals between its starts at most `PATTERN_MAX_CV`, over at
least `PATTERN_MIN_COVER` of the timeline, with about the same number of GPU ops between two
of its starts) marks one iteration per occurrence, and each step runs from one occurrence to
the next (the tail after the last occurrence is not a whole step and is left out). Limits: a
loop whose iterations launch different kernels each time has no such kernel, and a kernel that
recurs regularly several times per iteration (identical micro-batches, layers of a model with
nothing between them) makes each repetition a "step"; with no regular kernel the whole timeline
is one step (`source="whole-trace"`). Either case adds a warning.

Within a step's window [start, end) the GPU ops of the rank's main device (every stream) are
clipped to the window and counted once, in the order compute > communication > memory > idle:
communication hidden under compute counts as compute, memory copies hidden under either count
as that. The exposed communication is split into waiting for other ranks (`comm_wait_us`,
measured across ranks by trace_ranks and passed in) and transfer (the rest).

Every idle gap is attributed by who was late. When the op that ends the gap was launched (its
runtime call, matched by correlation id) at or after the gap's start, the GPU waited for the
host: the part of the gap under a DataLoader `__next__` span is input wait, the rest host work
(CPU ops with nothing queued, syncs, launch-bound stretches). When it had been launched before
the gap began, it was queued behind a dependency (another stream, an event) and the gap is
`idle_other`. A gap with no op after it is the host's (the CPU is still in the step). Where the
next op has no launch to match, the gap is split by what covers it on the CPU instead: a
DataLoader span (input), a sync or launch call (host), nothing (other), and the rank's
breakdown says how many gaps needed that. The seven parts sum to the step time.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import Generic, TypeVar

from goodput_agent.analysis.intervals import (
    Intervals,
    clip,
    gaps,
    intersect,
    subtract,
    total,
    union,
)
from goodput_agent.parsing.kineto.model import COMM, COMPUTE, CpuSpan, GpuOp, Step, Trace

from .kernel_families import families, family_of
from .model import PARTS, RankBreakdown, StepBreakdown

SYNC_NAMES = frozenset({"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                        "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize",
                        "aten::item", "aten::_local_scalar_dense"})
PATTERN_MAX_CV = 0.25  # a step marker's start-to-start intervals vary by at most this much
PATTERN_MIN_COVER = 0.5  # ...and its occurrences span at least this share of the timeline
PATTERN_MAX_OPS_SPREAD = 0.2  # GPU ops per found iteration within ±20% of their median
_EPS = 1e-6

T = TypeVar("T", GpuOp, CpuSpan)


def is_dataloader(span: CpuSpan) -> bool:
    return "DataLoader" in span.name and "__next__" in span.name


def is_sync(span: CpuSpan) -> bool:
    return span.name in SYNC_NAMES or span.cat == "cuda_sync"


def is_launch(span: CpuSpan) -> bool:
    n = span.name
    return "Launch" in n or "Memcpy" in n or "Memset" in n or "GraphLaunch" in n


class ByStart(Generic[T]):
    """Items with `ts` and `end`, sorted by start, for finding those that overlap a window."""

    def __init__(self, items: Iterable[T]):
        self.items: list[T] = sorted(items, key=lambda x: x.ts)
        self.starts = [x.ts for x in self.items]
        # the latest end among the items so far: nondecreasing, so it can be bisected
        self.reach = list(accumulate((x.end for x in self.items), max))

    def overlapping(self, lo: float, hi: float) -> list[T]:
        i = bisect_right(self.reach, lo)
        j = bisect_left(self.starts, hi)
        return [x for x in self.items[i:j] if x.end > lo]

    def first_from(self, t: float) -> T | None:
        i = bisect_left(self.starts, t - _EPS)
        return self.items[i] if i < len(self.items) else None

    def __len__(self) -> int:
        return len(self.items)


class Spans:
    """Disjoint sorted intervals, for clipping to a window by bisection."""

    def __init__(self, spans: Intervals):
        self.spans = spans
        self.starts = [a for a, _ in spans]
        self.ends = [b for _, b in spans]

    def within(self, lo: float, hi: float) -> Intervals:
        i, j = bisect_right(self.ends, lo), bisect_left(self.starts, hi)
        return clip(self.spans[i:j], lo, hi)


def main_device(trace: Trace) -> int | None:
    """The device the rank drives: the one with the most GPU ops."""
    if not trace.gpu:
        return None
    return Counter(op.device for op in trace.gpu).most_common(1)[0][0]


def main_device_ops(trace: Trace) -> list[GpuOp]:
    device = main_device(trace)
    return [op for op in trace.gpu if op.device == device]


def _pattern_steps(ops: Sequence[GpuOp]) -> tuple[list[Step], str]:
    starts_of: dict[str, list[float]] = defaultdict(list)
    for op in ops:
        if op.kind == COMPUTE:
            starts_of[op.name].append(op.ts)
    if not ops:
        return [], "no GPU ops: no steps"
    all_starts = [op.ts for op in ops]
    span = max(op.end for op in ops) - ops[0].ts
    candidates = []
    for name, starts in starts_of.items():
        if len(starts) < 3 or span <= 0 or (starts[-1] - starts[0]) < PATTERN_MIN_COVER * span:
            continue
        gaps_ = [b - a for a, b in zip(starts, starts[1:], strict=False)]
        mean = statistics.fmean(gaps_)
        if mean <= 0:
            continue
        cv = statistics.pstdev(gaps_) / mean
        if cv > PATTERN_MAX_CV:
            continue
        per = [bisect_left(all_starts, b) - bisect_left(all_starts, a)
               for a, b in zip(starts, starts[1:], strict=False)]
        mid = statistics.median(per)
        if max(abs(n - mid) for n in per) > PATTERN_MAX_OPS_SPREAD * mid:
            continue
        candidates.append((cv, starts[0], name, starts, mean))
    if not candidates:
        return [], "no ProfilerStep spans and no regularly recurring kernel"
    best_cv = min(c[0] for c in candidates)
    # of the equally regular markers, the one that comes first in the iteration
    cv, _, name, starts, mean = min((c for c in candidates if c[0] <= best_cv + 0.05),
                                    key=lambda c: c[1])
    steps = [Step(number=i, ts=a, dur=b - a, source="kernel-pattern")
             for i, (a, b) in enumerate(zip(starts, starts[1:], strict=False))]
    return steps, (f"no ProfilerStep spans: {len(steps)} iterations found from the recurring "
                   f"kernel {family_of(name)} (one every {mean / 1000:.3g} ms, intervals vary "
                   f"{cv:.0%})")


def find_steps(trace: Trace, ops: Sequence[GpuOp] | None = None) -> tuple[list[Step], list[str]]:
    """The trace's steps and, when they were not ProfilerStep spans, a warning saying how they
    were found."""
    steps = [s for s in trace.steps if s.dur > 0]
    if steps:
        return steps, []
    ops = main_device_ops(trace) if ops is None else ops
    found, why = _pattern_steps(ops)
    if found:
        return found, [why]
    if not ops:
        return [], [why]
    end = max(op.end for op in ops)
    return ([Step(number=0, ts=ops[0].ts, dur=end - ops[0].ts, source="whole-trace")],
            [f"{why}: the whole GPU timeline is one step"])


def steps_of(trace: Trace) -> list[Step]:
    return find_steps(trace)[0]


class RankTimeline:
    """Sorted views of one rank's trace, built once, for many step queries."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.device = main_device(trace)
        self.by_start = ByStart(op for op in trace.gpu if op.device == self.device)
        self.ops = self.by_start.items
        self.launch = {s.correlation: s.ts for s in trace.runtime if s.correlation >= 0}
        self.dataloader = ByStart(s for s in trace.annotations if is_dataloader(s))
        self.input = union((s.ts, s.end) for s in self.dataloader.items)
        self._input = Spans(self.input)
        self.syncs = ByStart([*(s for s in trace.runtime if is_sync(s)),
                              *(s for s in trace.annotations if is_sync(s))])
        self._host: Spans | None = None
        self.unmatched_gaps = 0  # idle gaps whose next op had no launch to match
        self.steps, self.warnings = find_steps(trace, self.ops)

    def ops_in(self, lo: float, hi: float) -> list[GpuOp]:
        return self.by_start.overlapping(lo, hi)

    def next_op_at(self, t: float) -> GpuOp | None:
        return self.by_start.first_from(t)

    def input_in(self, lo: float, hi: float) -> Intervals:
        return self._input.within(lo, hi)

    def host_in(self, lo: float, hi: float) -> Intervals:
        """CPU time in sync or launch calls (the fallback when launches cannot be matched)."""
        if self._host is None:
            self._host = Spans(union([*((s.ts, s.end) for s in self.trace.runtime
                                        if is_sync(s) or is_launch(s)),
                                      *((s.ts, s.end) for s in self.syncs.items)]))
        return self._host.within(lo, hi)


def _layers(ops: list[GpuOp], lo: float, hi: float) -> tuple[Intervals, Intervals, Intervals]:
    """Compute, communication and memory ops as clipped unions, in one pass over the ops."""
    compute: list[tuple[float, float]] = []
    comm: list[tuple[float, float]] = []
    memory: list[tuple[float, float]] = []
    for op in ops:
        (compute if op.kind == COMPUTE else comm if op.kind == COMM else memory).append(
            (op.ts, op.ts + op.dur))
    return clip(union(compute), lo, hi), clip(union(comm), lo, hi), clip(union(memory), lo, hi)


def _parts(tl: RankTimeline, step: Step, comm_wait_us: float
           ) -> tuple[list[tuple[float, float, str]], list[GpuOp], Intervals, Intervals]:
    lo, hi = step.ts, step.end
    ops = tl.ops_in(lo, hi)
    compute, comm_all, mem_all = _layers(ops, lo, hi)
    comm = subtract(comm_all, compute)
    memory = subtract(subtract(mem_all, compute), comm)
    out = [(a, b, "compute_us") for a, b in compute] + [(a, b, "memory_us") for a, b in memory]
    exposed = total(comm)
    share = min(max(comm_wait_us, 0.0), exposed) / exposed if exposed > 0 else 0.0
    for a, b in comm:
        cut = a + (b - a) * share
        out += [(a, cut, "comm_wait_us"), (cut, b, "comm_transfer_us")]
    for a, b in gaps(union(compute + comm + memory), lo, hi):
        out += _idle(tl, a, b)
    return [x for x in out if x[1] > x[0]], ops, compute, comm_all


def step_parts(tl: RankTimeline, step: Step,
               comm_wait_us: float = 0.0) -> list[tuple[float, float, str]]:
    """The step's window as (start, end, part) intervals, disjoint, covering it exactly; `part`
    is one of model.PARTS. The exposed communication's waiting share is drawn at the
    start of each exposed interval (a collective waits for its peers, then transfers)."""
    return _parts(tl, step, comm_wait_us)[0]


def _idle(tl: RankTimeline, a: float, b: float) -> list[tuple[float, float, str]]:
    gap = [(a, b)]
    waiting = intersect(gap, tl.input_in(a, b))
    nxt = tl.next_op_at(b)
    launched = tl.launch.get(nxt.correlation) if nxt is not None else None
    if nxt is None or (launched is not None and launched >= a - _EPS):
        rest = subtract(gap, waiting)
        return [(s, e, "idle_input_us") for s, e in waiting] + \
            [(s, e, "idle_host_us") for s, e in rest]
    if launched is not None:
        return [(a, b, "idle_other_us")]
    tl.unmatched_gaps += 1
    rest = subtract(gap, waiting)
    host = intersect(rest, tl.host_in(a, b))
    return ([(s, e, "idle_input_us") for s, e in waiting]
            + [(s, e, "idle_host_us") for s, e in host]
            + [(s, e, "idle_other_us") for s, e in subtract(rest, host)])


def step_breakdown(trace: Trace | RankTimeline, step: Step,
                   comm_wait_us: float = 0.0) -> StepBreakdown:
    tl = trace if isinstance(trace, RankTimeline) else RankTimeline(trace)
    spans, ops, compute, comm = _parts(tl, step, comm_wait_us)
    sums = dict.fromkeys(PARTS, 0.0)
    for a, b, part in spans:
        sums[part] += b - a
    return StepBreakdown(step=step.number, start_us=step.ts, step_us=step.dur, **sums,
                         comm_total_us=total(comm),
                         comm_overlapped_us=total(intersect(comm, compute)),
                         kernels=sum(1 for o in ops if o.ts >= step.ts))


def step_ops(tl: RankTimeline, steps: Iterable[Step]) -> list[GpuOp]:
    """The main device's ops that start inside the steps."""
    out: list[GpuOp] = []
    starts = tl.by_start.starts
    for s in steps:
        out += tl.ops[bisect_left(starts, s.ts):bisect_left(starts, s.end)]
    return out


def rank_breakdown(trace: Trace | RankTimeline,
                   comm_waits: dict[int, float] | None = None) -> RankBreakdown:
    """Every step of the rank, the median step, each part's mean over the steps (they sum to
    the mean step), the kernel families of its steps; `comm_waits`: step number -> µs of the
    exposed communication spent waiting for other ranks (trace_ranks)."""
    tl = trace if isinstance(trace, RankTimeline) else RankTimeline(trace)
    meta = tl.trace.meta
    waits = comm_waits or {}
    unmatched = tl.unmatched_gaps
    steps = [step_breakdown(tl, s, waits.get(s.number, 0.0)) for s in tl.steps]
    unmatched = tl.unmatched_gaps - unmatched
    warnings = [*tl.trace.warnings, *tl.warnings]
    if unmatched:
        warnings.append(f"{unmatched} idle gaps end at an op with no launch to match (no "
                        "runtime call with its correlation id in the trace): those gaps are "
                        "split by the CPU spans over them instead")
    out = RankBreakdown(path=meta.path, rank=meta.rank, host=meta.host,
                        host_source=meta.host_source, steps=steps, warnings=warnings)
    if steps:
        ordered = sorted(steps, key=lambda s: s.step_us)
        out.median_step = ordered[(len(ordered) - 1) // 2]
        out.median_step_us = statistics.median(s.step_us for s in steps)
        out.mean_parts = {p: statistics.fmean(getattr(s, p) for s in steps) for p in PARTS}
        out.kernel_families = families(step_ops(tl, tl.steps))
    return out
