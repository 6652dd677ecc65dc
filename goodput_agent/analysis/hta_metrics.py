"""Holistic Trace Analysis's own numbers, computed by Goodput from its trace model.

HTA (`holistictraceanalysis` 0.5.0, the reference analysis for Kineto traces) reports per rank a
temporal breakdown, an idle-time breakdown and a communication-computation overlap. This module
computes the same numbers with HTA's definitions, read from its source, so that Goodput can be
checked against HTA (tests/analysis/test_hta_agreement.py) and raced against it
(benchmarks/trace_vs_hta.py). HTA itself is never imported: it is not a dependency.

HTA's definitions (file and function in HTA 0.5.0):

- Timestamps (common/trace_parser.py, round_down_time_stamps): when a trace's timestamps are
  fractional (nanosecond-resolution traces), every event is rounded *inwards* to whole µs:
  start = ceil(ts), end = floor(ts + dur). An event shorter than 1 µs can end before it starts.
  Integer traces are unchanged, so the rounding is always applied here.
- Which events (common/trace.py, _filter_irrelevant_gpu_kernels): when the job's traces name two
  or more `ProfilerStep#N`, a GPU op is kept only if the CPU event with its correlation id (its
  runtime launch) started before the start of the rank's last ProfilerStep: the last step, which
  the profiler usually cuts short, is dropped, and GPU work launched before the first step
  (warm-up) is kept. With fewer steps every event is kept. GPU ops are events on a stream with a
  correlation id; cuda_sync `Stream Sync` events are on a stream too and count as GPU time.
- Kernel type (utils/utils.py, get_kernel_type), from the name alone: communication
  `^nccl.*Kernel`; memory `^Memcpy|^Memset|^dma`; computation anything else that does not match
  `.*Memcpy`, `^Memset` or `.*Sync`; the rest (e.g. `Stream Sync`) is "other".
- Temporal breakdown (analyzers/breakdown_analysis.py, get_temporal_breakdown): the rank's range
  (`kernel_time`) runs from the first kept op's start to the last one's end, all streams
  merged; idle = range - union of all ops; compute = union of computation ops; non-compute =
  range - compute - idle (communication, memory and other time not hidden under compute).
  Percentages are of the range, rounded to 2 decimals.
- Idle-time breakdown (get_idle_time_breakdown): per stream, over kernels, memcpys and memsets
  (not syncs) sorted by start, each gap from the previous op's end to the next op's start is
  *host wait* when the next op's launch call started after the previous op ended, else *kernel
  wait* when the gap is under `consecutive_kernel_delay` (default 30; HTA's docstring says ns,
  but it compares trace-clock µs), else *other*.
- Communication-computation overlap (analyzers/communication_analysis.py): per rank, the time
  computation and communication both run, over the union of communication time, in %, over the
  whole kept range; None where there is no communication. HTA 0.5.0 has no per-iteration
  overlap; `CommCompOverlap.steps` adds one with HTA's iteration rule (common/trace.py,
  add_iteration): a GPU op belongs to the ProfilerStep whose CPU span holds its launch call.

Where this differs from HTA, deliberately (each difference is bounded in the agreement test):
- ops whose rounded end precedes their start count zero here; HTA's interval merge can count
  them negative (at most 1 µs each);
- ties in start time on one stream are ordered by trace position here; HTA's sort is unstable;
- a GPU op whose correlation matches two CPU events is counted once here, twice by HTA;
- with no ProfilerStep filter, an op without a launch call is never host wait here; HTA then
  compares against the first event of the file.

Where Goodput's own per-step breakdown (slowdown_model.StepBreakdown) differs from HTA:
- range: a StepBreakdown covers one ProfilerStep's CPU window [ts, ts+dur) on the GPU timeline;
  GPU time outside every step window (warm-up, the tail) is in no step. HTA's range is the GPU
  activity span of all kept ops, launched before the last step, wherever they run;
- idle: the step's idle includes GPU-idle time at the window's edges, split by host-side cause
  (input wait, host busy, other) across all streams; HTA's idle is inside its range only, and its
  breakdown is per stream, by launch time and gap length;
- compute: StepBreakdown.compute_us is the union of GpuOp.kind == COMPUTE ops (the trace
  category and HTA's name rule); HTA's compute is the name rule alone;
- non-compute: HTA's non_compute = StepBreakdown comm_transfer + comm_wait + memory, plus sync
  time, which StepBreakdown does not count as GPU work;
- overlap: StepBreakdown.comm_overlapped_us / comm_total_us is per step window, on exact
  timestamps; HTA's is over its range, on rounded ones;
- timestamps: StepBreakdown uses the trace's exact (fractional) times, HTA rounds them inwards.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from pydantic import BaseModel, Field

from goodput_agent.analysis.intervals import Intervals, intersect, total, union
from goodput_agent.parsing.trace_model import Trace

HTA_VERSION = "0.5.0"
KERNEL_WAIT_US = 30.0  # HTA's default consecutive_kernel_delay

# HTA 0.5.0 hta/utils/utils.py, verbatim
_NCCL_KERNEL_RE = re.compile(r"^nccl.*Kernel")
_MEMORY_KERNEL_RE = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NOT_COMPUTE_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")

COMMUNICATION, MEMORY, COMPUTATION, OTHER = "COMMUNICATION", "MEMORY", "COMPUTATION", "OTHER"
HOST_WAIT, KERNEL_WAIT, OTHER_WAIT = "host_wait", "kernel_wait", "other"


@functools.cache
def hta_kernel_type(name: str) -> str:
    """HTA's kernel type of a GPU event, from its name only."""
    if _NCCL_KERNEL_RE.match(name):
        return COMMUNICATION
    if _MEMORY_KERNEL_RE.match(name):
        return MEMORY
    if not _NOT_COMPUTE_RE.match(name):
        return COMPUTATION
    return OTHER


class TemporalBreakdown(BaseModel):
    start_us: float  # trace clock (rounded)
    kernel_us: float  # HTA's kernel_time: the range from the first op's start to the last's end
    idle_us: float
    compute_us: float
    non_compute_us: float
    idle_pct: float
    compute_pct: float
    non_compute_pct: float


class StreamIdle(BaseModel):
    """Idle gaps between consecutive ops of one stream, by HTA's cause."""

    stream: int
    host_wait_us: float = 0.0
    kernel_wait_us: float = 0.0
    other_us: float = 0.0

    @property
    def total_us(self) -> float:
        return self.host_wait_us + self.kernel_wait_us + self.other_us


class StepOverlap(BaseModel):
    step: int
    comm_us: float
    overlapped_us: float
    overlap_pct: float | None  # None: no communication in the step


class CommCompOverlap(BaseModel):
    comm_us: float  # union of communication ops over the range
    overlapped_us: float  # of which computation ran at the same time
    overlap_pct: float | None  # HTA's comp_comm_overlap_pctg; None without communication
    steps: list[StepOverlap] = Field(default_factory=list)  # by HTA's iteration rule
    mean_step_pct: float | None = None  # over the steps with communication


class HtaMetrics(BaseModel):
    path: str
    rank: int | None = None
    ops: int  # GPU-timeline events analysed, after HTA's filter
    filtered: bool  # HTA's last-ProfilerStep filter applied
    last_step_start_us: float | None = None
    temporal: TemporalBreakdown | None  # None: no GPU op to analyse (HTA raises there)
    idle: list[StreamIdle] = Field(default_factory=list)
    overlap: CommCompOverlap


@dataclass(slots=True, frozen=True)
class _Op:
    """One event on HTA's GPU timeline: rounded, typed by name, with its launch time."""

    start: float
    end: float
    type: str
    stream: int
    launch: float | None  # rounded start of the CPU call with the op's correlation id
    idle_kind: bool  # a kernel, memcpy or memset: counted by the idle-time breakdown
    index: int


def _rounded(ts: float, dur: float) -> tuple[float, float]:
    if type(ts) is int and type(dur) is int:
        return ts, ts + dur
    return math.ceil(ts), math.floor(ts + dur)


def _step_names(trace: Trace) -> set[str]:
    names = {f"ProfilerStep#{s.number}" for s in trace.steps if s.source == "ProfilerStep"}
    names.update(a.name for a in trace.annotations if "ProfilerStep" in a.name)
    return names


def _last_step_start(trace: Trace) -> float | None:
    starts = [_rounded(s.ts, s.dur)[0] for s in trace.steps if s.source == "ProfilerStep"]
    starts += [_rounded(a.ts, a.dur)[0] for a in trace.annotations if "ProfilerStep" in a.name]
    return max(starts) if starts else None


def _timeline(trace: Trace, filtered: bool) -> tuple[list[_Op], float | None]:
    launches: dict[int, float] = {}
    for r in trace.runtime:
        if r.correlation >= 0 and r.cat != "cuda_sync":
            launches[r.correlation] = _rounded(r.ts, r.dur)[0]
    last = _last_step_start(trace) if filtered else None
    ops: list[_Op] = []
    events = [(g.ts, g.dur, g.name, g.stream, g.correlation, True, g.index) for g in trace.gpu]
    # Kineto writes a stream sync on the GPU row of its stream (tid = stream)
    events += [(s.ts, s.dur, s.name, s.tid, s.correlation, False, s.index)
               for s in trace.runtime if s.cat == "cuda_sync"]
    for ts, dur, name, stream, correlation, is_op, index in events:
        if stream < 0:
            continue
        start, end = _rounded(ts, dur)
        launch = launches.get(correlation) if correlation >= 0 else None
        if last is not None and (
                launch is None or launch >= last if correlation >= 0
                else start >= last):  # no correlation: not a GPU op to HTA, kept as CPU events
            continue
        ops.append(_Op(start, end, hta_kernel_type(name), stream, launch if is_op else None,
                       is_op, index))
    ops.sort(key=attrgetter("start", "index"))
    return ops, last


def _unions(ops: Sequence[_Op]) -> tuple[Intervals, Intervals, Intervals]:
    """The busy time of all ops, of computation ops and of communication ops."""
    every, comp, comm = [], [], []
    for o in ops:
        span = (o.start, o.end)
        every.append(span)
        if o.type == COMPUTATION:
            comp.append(span)
        elif o.type == COMMUNICATION:
            comm.append(span)
    return union(every), union(comp), union(comm)


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def temporal_breakdown(ops: Sequence[_Op]) -> TemporalBreakdown | None:
    busy, comp, _ = _unions(ops)
    if not busy:
        return None
    start, kernel_us = busy[0][0], busy[-1][1] - busy[0][0]
    idle = kernel_us - total(busy)
    compute = total(comp)
    non_compute = kernel_us - compute - idle
    return TemporalBreakdown(start_us=start, kernel_us=kernel_us, idle_us=idle,
                             compute_us=compute, non_compute_us=non_compute,
                             idle_pct=_pct(idle, kernel_us), compute_pct=_pct(compute, kernel_us),
                             non_compute_pct=_pct(non_compute, kernel_us))


def idle_breakdown(ops: Sequence[_Op], kernel_wait_us: float = KERNEL_WAIT_US) -> list[StreamIdle]:
    sums: dict[int, list[float]] = {}  # stream -> [host wait, kernel wait, other]
    prev_end: dict[int, float] = {}
    for o in ops:
        if not o.idle_kind:
            continue
        row = sums.setdefault(o.stream, [0.0, 0.0, 0.0])
        before = prev_end.get(o.stream)
        if before is not None:
            gap = o.start - before  # from the previous op's end, not the latest end: as HTA
            if o.launch is not None and o.launch > before:
                row[0] += gap
            elif gap < kernel_wait_us:
                row[1] += gap
            else:
                row[2] += gap
        prev_end[o.stream] = o.end
    return [StreamIdle(stream=st, host_wait_us=h, kernel_wait_us=k, other_us=x)
            for st, (h, k, x) in sorted(sums.items())]


def _overlap(ops: Sequence[_Op]) -> tuple[float, float]:
    _, comp, comm = _unions(ops)
    return total(comm), total(intersect(comm, comp))


def _ratio(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 2) if whole > 0 else None


def comm_comp_overlap(ops: Sequence[_Op], trace: Trace) -> CommCompOverlap:
    comm_us, overlapped = _overlap(ops)
    windows = sorted((*_rounded(s.ts, s.dur), s.number) for s in trace.steps
                     if s.source == "ProfilerStep")
    starts = [w[0] for w in windows]
    per_step: dict[int, list[_Op]] = {}
    for o in ops:
        if o.launch is None:
            continue
        # the latest-starting window that holds the launch (HTA's loop keeps the last match;
        # ProfilerSteps do not nest, so that is the one)
        i = bisect.bisect_right(starts, o.launch) - 1
        if i >= 0 and o.launch < windows[i][1]:
            per_step.setdefault(windows[i][2], []).append(o)
    rows = []
    for number in sorted(per_step):
        c, ov = _overlap(per_step[number])
        rows.append(StepOverlap(step=number, comm_us=c, overlapped_us=ov,
                                overlap_pct=_ratio(ov, c)))
    with_comm = [r.overlap_pct for r in rows if r.overlap_pct is not None]
    return CommCompOverlap(comm_us=comm_us, overlapped_us=overlapped,
                           overlap_pct=_ratio(overlapped, comm_us), steps=rows,
                           mean_step_pct=round(sum(with_comm) / len(with_comm), 2)
                           if with_comm else None)


def hta_job_metrics(traces: Sequence[Trace], kernel_wait_us: float = KERNEL_WAIT_US
                    ) -> list[HtaMetrics]:
    """HTA's numbers for the ranks of one job: HTA decides its step filter over all of them."""
    names: set[str] = set()
    for t in traces:
        names |= _step_names(t)
    filtered = len(names) >= 2
    out = []
    for t in traces:
        ops, last = _timeline(t, filtered)
        out.append(HtaMetrics(path=t.meta.path, rank=t.meta.rank, ops=len(ops),
                              filtered=filtered, last_step_start_us=last,
                              temporal=temporal_breakdown(ops),
                              idle=idle_breakdown(ops, kernel_wait_us),
                              overlap=comm_comp_overlap(ops, t)))
    return out


def hta_metrics(trace: Trace, kernel_wait_us: float = KERNEL_WAIT_US) -> HtaMetrics:
    """HTA's numbers for one trace analysed as a job of its own."""
    return hta_job_metrics([trace], kernel_wait_us)[0]

