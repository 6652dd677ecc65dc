"""Trace events in, columns out: what the loader (trace_load.py) keeps of each event.

A piece of the traceEvents array is decoded by msgspec into small structs that carry only the
fields used (name, cat, ph, ts, dur, pid, tid and args' correlation, device, stream); every
other key (flows' ids, kernel grids, External id...) is skipped by the decoder without becoming
a Python object. Measured on a 101 MB trace: 0.26 s to decode against orjson's 0.66 s for the
whole dicts. Where the structs' types do not fit (an event that is not an object, a timestamp
that is a string) or the text could be read differently (escaped or non-ASCII text), the piece
is decoded by orjson into dicts and read by the same rules, so a trace loads the same either way.

Kept events become rows, and the rows columns (trace_model.Columns), not objects: cpu_op events
(the bulk of a trace), flows, instants and GPU-side annotations are dropped as they are read.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable
from typing import Annotated, Any

import msgspec
import orjson
from msgspec import UNSET, UnsetType

from goodput_agent.parsing.trace_model import (
    COMM,
    COMPUTE,
    CPU_FIELDS,
    GPU_FIELDS,
    MEMCPY,
    MEMSET,
    Columns,
    Step,
)

_KERNEL, _MEMCPY, _MEMSET, _RUNTIME, _ANNOTATION, _CPU_OP, _OTHER_DEVICE = range(7)
_CATS = {
    "kernel": _KERNEL, "Kernel": _KERNEL,
    "gpu_memcpy": _MEMCPY, "Memcpy": _MEMCPY,
    "gpu_memset": _MEMSET, "Memset": _MEMSET,
    "cuda_runtime": _RUNTIME, "Runtime": _RUNTIME, "cuda_driver": _RUNTIME, "cuda_sync": _RUNTIME,
    "user_annotation": _ANNOTATION,
    "cpu_op": _CPU_OP, "Operator": _CPU_OP, "python_function": _CPU_OP,
    "mtia_ccp_events": _OTHER_DEVICE,
}  # fmt: skip
_GPU_KIND = {_MEMCPY: MEMCPY, _MEMSET: MEMSET}
_COMM_KERNEL = re.compile(r"[nr]ccl", re.IGNORECASE)
# CPU ops that wait for the GPU (a device-to-host copy of a scalar or of a data-dependent shape)
SYNC_OPS = frozenset({"aten::item", "aten::_local_scalar_dense", "aten::nonzero",
                      "aten::is_nonzero"})
_STEP_PREFIX = "ProfilerStep#"
_TRAILING_INT = re.compile(r"(\d+)$")


def is_dataloader_span(name: str) -> bool:
    """`enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__` and the like (also the
    python_function form `torch/utils/data/dataloader.py(631): __next__`)."""
    return name.endswith("__next__") and ("DataLoader" in name or "dataloader.py(" in name)


def _keep_cpu_op(name: str) -> bool:
    return (name in SYNC_OPS or name.startswith(_STEP_PREFIX)
            or name.endswith("__next__") and is_dataloader_span(name))


def _as_int(v: Any) -> int:
    """An id as an int: ints as they are, "stream 7" -> 7, "24572" -> 24572, else -1."""
    if type(v) is int:
        return v
    if isinstance(v, str) and (m := _TRAILING_INT.search(v)):
        return int(m[1])
    if type(v) is float and v.is_integer():
        return int(v)
    return -1


# ---------------------------------------------------------------------------------------------
# decoding a piece: typed structs, or dicts where the structs do not fit

_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_Id = _Int64 | str | None


class _Args(msgspec.Struct, gc=False):
    correlation: _Int64 | None = -1
    device: _Id | UnsetType = UNSET
    stream: _Id | UnsetType = UNSET


class _Event(msgspec.Struct, gc=False):
    cat: str | None = None
    name: str | None = None
    ph: str | None = None
    ts: _Int64 | float | None = None
    dur: _Int64 | float | None = None
    pid: _Id = None
    tid: _Id = None
    args: _Args | None = None


_DECODER = msgspec.json.Decoder(list[_Event])


def decode_piece(piece: bytes, sink: Collector) -> bool:
    """Read `[piece]` into `sink`; False when it is not valid JSON (a cut in the wrong place)."""
    text = b"[" + piece + b"]"
    if piece.isascii() and b"\\u" not in piece:  # text both decoders read alike
        try:
            sink.extend_typed(_DECODER.decode(text))
            return True
        except msgspec.ValidationError:
            pass  # types the structs do not take: read as dicts, by the same rules
        except msgspec.DecodeError:
            return False
    try:
        events = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    sink.extend(events)
    return True


# ---------------------------------------------------------------------------------------------
# events -> rows


class Collector:
    """Turns events into rows of GpuOp / CpuSpan values (GPU_FIELDS / CPU_FIELDS order) as they
    stream past."""

    def __init__(self) -> None:
        self.count = 0  # traceEvents entries seen
        self.gpu: list[tuple] = []
        self.runtime: list[tuple] = []
        self.annotations: list[tuple] = []
        self.step_spans: list[tuple[int, int, float, float]] = []  # (tid, number, ts, dur)
        self.negative = 0
        self.malformed = 0
        self.other_device = 0
        self.pids: dict[int, int] = {}
        # per GPU category code: name -> (interned name, kind)
        self._names: tuple[dict[str, tuple[str, str]], ...] = ({}, {}, {})
        self._keep: dict[str, bool] = {}  # cpu_op name -> kept

    def extend(self, events: Iterable[Any]) -> None:
        """Events as dicts (orjson, ijson): anything may be anywhere."""
        cats = _CATS
        index = self.count - 1
        try:
            for e in events:
                index += 1
                try:
                    code = cats.get(e.get("cat"))
                except (AttributeError, TypeError):  # not an object, or an unhashable cat
                    self.malformed += 1
                    continue
                if code is None:
                    continue
                name = e.get("name")
                if code == _CPU_OP and not (type(name) is str and _keep_cpu_op(name)):
                    continue  # the bulk of a trace
                if e.get("ph") != "X":
                    continue
                ts, dur = e.get("ts"), e.get("dur")
                if (type(name) is not str or type(ts) not in (int, float)
                        or type(dur) not in (int, float)):
                    self.malformed += 1
                    continue
                args = e.get("args")
                if type(args) is not dict:
                    args = {}
                correlation = args.get("correlation", -1)
                self._add(code, name, e["cat"], ts, dur, e.get("pid"), e.get("tid"),
                          correlation if type(correlation) is int else -1,
                          args.get("device", e.get("pid")), args.get("stream", e.get("tid")),
                          index)
        finally:
            self.count = index + 1

    def extend_typed(self, events: list[_Event]) -> None:
        """Events as _Event structs: the types are the decoder's, only the values are read."""
        cats, keep = _CATS, self._keep
        index = self.count - 1
        try:
            for e in events:
                index += 1
                code = cats.get(e.cat)
                if code is None:
                    continue
                name = e.name
                if code == _CPU_OP:
                    if name is None:
                        continue
                    kept = keep.get(name)
                    if kept is None:
                        kept = keep[name] = _keep_cpu_op(name)
                    if not kept:
                        continue  # the bulk of a trace
                if e.ph != "X":
                    continue
                ts, dur = e.ts, e.dur
                if name is None or ts is None or dur is None:
                    self.malformed += 1
                    continue
                args = e.args
                if args is None:
                    correlation, device, stream = -1, e.pid, e.tid
                else:
                    correlation = args.correlation if args.correlation is not None else -1
                    device = e.pid if args.device is UNSET else args.device
                    stream = e.tid if args.stream is UNSET else args.stream
                self._add(code, name, e.cat, ts, dur, e.pid, e.tid, correlation, device, stream,
                          index)
        finally:
            self.count = index + 1

    def _add(self, code: int, name: str, cat: str, ts: float, dur: float, pid: Any, tid: Any,
             correlation: int, device: Any, stream: Any, index: int) -> None:
        if dur < 0:
            self.negative += 1
            return
        if code == _OTHER_DEVICE:
            self.other_device += 1
            return
        if type(ts) is float:  # HTA's rounding of ns-resolution events
            end = math.floor(ts + dur)
            ts = math.ceil(ts)
            dur = end - ts if end > ts else 0
        if code <= _MEMSET:
            names = self._names[code]
            known = names.get(name)
            if known is None:
                kind = (COMM if _COMM_KERNEL.search(name) else COMPUTE) \
                    if code == _KERNEL else _GPU_KIND[code]
                known = names[name] = (sys.intern(name), kind)
            self.gpu.append((ts, dur, known[1], known[0],
                             stream if type(stream) is int else _as_int(stream),
                             device if type(device) is int else _as_int(device),
                             correlation, index))
            return
        tid = tid if type(tid) is int else _as_int(tid)
        row = (ts, dur, sys.intern(name), sys.intern(cat), tid, correlation, index)
        if type(pid) is int and (code != _RUNTIME or cat != "cuda_sync"):
            self.pids[pid] = self.pids.get(pid, 0) + 1
        if code == _RUNTIME:
            self.runtime.append(row)
            return
        if name.startswith(_STEP_PREFIX):
            number = name[len(_STEP_PREFIX):]
            if number.isdigit():
                self.step_spans.append((tid, int(number), ts, dur))
        self.annotations.append(row)

    def steps(self) -> list[Step]:
        """ProfilerStep spans of the thread that has the most, identical duplicates once."""
        by_tid: dict[int, set[tuple[int, float, float]]] = {}
        for tid, number, ts, dur in self.step_spans:
            by_tid.setdefault(tid, set()).add((number, ts, dur))
        if not by_tid:
            return []
        spans = max(by_tid.values(), key=len)
        return [Step(number, ts, dur) for number, ts, dur in sorted(spans, key=lambda s: s[1])]

    def columns(self) -> tuple[Columns, Columns, Columns]:
        """The GPU ops, runtime calls and annotations, each sorted by ts (ties in trace order)."""
        return (_columns(self.gpu, GPU_FIELDS), _columns(self.runtime, CPU_FIELDS),
                _columns(self.annotations, CPU_FIELDS))


def _columns(rows: list[tuple], names: tuple[str, ...]) -> Columns:
    rows.sort(key=_first)  # stable: equal times keep trace order
    values = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    return Columns.of_values(dict(zip(names, values, strict=True)))


def _first(row: tuple) -> Any:
    return row[0]

