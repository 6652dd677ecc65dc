"""One profiler (Kineto) trace in memory: only the events the slowdown analyses use, in compact
form, on the trace's own clock (microseconds, as Kineto writes `ts` and `dur`).

Parsing (parsing/trace_load.py) fills these; analyses (analysis/trace_*.py) only read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from itertools import starmap
from operator import attrgetter
from typing import Any

from pydantic import BaseModel, Field

# what a GPU-timeline op is, by HTA's rule: NCCL/RCCL kernels communicate, memcpy/memset move
# memory, every other kernel computes
COMPUTE = "compute"
COMM = "comm"
MEMCPY = "memcpy"
MEMSET = "memset"
GPU_KINDS = (COMPUTE, COMM, MEMCPY, MEMSET)


@dataclass(slots=True, unsafe_hash=True)  # not frozen: a frozen __init__ costs 1.6x
class GpuOp:
    """A kernel, memcpy or memset on one GPU stream."""

    ts: float  # start, µs on the trace clock
    dur: float  # µs, >= 0
    kind: str  # COMPUTE | COMM | MEMCPY | MEMSET
    name: str
    stream: int
    device: int
    correlation: int = -1  # links to the CPU runtime call that launched it; -1 when absent
    index: int = -1  # position of the event in traceEvents, for evidence ("event #N")

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(slots=True, unsafe_hash=True)
class CpuSpan:
    """A complete ("X") CPU-side event: a runtime call, an annotation, or a sync-like op."""

    ts: float
    dur: float
    name: str
    cat: str  # cuda_runtime | cuda_driver | cuda_sync | user_annotation | cpu_op | ...
    tid: int
    correlation: int = -1  # runtime/driver calls: the id their GPU op carries
    index: int = -1

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(slots=True, frozen=True)
class Step:
    """One training iteration: a `ProfilerStep#N` span, or one found from repeated kernels."""

    number: int
    ts: float
    dur: float
    source: str = "ProfilerStep"  # ProfilerStep | kernel-pattern

    @property
    def end(self) -> float:
        return self.ts + self.dur


class TraceMeta(BaseModel):
    path: str  # as given (bundle-relative inside a bundle)
    rank: int | None = None
    world_size: int | None = None
    host: str | None = None
    host_source: str | None = None  # "trace metadata" | "file name" | "folder"
    pid: int | None = None
    devices: list[str] = Field(default_factory=list)  # deviceProperties names
    trace_name: str | None = None  # the `traceName` Kineto wrote (often the output path)
    backend: str | None = None  # distributedInfo.backend
    events_total: int = 0  # traceEvents entries seen
    # when the trace began, seconds since the epoch (UTC), and what says so: "baseTimeNanoseconds"
    # | "event time" | "file name"; None when neither the trace nor its name carries a time
    started_at: float | None = None
    started_from: str | None = None


@dataclass(slots=True)
class Trace:
    meta: TraceMeta
    gpu: list[GpuOp] = field(default_factory=list)  # sorted by ts
    runtime: list[CpuSpan] = field(default_factory=list)  # cuda_runtime/driver/sync, by ts
    annotations: list[CpuSpan] = field(default_factory=list)  # user_annotation + sync-like ops
    steps: list[Step] = field(default_factory=list)  # sorted by ts
    warnings: list[str] = field(default_factory=list)  # one line each, e.g. skipped events

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as rows of plain tuples (a trace loaded in a worker process comes back at a
        fifth of the cost of pickling its objects one by one)."""
        return (_rebuild_trace, (self.meta, list(map(_GPU_ROW, self.gpu)),
                                 list(map(_CPU_ROW, self.runtime)),
                                 list(map(_CPU_ROW, self.annotations)), self.steps,
                                 self.warnings))


_GPU_ROW = attrgetter(*(f.name for f in fields(GpuOp)))
_CPU_ROW = attrgetter(*(f.name for f in fields(CpuSpan)))


def _rebuild_trace(meta: TraceMeta, gpu: list[tuple], runtime: list[tuple],
                   annotations: list[tuple], steps: list[Step], warnings: list[str]) -> Trace:
    return Trace(meta, list(starmap(GpuOp, gpu)), list(starmap(CpuSpan, runtime)),
                 list(starmap(CpuSpan, annotations)), steps, warnings)
