"""One profiler (Kineto) trace in memory: only the events the slowdown analyses use, in compact
form, on the trace's own clock (microseconds, as Kineto writes `ts` and `dur`).

Parsing (parsing/kineto/load.py) fills these; analyses (analysis/slowdown/trace_*.py) only
read them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from itertools import starmap
from operator import attrgetter
from typing import Any

import numpy as np
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


GPU_FIELDS = tuple(f.name for f in fields(GpuOp))
CPU_FIELDS = tuple(f.name for f in fields(CpuSpan))
_TEXT_FIELDS = frozenset({"kind", "name", "cat"})


_TIMES = ("ts", "dur")  # float64 columns, each with a mask of the values that were floats


@dataclass(slots=True)
class Columns:
    """Events of one kind (GpuOp or CpuSpan fields) as columns, in the objects' order: numbers as
    numpy arrays (ts and dur float64, ids int64), text as int32 codes into `words`. The loader
    keeps a trace this way, not as one object per event; `rows` gives the objects' exact values
    back (a time that was an int comes back an int)."""

    numbers: dict[str, np.ndarray]
    text: dict[str, np.ndarray]  # kind, name, cat -> int32 codes into words
    words: list[str]
    floats: dict[str, np.ndarray]  # ts, dur -> bool: this value was a float

    def __len__(self) -> int:
        return len(self.numbers["ts"])

    def codes_of(self, word: str) -> int:
        """The code of `word`, -1 when no event has it."""
        try:
            return self.words.index(word)
        except ValueError:
            return -1

    def column(self, name: str) -> list[Any]:
        if name in self.text:
            return [self.words[i] for i in self.text[name].tolist()]
        values = self.numbers[name]
        if name not in self.floats:
            return values.tolist()
        ints = values.astype(np.int64).tolist()
        if not self.floats[name].any():
            return ints
        return [f if is_float else i for i, f, is_float
                in zip(ints, values.tolist(), self.floats[name].tolist(), strict=True)]

    def rows(self, names: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
        return zip(*(self.column(n) for n in names), strict=True)

    @classmethod
    def of_objects(cls, items: Sequence[Any], names: tuple[str, ...]) -> Columns:
        """The columns of GpuOp or CpuSpan objects (for traces built as objects)."""
        return cls.of_values({name: list(map(attrgetter(name), items)) for name in names})

    @classmethod
    def of_values(cls, values: dict[str, Sequence[Any]]) -> Columns:
        words: dict[str, int] = {}
        numbers, text, floats = {}, {}, {}
        for name, column in values.items():
            n = len(column)
            if name in _TEXT_FIELDS:
                text[name] = np.fromiter((words.setdefault(v, len(words)) for v in column),
                                         np.int32, n)
            elif name in _TIMES:
                numbers[name] = np.array(column, np.float64).reshape(n)
                floats[name] = np.fromiter((type(v) is float for v in column), bool, n)
            else:
                numbers[name] = _int_column(column)
        return cls(numbers, text, list(words), floats)


def _int_column(values: Sequence[int]) -> np.ndarray:
    try:
        return np.array(values, np.int64).reshape(len(values))
    except OverflowError:  # an id past 64 bits (hand-made JSON): kept as Python ints
        return np.array(values, object).reshape(len(values))


class Trace:
    """One rank's trace: GPU ops, runtime calls, annotations (each sorted by ts) and steps. A
    loaded trace holds its events as Columns and makes the objects only when an analysis asks
    for them (the HTA metrics read the columns)."""

    __slots__ = ("meta", "steps", "warnings", "_gpu", "_runtime", "_annotations", "_columns")

    def __init__(self, meta: TraceMeta, gpu: list[GpuOp] | None = None,
                 runtime: list[CpuSpan] | None = None,
                 annotations: list[CpuSpan] | None = None, steps: list[Step] | None = None,
                 warnings: list[str] | None = None, *,
                 columns: tuple[Columns, Columns, Columns] | None = None) -> None:
        self.meta = meta
        self.steps = steps if steps is not None else []
        self.warnings = warnings if warnings is not None else []  # one line each
        self._columns = columns  # (gpu, runtime, annotations) as the loader kept them
        self._gpu = gpu if gpu is not None or columns else []
        self._runtime = runtime if runtime is not None or columns else []
        self._annotations = annotations if annotations is not None or columns else []

    @property
    def gpu(self) -> list[GpuOp]:  # sorted by ts
        if self._gpu is None:
            self._gpu = list(starmap(GpuOp, self._columns[0].rows(GPU_FIELDS)))
        return self._gpu

    @gpu.setter
    def gpu(self, ops: list[GpuOp]) -> None:
        self._gpu, self._columns = ops, None

    @property
    def runtime(self) -> list[CpuSpan]:  # cuda_runtime/driver/sync, by ts
        if self._runtime is None:
            self._runtime = list(starmap(CpuSpan, self._columns[1].rows(CPU_FIELDS)))
        return self._runtime

    @runtime.setter
    def runtime(self, spans: list[CpuSpan]) -> None:
        self._runtime, self._columns = spans, None

    @property
    def annotations(self) -> list[CpuSpan]:  # user_annotation + sync-like ops, by ts
        if self._annotations is None:
            self._annotations = list(starmap(CpuSpan, self._columns[2].rows(CPU_FIELDS)))
        return self._annotations

    @annotations.setter
    def annotations(self, spans: list[CpuSpan]) -> None:
        self._annotations, self._columns = spans, None

    def gpu_columns(self) -> Columns:
        """The GPU ops as columns: the loader's, or made from the objects."""
        return self._columns[0] if self._columns else Columns.of_objects(self.gpu, GPU_FIELDS)

    def runtime_columns(self) -> Columns:
        return self._columns[1] if self._columns else \
            Columns.of_objects(self.runtime, CPU_FIELDS)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as columns (a trace loaded in a worker process comes back as a few arrays,
        not as one object per event)."""
        columns = self._columns or (Columns.of_objects(self.gpu, GPU_FIELDS),
                                    Columns.of_objects(self.runtime, CPU_FIELDS),
                                    Columns.of_objects(self.annotations, CPU_FIELDS))
        return (_rebuild_trace, (self.meta, columns, self.steps, self.warnings))


def _rebuild_trace(meta: TraceMeta, columns: tuple[Columns, Columns, Columns],
                   steps: list[Step], warnings: list[str]) -> Trace:
    return Trace(meta, steps=steps, warnings=warnings, columns=columns)
