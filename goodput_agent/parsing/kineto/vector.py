"""The rules of collect.Collector.extend, applied to a whole decoded piece at once.

A piece of 2 MB holds ~7,000 events; reading them one by one in Python costs ~1 µs each. Here
each rule is one pass over a column (a list comprehension to pull a field out of the structs,
then numpy), so the per-event cost is a few attribute reads. The result is the same rows, as
columns: `Chunk`s that Collector.columns joins and sorts.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

import numpy as np
from msgspec import UNSET

from goodput_agent.parsing.kineto.model import COMM, COMPUTE, MEMCPY, MEMSET

KERNEL, MEMCPY_CODE, MEMSET_CODE, RUNTIME, ANNOTATION, CPU_OP, OTHER_DEVICE = range(7)
_GPU_KIND = {MEMCPY_CODE: MEMCPY, MEMSET_CODE: MEMSET}
_COMM_KERNEL = re.compile(r"[nr]ccl", re.IGNORECASE)
STEP_PREFIX = "ProfilerStep#"

Chunk = dict[str, Any]  # field -> numpy array (numbers, masks) or list (text)


@dataclass(slots=True)
class Piece:
    gpu: Chunk
    runtime: Chunk
    annotations: Chunk
    malformed: int = 0
    negative: int = 0
    other_device: int = 0
    pids: Counter = field(default_factory=Counter)
    step_spans: list[tuple[int, int, Any, Any]] = field(default_factory=list)


def gpu_kind(code: int, name: str) -> str:
    if code == KERNEL:
        return COMM if _COMM_KERNEL.search(name) else COMPUTE
    return _GPU_KIND[code]


def id_column(values: list[Any], as_int: Any) -> np.ndarray:
    ints = [v if type(v) is int else as_int(v) for v in values]
    try:
        return np.array(ints, np.int64).reshape(len(ints))
    except OverflowError:  # an id past 64 bits: kept as Python ints
        return np.array(ints, object).reshape(len(ints))


def read_piece(events: list[Any], first: int, complete: type, cats: dict[str, int],
               keep_cpu_op: Any, as_int: Any) -> Piece:
    """The rows of `events` (structs from trace_collect's decoder, the first one at trace
    position `first`; `complete` is the struct of "ph": "X" events), by Collector.extend's
    rules."""
    is_x = np.fromiter((type(e) is complete for e in events), bool, len(events))
    where = np.flatnonzero(is_x)
    events = list(compress(events, is_x.tolist()))
    cat = [e.cat for e in events]
    code_of = {c: cats.get(c, -1) for c in set(cat)}
    code = np.fromiter(map(code_of.__getitem__, cat), np.int8, len(events))
    pos = np.flatnonzero(code >= 0)
    cpu = pos[code[pos] == CPU_OP]
    if len(cpu):  # the bulk of a trace: only sync-like ops, DataLoader and steps are kept
        names = [events[i].name for i in cpu.tolist()]
        keep_of = {nm: nm is not None and keep_cpu_op(nm) for nm in set(names)}
        kept = np.fromiter(map(keep_of.__getitem__, names), bool, len(names))
        pos = np.union1d(pos[code[pos] != CPU_OP], cpu[kept])
    picked = [events[i] for i in pos.tolist()]
    bad = np.fromiter((e.name is None or e.ts is None or e.dur is None for e in picked), bool,
                      len(picked))
    piece = Piece({}, {}, {}, malformed=int(bad.sum()))
    pos, picked = pos[~bad], list(compress(picked, (~bad).tolist()))
    dur = np.array([e.dur for e in picked], np.float64).reshape(len(picked))
    code = code[pos]
    negative = dur < 0
    other = ~negative & (code == OTHER_DEVICE)
    piece.negative, piece.other_device = int(negative.sum()), int(other.sum())
    keep = ~negative & ~other
    pos, code, picked = pos[keep], code[keep], list(compress(picked, keep.tolist()))
    _fill(piece, picked, code, where[pos] + first, as_int)
    return piece


def _times(picked: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ts, dur, and which durations are floats, rounded as HTA rounds ns-resolution events:
    start up, end down, the duration at least 0 (an int then); integer times stay as they are."""
    ts_v, dur_v = [e.ts for e in picked], [e.dur for e in picked]
    ts = np.array(ts_v, np.float64).reshape(len(ts_v))
    dur = np.array(dur_v, np.float64).reshape(len(dur_v))
    ts_float = np.fromiter((type(v) is float for v in ts_v), bool, len(ts_v))
    dur_float = np.fromiter((type(v) is float for v in dur_v), bool, len(dur_v))
    up, end = np.ceil(ts), np.floor(ts + dur)
    dur = np.where(ts_float, np.where(end > up, end - up, 0.0), dur)
    return np.where(ts_float, up, ts), dur, dur_float & ~ts_float


def _fill(piece: Piece, picked: list[Any], code: np.ndarray, index: np.ndarray,
          as_int: Any) -> None:
    ts, dur, dur_float = _times(picked)
    args = [e.args for e in picked]
    correlation = np.array([-1 if a is None or a.correlation is None else a.correlation
                            for a in args], object)
    for kinds, chunk in (((KERNEL, MEMCPY_CODE, MEMSET_CODE), piece.gpu),
                         ((RUNTIME,), piece.runtime), ((ANNOTATION, CPU_OP), piece.annotations)):
        rows = np.flatnonzero(np.isin(code, kinds))
        mine = [picked[i] for i in rows.tolist()]
        chunk.update(ts=ts[rows], dur=dur[rows], dur_float=dur_float[rows],
                     ts_float=np.zeros(len(rows), bool), index=index[rows],
                     correlation=id_column(correlation[rows].tolist(), as_int),
                     name=[e.name for e in mine])
        if kinds[0] == KERNEL:
            margs = [args[i] for i in rows.tolist()]
            pairs = list(zip(code[rows].tolist(), chunk["name"], strict=True))
            kind_of = {pair: gpu_kind(*pair) for pair in set(pairs)}
            chunk["kind"] = list(map(kind_of.__getitem__, pairs))
            chunk["stream"] = id_column([e.tid if a is None or a.stream is UNSET else a.stream
                                    for e, a in zip(mine, margs, strict=True)], as_int)
            chunk["device"] = id_column([e.pid if a is None or a.device is UNSET else a.device
                                    for e, a in zip(mine, margs, strict=True)], as_int)
            continue
        chunk["cat"] = [e.cat for e in mine]
        chunk["tid"] = id_column([e.tid for e in mine], as_int)
        piece.pids.update(e.pid for e in mine
                          if type(e.pid) is int and (kinds[0] != RUNTIME or e.cat != "cuda_sync"))
        if kinds[0] == ANNOTATION:
            _steps(piece, chunk)


def _steps(piece: Piece, chunk: Chunk) -> None:
    for i, name in enumerate(chunk["name"]):
        if name.startswith(STEP_PREFIX) and (number := name[len(STEP_PREFIX):]).isdigit():
            dur = float(chunk["dur"][i]) if chunk["dur_float"][i] else int(chunk["dur"][i])
            piece.step_spans.append((int(chunk["tid"][i]), int(number), int(chunk["ts"][i]),
                                     dur))
