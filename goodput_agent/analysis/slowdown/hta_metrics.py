"""Holistic Trace Analysis's own numbers, computed by Goodput from its trace model.

HTA (`holistictraceanalysis` 0.5.0, the reference analysis for Kineto traces) reports per rank a
temporal breakdown, an idle-time breakdown and a communication-computation overlap. This module
computes the same numbers with HTA's definitions, read from its source, so that Goodput can be
checked against HTA (tests/analysis/slowdown/test_hta_agreement.py) and raced against it
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

Where Goodput's own per-step breakdown (model.StepBreakdown) differs from HTA:
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

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from goodput_agent.analysis.intervals import union_columns, union_totals
from goodput_agent.parsing.kineto.model import Columns, Trace

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


_TYPE_CODE = {COMMUNICATION: 0, MEMORY: 1, COMPUTATION: 2, OTHER: 3}
_COMM_CODE, _COMP_CODE = _TYPE_CODE[COMMUNICATION], _TYPE_CODE[COMPUTATION]


@dataclass(slots=True)
class _Timeline:
    """HTA's GPU timeline as columns, one row per event, sorted by (start, trace position):
    rounded times, kernel type code, stream, and the rounded start of the op's launch call
    (NaN for a stream sync or an op without one)."""

    start: np.ndarray
    end: np.ndarray
    type: np.ndarray
    stream: np.ndarray
    launch: np.ndarray
    idle_kind: np.ndarray  # a kernel, memcpy or memset: counted by the idle-time breakdown

    def __len__(self) -> int:
        return len(self.start)

    def take(self, rows: np.ndarray) -> _Timeline:
        return _Timeline(*(getattr(self, f)[rows] for f in self.__slots__))


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


def _launch_starts(runtime: Columns) -> tuple[np.ndarray, np.ndarray]:
    """Correlation ids of the CPU launch calls (not syncs), sorted, and each one's rounded start
    (the last call with an id wins, as a dict filled in trace order would have it)."""
    calls = (runtime.numbers["correlation"] >= 0) & \
        (runtime.text["cat"] != runtime.codes_of("cuda_sync"))
    corr = runtime.numbers["correlation"][calls][::-1]
    ids, first = np.unique(corr, return_index=True)  # first in reverse = last in trace order
    return ids, np.ceil(runtime.numbers["ts"][calls][::-1][first])


def _lookup(ids: np.ndarray, values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """values[ids == key] per key, NaN where the key is negative or not among the ids."""
    if not len(ids):
        return np.full(len(keys), np.nan)
    at = np.minimum(np.searchsorted(ids, keys), len(ids) - 1)
    return np.where((keys >= 0) & (ids[at] == keys), values[at], np.nan)


def _timeline(trace: Trace, filtered: bool) -> tuple[_Timeline, float | None]:
    gpu, runtime = trace.gpu_columns(), trace.runtime_columns()
    # Kineto writes a stream sync on the GPU row of its stream (tid = stream)
    syncs = runtime.text["cat"] == runtime.codes_of("cuda_sync")
    n = len(gpu)

    def both(gpu_field: str, sync_field: str) -> np.ndarray:
        return np.concatenate((gpu.numbers[gpu_field], runtime.numbers[sync_field][syncs]))

    ts, dur, stream, corr, index = (both("ts", "ts"), both("dur", "dur"),
                                    both("stream", "tid"), both("correlation", "correlation"),
                                    both("index", "index"))
    gpu_kind = np.array([_TYPE_CODE[hta_kernel_type(w)] for w in gpu.words], np.int8)
    sync_kind = np.array([_TYPE_CODE[hta_kernel_type(w)] for w in runtime.words], np.int8)
    kind = np.concatenate((gpu_kind[gpu.text["name"]] if n else np.zeros(0, np.int8),
                           sync_kind[runtime.text["name"][syncs]] if syncs.any()
                           else np.zeros(0, np.int8)))
    start, end = np.ceil(ts), np.floor(ts + dur)  # HTA rounds inwards (no-op on integers)
    launch = _lookup(*_launch_starts(runtime), corr)
    is_op = np.arange(len(ts)) < n
    keep = stream >= 0
    last = _last_step_start(trace) if filtered else None
    if last is not None:  # no correlation: not a GPU op to HTA, kept as CPU events
        keep &= np.where(corr >= 0, launch < last, start < last)  # NaN < x is False
    rows = np.flatnonzero(keep)
    rows = rows[np.lexsort((index[rows], start[rows]))]
    return _Timeline(start[rows], end[rows], kind[rows], stream[rows],
                     np.where(is_op, launch, np.nan)[rows], is_op[rows]), last


def _totals(ops: _Timeline, groups: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """Per group: the busy time of communication, of computation, and of both together."""
    comm, comp = ops.type == _COMM_CODE, ops.type == _COMP_CODE
    both = comm | comp
    return tuple(union_totals(ops.start[m], ops.end[m], groups[m], n) for m in (comm, comp, both))


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def temporal_breakdown(ops: _Timeline) -> TemporalBreakdown | None:
    busy_s, busy_e = union_columns(ops.start, ops.end)
    if not len(busy_s):
        return None
    start, kernel_us = float(busy_s[0]), float(busy_e[-1] - busy_s[0])
    idle = kernel_us - float((busy_e - busy_s).sum())
    comp = ops.type == _COMP_CODE
    compute = float(union_totals(ops.start[comp], ops.end[comp],
                                 np.zeros(int(comp.sum()), np.int64), 1)[0])
    non_compute = kernel_us - compute - idle
    return TemporalBreakdown(start_us=start, kernel_us=kernel_us, idle_us=idle,
                             compute_us=compute, non_compute_us=non_compute,
                             idle_pct=_pct(idle, kernel_us), compute_pct=_pct(compute, kernel_us),
                             non_compute_pct=_pct(non_compute, kernel_us))


def idle_breakdown(ops: _Timeline, kernel_wait_us: float = KERNEL_WAIT_US) -> list[StreamIdle]:
    mine = ops.take(np.flatnonzero(ops.idle_kind))
    by_stream = mine.take(np.argsort(mine.stream, kind="stable"))  # time order kept per stream
    if not len(by_stream):
        return []
    streams, group = np.unique(by_stream.stream, return_inverse=True)
    # from the previous op's end on the same stream, not the latest end: as HTA
    prev_end = np.concatenate(([np.nan], by_stream.end[:-1]))
    gap = np.where(np.concatenate(([False], group[1:] == group[:-1])),
                   by_stream.start - prev_end, np.nan)
    has_gap = ~np.isnan(gap)
    host = has_gap & (by_stream.launch > prev_end)
    kernel = has_gap & ~host & (gap < kernel_wait_us)
    other = has_gap & ~host & ~kernel
    sums = [np.bincount(group, weights=np.where(m, gap, 0.0), minlength=len(streams))
            for m in (host, kernel, other)]
    return [StreamIdle(stream=int(st), host_wait_us=float(h), kernel_wait_us=float(k),
                       other_us=float(x)) for st, h, k, x in zip(streams, *sums, strict=True)]


def _ratio(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 2) if whole > 0 else None


def _step_of_launch(ops: _Timeline, trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Per op, the position (in step order) of the ProfilerStep whose CPU span holds its launch,
    -1 for none: the latest-starting window that holds it (HTA's loop keeps the last match;
    ProfilerSteps do not nest, so that is the one); and the step numbers."""
    windows = sorted((*_rounded(s.ts, s.dur), s.number) for s in trace.steps
                     if s.source == "ProfilerStep")
    starts = np.array([w[0] for w in windows], np.float64)
    ends = np.array([w[1] for w in windows], np.float64)
    launched = ~np.isnan(ops.launch)
    at = np.searchsorted(starts, np.where(launched, ops.launch, -np.inf), side="right") - 1
    inside = launched & (at >= 0) & (ops.launch < ends[np.maximum(at, 0)] if len(ends)
                                     else np.zeros(len(ops), bool))
    return np.where(inside, at, -1), np.array([w[2] for w in windows], np.int64)


def comm_comp_overlap(ops: _Timeline, trace: Trace) -> CommCompOverlap:
    comm, comp, both = (float(t[0]) for t in _totals(ops, np.zeros(len(ops), np.int64), 1))
    overlapped = comm + comp - both  # |comm ∩ comp| = |comm| + |comp| - |comm ∪ comp|
    step_at, numbers = _step_of_launch(ops, trace)
    rows = []
    if len(numbers):
        in_step = step_at >= 0
        per = _totals(ops.take(np.flatnonzero(in_step)), step_at[in_step], len(numbers))
        seen = np.bincount(step_at[in_step], minlength=len(numbers)) > 0
        by_number = sorted((int(numbers[i]), float(per[0][i]), float(per[0][i] + per[1][i]
                                                                     - per[2][i]))
                           for i in np.flatnonzero(seen))
        rows = [StepOverlap(step=number, comm_us=c, overlapped_us=ov, overlap_pct=_ratio(ov, c))
                for number, c, ov in by_number]
    with_comm = [r.overlap_pct for r in rows if r.overlap_pct is not None]
    return CommCompOverlap(comm_us=comm, overlapped_us=overlapped,
                           overlap_pct=_ratio(overlapped, comm), steps=rows,
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

