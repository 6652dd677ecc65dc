"""One rank's steps on one clock: where each step's time goes on the GPU timeline.

Within a step's window [start, end) the GPU ops of the rank's main device (every stream) are
clipped to the window and counted once, in the order compute > communication > memory > idle:
communication hidden under compute counts as compute, memory copies hidden under either count
as that. Every idle gap is then attributed by who was late: when the op that ends the gap was
launched (its runtime call, matched by correlation id) after the gap began, the GPU waited for
the host — the part of it under a DataLoader `__next__` span is input wait, the rest host work
(CPU ops, syncs, launch overhead); otherwise the op was already queued (a dependency on another
stream or event) and the gap is `idle_other`. A trailing gap with no next op is host time (the
CPU is still in the step). The seven parts sum to the step time.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left
from collections import Counter

from goodput_agent.analysis.intervals import (
    Intervals,
    clip,
    gaps,
    intersect,
    subtract,
    total,
    union,
)
from goodput_agent.analysis.kernel_families import families
from goodput_agent.analysis.slowdown_model import PARTS, RankBreakdown, StepBreakdown
from goodput_agent.parsing.trace_model import COMM, COMPUTE, CpuSpan, GpuOp, Step, Trace

SYNC_NAMES = frozenset({"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                        "hipStreamSynchronize", "hipDeviceSynchronize", "aten::item",
                        "aten::_local_scalar_dense"})


def is_dataloader(span: CpuSpan) -> bool:
    return "DataLoader" in span.name and "__next__" in span.name


def main_device_ops(trace: Trace) -> list[GpuOp]:
    """The ops of the device the rank drives (the most used one), sorted by start."""
    if not trace.gpu:
        return []
    device = Counter(op.device for op in trace.gpu).most_common(1)[0][0]
    return [op for op in trace.gpu if op.device == device]


def steps_of(trace: Trace) -> list[Step]:
    """ProfilerStep spans; without them, the whole GPU timeline as one step."""
    if trace.steps:
        return trace.steps
    ops = trace.gpu
    if not ops:
        return []
    end = max(op.end for op in ops)
    return [Step(number=0, ts=ops[0].ts, dur=end - ops[0].ts, source="whole-trace")]


class RankTimeline:
    """Sorted views of one rank's trace, built once, for many step queries."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.ops = main_device_ops(trace)
        self.starts = [op.ts for op in self.ops]
        self.max_dur = max((op.dur for op in self.ops), default=0.0)
        self.launch = {s.correlation: s.ts for s in trace.runtime if s.correlation >= 0}
        self.input = union((s.ts, s.end) for s in trace.annotations if is_dataloader(s))

    def ops_in(self, lo: float, hi: float) -> list[GpuOp]:
        i = bisect_left(self.starts, lo - self.max_dur)
        j = bisect_left(self.starts, hi)
        return [op for op in self.ops[i:j] if op.end > lo]

    def next_op_at(self, t: float) -> GpuOp | None:
        i = bisect_left(self.starts, t - 1e-6)
        return self.ops[i] if i < len(self.ops) else None


def _spans(ops: list[GpuOp], lo: float, hi: float) -> Intervals:
    return clip(union((op.ts, op.end) for op in ops), lo, hi)


def step_breakdown(trace: Trace | RankTimeline, step: Step,
                   comm_wait_us: float = 0.0) -> StepBreakdown:
    tl = trace if isinstance(trace, RankTimeline) else RankTimeline(trace)
    lo, hi = step.ts, step.end
    ops = tl.ops_in(lo, hi)
    comp = _spans([o for o in ops if o.kind == COMPUTE], lo, hi)
    comm = _spans([o for o in ops if o.kind == COMM], lo, hi)
    mem = _spans([o for o in ops if o.kind not in (COMPUTE, COMM)], lo, hi)
    comm_exposed = total(subtract(comm, comp))
    memory = total(subtract(subtract(mem, comp), comm))
    idle_input = idle_host = idle_other = 0.0
    for a, b in gaps(union(comp + comm + mem), lo, hi):
        nxt = tl.next_op_at(b)
        launched = tl.launch.get(nxt.correlation) if nxt is not None and b < hi else None
        host_bound = (nxt is None or b >= hi or launched is None or launched > a)
        if host_bound:
            waiting = total(intersect([(a, b)], tl.input))
            idle_input += waiting
            idle_host += (b - a) - waiting
        else:
            idle_other += b - a
    wait = min(comm_wait_us, comm_exposed)
    return StepBreakdown(
        step=step.number, start_us=lo, step_us=hi - lo, compute_us=total(comp),
        comm_transfer_us=comm_exposed - wait, comm_wait_us=wait, memory_us=memory,
        idle_input_us=idle_input, idle_host_us=idle_host, idle_other_us=idle_other,
        comm_total_us=total(comm), comm_overlapped_us=total(intersect(comm, comp)),
        kernels=sum(1 for o in ops if o.ts >= lo))


def rank_breakdown(trace: Trace, comm_waits: dict[int, float] | None = None) -> RankBreakdown:
    tl = RankTimeline(trace)
    steps = [step_breakdown(tl, s, (comm_waits or {}).get(s.number, 0.0))
             for s in steps_of(trace)]
    meta = trace.meta
    out = RankBreakdown(path=meta.path, rank=meta.rank, host=meta.host,
                        host_source=meta.host_source, steps=steps,
                        warnings=list(trace.warnings))
    if steps:
        ordered = sorted(steps, key=lambda s: s.step_us)
        out.median_step = ordered[(len(ordered) - 1) // 2]
        out.median_step_us = statistics.median(s.step_us for s in steps)
        out.mean_parts = {p: statistics.fmean(getattr(s, p) for s in steps) for p in PARTS}
        windows = [(s.start_us, s.start_us + s.step_us) for s in steps]
        out.kernel_families = families(
            [o for o in tl.ops if any(lo <= o.ts < hi for lo, hi in windows)], len(steps))
    return out
