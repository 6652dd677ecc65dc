"""The trace as Kineto writes it: the header and footer, the events in order, plain or
gzip-compressed."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from goodput_agent.evals.kineto.layout import StepLayout, _threads, lay_out
from goodput_agent.evals.kineto.spec import CBID, COMPUTE_STREAM, RankTrace


@lru_cache(maxsize=4096)
def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class _Clock:
    def __init__(self, rt: RankTrace):
        self.offset = rt.clock_us
        self.whole = rt.style == "2.1"

    def __call__(self, t: float) -> str:
        v = t + self.offset
        return str(round(v)) if self.whole else f"{v:.3f}"


class _Writer:
    """Formats events of one rank; ids run on across steps."""

    def __init__(self, rt: RankTrace):
        self.rt, self.ts = rt, _Clock(rt)
        self.ext = 0  # External ids (one per CPU op)
        self.corr = 0  # correlation ids (one per runtime call)
        self.bases: list[int] = []  # per step, the External id before its first CPU op
        self.new = rt.style != "2.1"

    def cpu_events(self, lay: StepLayout) -> Iterator[str]:
        rt, ts = self.rt, self.ts
        self.bases.append(self.ext)
        for op in lay.cpu:
            self.ext += 1
            op.ext = self.ext
            extra = (f', "Record function id": {op.ext}, "Ev Idx": {op.ext - 1}' if self.new
                     else f', "Trace name": "PyTorch Profiler", "Trace iteration": 0, '
                          f'"Profiler Event Index": {op.ext - 1}')
            more = f", {op.args}" if op.args else ""
            yield (f'\n  {{\n    "ph": "X", "cat": "{op.cat}", "name": {_s(op.name)}, '
                   f'"pid": {rt.pid}, "tid": {op.tid},\n    "ts": {ts(op.ts)}, "dur": '
                   f'{_dur(op.dur, self.new)},\n    "args": {{\n'
                   f'      "External id": {op.ext}{extra}{more}\n    }}\n  }},')

    def gpu_events(self, lay: StepLayout, n: int) -> Iterator[str]:
        """Step `n`'s runtime calls and GPU ops (after cpu_events numbered its CPU ops)."""
        rt, ts, dev = self.rt, self.ts, self.rt.device
        for la in lay.launches:
            self.corr += 1
            corr, ext = self.corr, self.bases[n] + la.parent + 1
            at = ts(la.ts)
            yield (f'\n  {{\n    "ph": "X", "cat": "cuda_runtime", "name": "{la.runtime}", '
                   f'"pid": {rt.pid}, "tid": {la.tid},\n    "ts": {at}, "dur": '
                   f'{_dur(la.dur, self.new)},\n    "args": {{\n      "External id": {ext}, '
                   f'"cbid": {CBID[la.runtime]}, "correlation": {corr}\n    }}\n  }},')
            if not la.gpu_cat:
                continue
            yield (f'\n  {{\n    "ph": "s", "id": {corr}, "pid": {rt.pid}, "tid": {la.tid}, '
                   f'"ts": {at},\n    "cat": "ac2g", "name": "ac2g"\n  }},')
            g = ts(la.gpu_ts)
            args = la.args.format(dev=dev, stream=la.stream, corr=corr)
            yield (f'\n  {{\n    "ph": "X", "cat": "{la.gpu_cat}", "name": {_s(la.gpu_name)}, '
                   f'"pid": {dev}, "tid": {la.stream},\n    "ts": {g}, "dur": '
                   f'{_dur(la.gpu_dur, self.new)},\n    "args": {{\n      "External id": '
                   f'{ext}, {args}\n    }}\n  }},')
            yield (f'\n  {{\n    "ph": "f", "id": {corr}, "pid": {dev}, "tid": {la.stream}, '
                   f'"ts": {g},\n    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }},')

    def closing(self, first: float, last: float) -> str:
        rt, ts = self.rt, self.ts
        main, bwd = _threads(rt)
        at = ts(first)
        m = [("process_name", rt.pid, 0, f'"name": "{rt.python}"'),
             ("process_labels", rt.pid, 0, '"labels": "CPU"'),
             ("process_sort_index", rt.pid, 0, f'"sort_index": {rt.pid}'),
             ("process_name", rt.device, 0, f'"name": "{rt.python}"'),
             ("process_labels", rt.device, 0, f'"labels": "GPU {rt.device}"'),
             ("process_sort_index", rt.device, 0, f'"sort_index": {16777216 + rt.device}')]
        for s in (COMPUTE_STREAM, rt.nccl_stream):
            m += [("thread_name", rt.device, s, f'"name": "stream {s} "'),
                  ("thread_sort_index", rt.device, s, f'"sort_index": {s}')]
        for tid, what in ((main, "pt_main_thread"), (bwd, "pt_autograd_0")):
            m += [("thread_name", rt.pid, tid, f'"name": "thread {tid} ({what})"'),
                  ("thread_sort_index", rt.pid, tid, f'"sort_index": {tid}')]
        parts = [f'\n  {{\n    "name": "{n}", "ph": "M", "ts": {at}, "pid": {p}, "tid": {t},\n'
                 f'    "args": {{\n      {a}\n    }}\n  }},' for n, p, t, a in m]
        parts.append(f'\n  {{\n    "ph": "X", "cat": "Trace", "ts": {at}, "dur": '
                     f'{_dur(last - first, self.new)},\n    "pid": "Spans", "tid": '
                     f'"PyTorch Profiler",\n    "name": "PyTorch Profiler (0)",\n    "args": '
                     f'{{\n      "Op count": 0\n    }}\n  }},\n  {{\n    "name": '
                     f'"process_sort_index", "ph": "M", "ts": {at},\n    "pid": "Spans", '
                     f'"tid": 0,\n    "args": {{\n      "sort_index": 536870912\n    }}\n  }},')
        parts.append(f'\n  {{\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", '
                     f'"s": "g",\n    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": '
                     f'{at}\n  }},\n  {{\n    "name": "Record Window End", "ph": "i", "s": "g",'
                     f'\n    "pid": "", "tid": "", "ts": {ts(last)}\n  }}\n  ]')
        return "".join(parts)


def _dur(d: float, decimals: bool) -> str:
    return f"{max(d, 0.0):.3f}" if decimals else str(max(round(d), 0))


def _head(rt: RankTrace) -> str:
    props = ",".join(
        f'\n      {{\n      "id": {i}, "name": {_s(rt.gpu["name"])}, "totalGlobalMem": '
        f'{rt.gpu["totalGlobalMem"]},\n      "computeMajor": {rt.gpu["computeMajor"]}, '
        f'"computeMinor": {rt.gpu["computeMinor"]},\n      "maxThreadsPerBlock": 1024, '
        f'"maxThreadsPerMultiprocessor": 2048,\n      "regsPerBlock": 65536, "warpSize": 32,'
        f'\n      "sharedMemPerBlock": 49152, "numSms": {rt.gpu["numSms"]}\n    , '
        f'"regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, '
        f'"sharedMemPerMultiprocessor": 233472\n    }}' for i in range(rt.devices))
    dist = f'"backend": "nccl", "rank": {rt.rank}, "world_size": {rt.world_size}'
    if rt.style != "2.1":
        ranks = ", ".join(str(r) for r in range(rt.world_size))
        dist += (f', "pg_count": 1, "pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", '
                 f'"backend_config": "cuda:nccl", "pg_size": {rt.world_size}, "ranks": '
                 f'[{ranks}]}}], "nccl_version": "{rt.nccl_version}"')
    text = (f'{{\n  "schemaVersion": 1,\n  "deviceProperties": [{props}\n  ],\n'
            f'  "distributedInfo": {{{dist}}},')
    if rt.host_name:
        text += f'\n  "hostname": {_s(rt.host_name)},'
    if rt.style == "2.6":
        text += f'\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {rt.base_ns},'
    return text + '\n  "traceEvents": ['


def _tail(rt: RankTrace) -> str:
    if rt.style == "2.1":
        return "\n}"
    if rt.style == "2.6":
        return f',\n  "traceName": {_s(rt.trace_name)}\n}}'
    return (f',\n  "traceName": {_s(rt.trace_name)},\n  "displayTimeUnit": "ms",\n'
            f'  "baseTimeNanoseconds": {rt.base_ns}\n}}')


def render(rt: RankTrace) -> Iterator[str]:
    """The trace text in pieces (a step's events per piece)."""
    yield _head(rt)
    w = _Writer(rt)
    free: dict[int, float] = {}
    first = last = None
    for s in rt.steps:
        lay = lay_out(rt, s, free)
        first = s.start_us if first is None else first
        last = lay.end
        yield "".join(w.cpu_events(lay))
    free = {}
    for n, s in enumerate(rt.steps):
        yield "".join(w.gpu_events(lay_out(rt, s, free), n))
    yield w.closing((first or 0.0) - 50.0, (last or 0.0) + 50.0)
    yield _tail(rt)


def write_events(path: Path, events: Iterable[dict[str, Any]], *, rank: int, world_size: int,
                 trace_name: str, base_ns: int, devices: int = 8) -> int:
    """Write events given as dicts (tests build small traces this way) with a Kineto head and
    tail; returns the bytes written before compression."""
    rt = RankTrace(rank=rank, world_size=world_size, pid=0, device=0, devices=devices,
                   base_ns=base_ns, trace_name=trace_name)

    def pieces() -> Iterator[str]:
        yield _head(rt)
        body = ",".join("\n  " + json.dumps(e, ensure_ascii=False) for e in events)
        yield body
        yield "\n  ]" + _tail(rt)
    return _sink(path, pieces())


def write_trace(path: Path, spec: RankTrace | Iterable[dict[str, Any]], *,
                rank: int | None = None, world_size: int | None = None,
                trace_name: str | None = None, base_ns: int | None = None, devices: int = 8,
                level: int = 6) -> int:
    """Write one rank's trace (.json, or .json.gz when the name ends in .gz); returns the bytes
    before compression. `spec`: a RankTrace, or already-made event dicts with the keywords."""
    if isinstance(spec, RankTrace):
        return _sink(path, render(spec), level)
    if rank is None or world_size is None or base_ns is None:
        raise ValueError("events need rank, world_size and base_ns")
    return write_events(path, spec, rank=rank, world_size=world_size,
                        trace_name=trace_name or str(path), base_ns=base_ns, devices=devices)


def _sink(path: Path, pieces: Iterable[str], level: int = 6) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    with open(path, "wb") as raw:
        out: io.BufferedIOBase = (gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="",
                                                compresslevel=level)
                                  if path.suffix == ".gz" else raw)
        buf: list[bytes] = []
        held = 0
        for piece in pieces:
            data = piece.encode("utf-8")
            size += len(data)
            buf.append(data)
            held += len(data)
            if held >= 1 << 20:
                out.write(b"".join(buf))
                buf, held = [], 0
        out.write(b"".join(buf))
        if out is not raw:
            out.close()
    return size
