"""Trace events in, columns out: what the loader (load.py) keeps of each event.

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
from itertools import chain
from typing import Annotated, Any, Union

import msgspec
import numpy as np
import orjson
from msgspec import UNSET, UnsetType

from goodput_agent.parsing.kineto.model import (
    COMM,
    COMPUTE,
    CPU_FIELDS,
    GPU_FIELDS,
    MEMCPY,
    MEMSET,
    Columns,
    Step,
)
from goodput_agent.parsing.kineto.vector import Chunk, Piece, id_column, read_piece

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


class _Event(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    """A complete event ("ph": "X"): the only phase whose events are kept."""

    cat: str | None = None
    name: str | None = None
    ts: _Int64 | float | None = None
    dur: _Int64 | float | None = None
    pid: _Id = None
    tid: _Id = None
    args: _Args | None = None


# Every other phase of the Chrome trace format decodes to a struct of its category alone: flows,
# instants and metadata (~40% of a Kineto trace) cost no strings. The category is still read
# because the dict reader counts an event with an unhashable one as malformed, whatever its
# phase; an event without "ph", or with another, fails the decoder and is read as a dict.
_OTHER_PHASES = tuple(msgspec.defstruct(f"_Phase{ord(ph)}", [("cat", str | None, None)],
                                        tag_field="ph", tag=ph, gc=False)
                      for ph in "BEiICbnestfPNODMVvRc()")
_DECODER = msgspec.json.Decoder(list[Union[_Event, *_OTHER_PHASES]])  # noqa: UP007


def decode_piece(buf: bytes, end: int, sink: Collector) -> bool:
    """Read `[buf[:end]]` (whole events) into `sink`; False when it is not valid JSON (a cut in
    the wrong place)."""
    # text both decoders read alike: ASCII (all of `buf`, a little more than the piece), no
    # escapes (orjson refuses a lone surrogate's \\u escape)
    plain = buf.isascii() and (buf.find(b"\\", 0, end) < 0 or buf.find(b"\\u", 0, end) < 0)
    with sink.bracketed(buf, end) as text:
        if plain:
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
        self.pieces: list[Piece] = []  # read a piece at a time, as columns
        self._text = bytearray()  # "[" + piece + "]", one buffer for every piece

    def bracketed(self, buf: bytes, end: int) -> memoryview:
        """`[` + buf[:end] + `]` in a buffer kept from piece to piece (a fresh 2 MB bytes object
        per piece costs more than decoding it); release the view before the next call."""
        n = end + 2
        if len(self._text) < n:
            self._text = bytearray(max(n, 2 * len(self._text)))
        text = self._text
        text[0] = 0x5B
        with memoryview(buf) as whole:
            text[1 : n - 1] = whole[:end]
        text[n - 1] = 0x5D
        return memoryview(text)[:n]

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
        """Events as _Event structs (the types are the decoder's): the same rules, a whole
        piece at a time (trace_vector.read_piece)."""
        piece = read_piece(events, self.count, _Event, _CATS, _keep_cpu_op, _as_int)
        self.count += len(events)
        self.pieces.append(piece)
        self.malformed += piece.malformed
        self.negative += piece.negative
        self.other_device += piece.other_device
        for pid, n in piece.pids.items():
            self.pids[pid] = self.pids.get(pid, 0) + n
        self.step_spans.extend(piece.step_spans)

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

    def gpu_ops(self) -> int:
        return len(self.gpu) + sum(len(p.gpu["ts"]) for p in self.pieces)

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
        return (_join(self.gpu, [p.gpu for p in self.pieces], GPU_FIELDS),
                _join(self.runtime, [p.runtime for p in self.pieces], CPU_FIELDS),
                _join(self.annotations, [p.annotations for p in self.pieces], CPU_FIELDS))


def _rows_chunk(rows: list[tuple], names: tuple[str, ...]) -> Chunk:
    chunk: Chunk = {}
    for name, values in zip(names, zip(*rows, strict=True), strict=True):
        if name in ("ts", "dur"):
            chunk[name] = np.array(values, np.float64)
            chunk[f"{name}_float"] = np.fromiter((type(v) is float for v in values), bool,
                                                 len(values))
        elif name in ("kind", "name", "cat"):
            chunk[name] = list(values)
        else:
            chunk[name] = id_column(list(values), int)
    return chunk


def _join(rows: list[tuple], chunks: list[Chunk], names: tuple[str, ...]) -> Columns:
    """One kind's chunks as Columns, sorted by (ts, trace position): a stable sort by ts."""
    chunks = [c for c in (*chunks, _rows_chunk(rows, names) if rows else {}) if c and len(c["ts"])]
    if not chunks:
        return Columns.of_values({name: [] for name in names})
    index = np.concatenate([c["index"] for c in chunks])
    order = np.lexsort((index, np.concatenate([c["ts"] for c in chunks])))
    numbers, text, floats, words = {}, {}, {}, {}
    for name in names:
        if isinstance(chunks[0][name], list):
            values = list(map(list(chain.from_iterable(c[name] for c in chunks)).__getitem__,
                              order.tolist()))
            for word in dict.fromkeys(values):
                words.setdefault(word, len(words))
            text[name] = np.fromiter(map(words.__getitem__, values), np.int32, len(values))
            continue
        numbers[name] = np.concatenate([c[name] for c in chunks])[order]
        if name in ("ts", "dur"):
            floats[name] = np.concatenate([c[f"{name}_float"] for c in chunks])[order]
    return Columns(numbers, text, list(words), floats)
