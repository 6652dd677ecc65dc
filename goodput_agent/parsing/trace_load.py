"""Load a PyTorch profiler (Kineto) trace into a compact `Trace`, streaming, in bounded memory.

Fast path: the bytes of the `traceEvents` array are cut into ~8 MB pieces at event boundaries
(`}` `,` `{`, any whitespace between) and each piece is parsed as `[piece]`. A piece
parses only when both of its ends are real boundaries between events (a cut inside a string
leaves a string open, a cut inside a nested object leaves a brace open), so a wrong cut is always
detected; it is then re-cut by an exact scan of strings and brackets (`_scan`). Pieces are
decoded into only the fields used (trace_collect.py: msgspec structs, orjson where they do not
fit). The top-level
keys before the array (the head) and after it (the tail) are parsed on their own. When the
layout defeats even that, ijson reads the whole file (`fast=False` forces it).

Each kept event becomes a row of a GpuOp's or CpuSpan's values, and the rows columns (numpy;
the objects are made only when an analysis asks for them); everything the analyses do not use
(cpu_op events, flows, instants, GPU-side annotations) is dropped as it is read. Timestamps
stay on the trace clock in µs; fractional-µs (ns-resolution) events are rounded as HTA does:
start up, end down (its `round_down_time_stamps`), the duration clamped at 0.

Decisions:
- A trace cut short (truncated file, gzip stream cut or corrupt) keeps the events read before
  the cut, with one warning line saying where it stops; when no GPU op was read before the cut
  the trace is useless and `TraceProblem` is raised instead.
- MTIA device events (`mtia_ccp_events`: DMA requests, event waits) are not CUDA/HIP kernels and
  are not loaded: such a trace loads as GPU-less, with its device events counted in the warning.
- Every CPU runtime/driver call is kept (not only launches and syncs): analyses may look for
  cudaMalloc, cudaStreamWaitEvent or polling loops. Of the cpu_op / python_function events only
  sync-like ops, the DataLoader `__next__` spans and ProfilerStep spans are kept.
"""

from __future__ import annotations

import gc
import os
import re
import zlib
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import ijson
import orjson

from goodput_agent.parsing.base import ParseError
from goodput_agent.parsing.trace_collect import (
    SYNC_OPS,
    Collector,
    decode_piece,
    is_dataloader_span,
)
from goodput_agent.parsing.trace_model import Trace, TraceMeta

__all__ = ["SYNC_OPS", "TraceProblem", "is_dataloader_span", "load_trace", "load_traces"]

PIECE_BYTES = 2 * 1024 * 1024  # one orjson.loads; also the read block size (bounds memory)
_TAIL_BYTES = 256 * 1024  # the last stretch of the array, scanned exactly to find where it ends
_RAW_BYTES = 1024 * 1024  # compressed bytes fed to zlib at a time
_MAX_HEAD = 64 * 1024 * 1024  # top-level keys before traceEvents
_MAX_EVENT = 256 * 1024 * 1024  # one event larger than this: leave it to ijson


class TraceProblem(ParseError):
    """A trace that cannot be loaded; the message is one line naming the file and the problem."""


class _Fallback(Exception):
    """The fast path cannot read this layout; ijson reads the whole file instead."""


# ---------------------------------------------------------------------------------------------
# bytes in: plain or gzip (by magic number), decompressed block by block


class _Source:
    """Decompressed blocks of a file; stops (returns b"") at a gzip error and records it."""

    def __init__(self, fh: BinaryIO):
        self._fh = fh
        self.problem: str | None = None
        self.offset = 0  # decompressed bytes handed out so far
        magic = fh.read(2)
        self._gz = magic == b"\x1f\x8b"
        self._pending = magic
        self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS) if self._gz else None

    def read(self, size: int = -1) -> bytes:
        """The next block (its size is the source's, not `size`); b"" at the end."""
        if size == 0:  # ijson probes the type of the stream with read(0)
            return b""
        block = self._gz_block() if self._gz else self._plain_block()
        self.offset += len(block)
        return block

    def _plain_block(self) -> bytes:
        if self._pending:
            block, self._pending = self._pending + self._fh.read(PIECE_BYTES), b""
            return block
        return self._fh.read(PIECE_BYTES)

    def _gz_block(self) -> bytes:
        while self._zlib is not None:
            d = self._zlib
            data = d.unconsumed_tail or self._pending or self._fh.read(_RAW_BYTES)
            self._pending = b""
            if not data:
                if not d.eof:
                    self.problem = "gzip stream cut short"
                self._zlib = None
                return d.flush() if not d.eof else b""
            try:
                out = d.decompress(data, PIECE_BYTES)
            except zlib.error as exc:
                reason = str(exc).rsplit(": ", 1)[-1]
                self.problem = f"corrupt gzip data ({reason})"
                self._zlib = None
                return b""
            if d.eof:  # another gzip member may follow (concatenated .gz files)
                rest = d.unused_data
                if rest.strip(b"\x00"):
                    self._zlib, self._pending = zlib.decompressobj(16 + zlib.MAX_WBITS), rest
                else:
                    self._zlib = None
            if out:
                return out
        return b""


# ---------------------------------------------------------------------------------------------
# the head (top-level keys before traceEvents) and the exact scanner

_KEY = re.compile(rb'"traceEvents"\s*:\s*')
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}"]', re.DOTALL)


def head_keys(buf: bytes, whole: bool) -> dict[str, Any]:
    """The top-level keys (but traceEvents) readable from the start of a trace, best effort: all
    of them when `buf` is the `whole` file, else those before traceEvents."""
    if whole:
        try:
            top = orjson.loads(buf)
        except orjson.JSONDecodeError:
            top = None
        if isinstance(top, dict):
            top.pop("traceEvents", None)
            return top
    try:
        head = split_head(buf)
    except _Fallback:
        return {}
    return head[0] if head else {}


def split_head(buf: bytes) -> tuple[dict[str, Any], int] | None:
    """The top-level keys before `"traceEvents":` and the offset of its value; None when the key
    is not in `buf`. Raises _Fallback when the text before the key is not a JSON object's start
    (the key was nested, or the head is not plain JSON)."""
    m = _KEY.search(buf)
    if m is None or m.end() >= len(buf):
        return None
    start = buf.find(b"{")
    before = buf[start + 1 : m.start()].rstrip()
    if before.endswith(b","):
        before = before[:-1]
    try:
        top = orjson.loads(b"{" + before + b"}")
    except orjson.JSONDecodeError:
        raise _Fallback from None
    return top, m.end()


def _scan(buf: bytes, start: int = 0) -> tuple[int | None, int, bool]:
    """Walk `buf` from an event boundary inside the traceEvents array: (offset of the `]` closing
    the array or None, offset of the last `}` closing a whole event or -1, malformed)."""
    depth, last = 0, -1
    for m in _TOKEN.finditer(buf, start):
        c = buf[m.start()]
        if c == 0x22:  # '"'
            if m.end() - m.start() == 1:  # a string left open: the data stops inside it
                return None, last, False
            continue
        if c in (0x7B, 0x5B):  # { [
            depth += 1
            continue
        depth -= 1
        if depth == 0 and c == 0x7D:
            last = m.start()
        elif depth < 0:
            return (m.start(), last, False) if c == 0x5D else (None, last, True)
    return None, last, False


def _start_problem(buf: bytes) -> str | None:
    """Why the start of a file is not a Kineto trace object, or None when it may be one."""
    text = buf.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return "empty file"
    if text[:1] == b"[":
        return "a JSON array, not a Kineto trace object (no traceEvents array)"
    if text[:1] != b"{":
        shown = text[:20].decode("utf-8", errors="replace").split("\n")[0]
        return f"not JSON (starts with {shown!r})"
    return None


# ---------------------------------------------------------------------------------------------
# the fast path


def _emit(buf: bytes, end: int, sink: Collector) -> bool:
    return decode_piece(buf, end, sink)


def _tail_keys(tail: bytes) -> dict[str, Any]:
    text = tail.strip()
    if text == b"}":
        return {}
    if text.startswith(b",") and text.endswith(b"}"):
        try:
            top = orjson.loads(b"{" + text[1:])
        except orjson.JSONDecodeError:
            raise _Fallback from None
        if isinstance(top, dict):
            return top
    raise _Fallback


def _read_fast(src: _Source, sink: Collector) -> tuple[dict[str, Any], str | None]:
    buf, checked = b"", False
    while True:
        block = src.read()
        buf += block
        if not checked and (buf.strip() or not block):
            if problem := _start_problem(buf):
                raise _Problem(src.problem or problem)
            checked = True
        if head := split_head(buf):
            break
        if not block:
            try:  # the whole file is in `buf`: a JSON object without the key
                whole = orjson.loads(buf)
            except orjson.JSONDecodeError:
                raise _Fallback from None  # ijson tells what it is
            if isinstance(whole, dict) and "traceEvents" not in whole:
                raise _Problem("no traceEvents array")
            raise _Fallback
        if len(buf) > _MAX_HEAD:
            raise _Problem(f"no traceEvents array in the first {_MAX_HEAD >> 20} MB")
    top, at = head
    if buf[at : at + 1] != b"[":
        raise _Fallback  # not a list, or odd spacing: ijson names what it is
    buf = buf[at + 1 :]
    eof, need_sep, want = False, False, PIECE_BYTES + _TAIL_BYTES
    while True:
        blocks = [buf]
        size = len(buf)
        while not eof and size < want:
            block = src.read()
            if block:
                blocks.append(block)
                size += len(block)
            else:
                eof = True
        buf = b"".join(blocks) if len(blocks) > 1 else buf
        want = PIECE_BYTES + _TAIL_BYTES
        if need_sep and (stripped := buf.lstrip()):  # the scan cut right after an event
            buf, need_sep = stripped[1:] if stripped[:1] == b"," else stripped, False
        if eof and len(buf) <= _TAIL_BYTES:
            break
        m = _BOUNDARY.search(buf, len(buf) - _TAIL_BYTES)
        if m and _emit(buf, m.start() + 1, sink):
            buf = buf[m.end() - 1 :]
            continue
        end, last, bad = _scan(buf)
        if bad:
            raise _Fallback
        if end is not None:
            return _finish_array(buf, end, src, sink, top)
        if last >= 0:
            if not _emit(buf, last + 1, sink):
                raise _Fallback
            buf, need_sep = buf[last + 1 :], True
        elif eof:
            break
        elif len(buf) > _MAX_EVENT:
            raise _Fallback
        else:
            want = len(buf) + PIECE_BYTES  # one event longer than the window: read on
    end, last, bad = _scan(buf)
    if bad:
        raise _Fallback
    if end is not None:
        return _finish_array(buf, end, src, sink, top)
    if last >= 0 and not _emit(buf, last + 1, sink):
        raise _Fallback
    return top, _cut_problem(src, sink.count)


def _finish_array(buf: bytes, end: int, src: _Source, sink: Collector,
                  top: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    if not _emit(buf, end, sink):
        raise _Fallback
    rest = [buf[end + 1 :]]
    while block := src.read():
        rest.append(block)
    tail = b"".join(rest)
    if src.problem:  # the array is whole but the file stops (or breaks) after it
        return top, f"{src.problem} after the traceEvents array"
    top.update(_tail_keys(tail))
    return top, None


def _cut_problem(src: _Source, count: int) -> str:
    where = f"ends inside traceEvents after {count} events"
    return f"{where} ({src.problem})" if src.problem else f"{where} (truncated?)"


class _Problem(Exception):
    """The file is not a loadable trace (message without the file name)."""


# ---------------------------------------------------------------------------------------------
# the ijson path


def _ijson_message(exc: Exception) -> str:
    msg = str(exc)
    if msg[:2] in ("b'", 'b"'):
        msg = msg[2:]
    return msg.split("\n")[0].split("\\n")[0].strip().rstrip(".")


def _top_level_ijson(src: _Source) -> tuple[dict[str, Any], str, str | None]:
    """Every top-level value but traceEvents; what traceEvents is (absent | list | complete |
    <type>); and the JSON error that stopped the read, if any."""
    top: dict[str, Any] = {}
    events, key, builder, error = "absent", None, None, None
    try:
        for prefix, event, value in ijson.parse(src, use_float=True):
            if prefix == "":
                if event == "map_key":
                    if builder is not None:
                        top[key] = builder.value
                    key, builder = value, None
                    if key == "traceEvents":
                        events = "pending"
                    else:
                        builder = ijson.ObjectBuilder()
                elif event == "end_map":
                    if builder is not None:
                        top[key] = builder.value
                    builder = None
                elif event == "start_array":
                    raise _Problem("a JSON array, not a Kineto trace object (no traceEvents array)")
                elif event != "start_map":
                    raise _Problem("a JSON scalar, not a Kineto trace object")
            elif builder is not None:
                builder.event(event, value)
            elif events == "pending" and prefix == "traceEvents":
                events = "list" if event == "start_array" else event.removeprefix("start_")
            elif events == "list" and prefix == "traceEvents" and event == "end_array":
                events = "complete"
    except ijson.JSONError as exc:
        error = _ijson_message(exc)
    return top, events, error


def _read_ijson(open_source: Callable[[], _Source],
                sink: Collector) -> tuple[dict[str, Any], str | None]:
    src = open_source()
    head = src.read()
    if problem := _start_problem(head[:64]):
        raise _Problem(src.problem or problem)
    src = open_source()
    top, events, error = _top_level_ijson(src)
    if events == "absent":
        if src.problem or (error and "premature EOF" in error):
            raise _Problem(f"ends before any traceEvents array ({src.problem or 'truncated?'})")
        raise _Problem(f"not valid JSON ({error})" if error else "no traceEvents array")
    if events not in ("pending", "list", "complete"):
        raise _Problem(f"traceEvents is not a list (it is {_article(events)})")
    src = open_source()
    try:
        sink.extend(ijson.items(src, "traceEvents.item", use_float=True))
    except ijson.JSONError as exc:
        error = error or _ijson_message(exc)
    if events == "complete":
        return top, (f"{src.problem} after the traceEvents array" if src.problem else None)
    if src.problem or error is None or "premature EOF" in error:
        return top, _cut_problem(src, sink.count)
    return top, f"invalid JSON inside traceEvents after {sink.count} events ({error})"


def _article(kind: str) -> str:
    names = {"map": "an object", "string": "a string", "number": "a number",
             "boolean": "a boolean", "null": "null"}
    return names.get(kind, kind)


# ---------------------------------------------------------------------------------------------
# metadata

_HANDLER_NAME = re.compile(r"^(?P<host>.+)_(?P<pid>\d+)\.(?P<ms>\d{10,})"
                           r"\.pt\.trace\.json(?:\.gz)?$")


def host_from_filename(name: str) -> str | None:
    """The host in a torch.profiler.tensorboard_trace_handler file name,
    `<hostname>_<pid>.<time ms>.pt.trace.json[.gz]`; None for other names (a user-given
    worker name has no `_<pid>` and is not taken for a host)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    m = _HANDLER_NAME.match(base)
    if m is None or m["host"].isdigit():
        return None
    return m["host"]


_EPOCH_US = 1e15  # event times at or above this are microseconds since the epoch (2001 on)
_EPOCH_NS = 1e18  # ...and a baseTimeNanoseconds at or above this, nanoseconds since it


def started_at(top: dict[str, Any], first_ts: float | None, name: str
               ) -> tuple[float | None, str | None]:
    """When the trace began (epoch seconds) and from what: Kineto 2.4+ writes event times
    relative to `baseTimeNanoseconds`, older Kineto writes epoch microseconds; else the
    millisecond stamp tensorboard_trace_handler puts in the file name."""
    base = top.get("baseTimeNanoseconds")
    if first_ts is not None and first_ts >= _EPOCH_US:
        return first_ts / 1e6, "event time"
    if first_ts is not None and isinstance(base, int | float) and base >= _EPOCH_NS:
        return base / 1e9 + first_ts / 1e6, "baseTimeNanoseconds"
    m = _HANDLER_NAME.match(name.replace("\\", "/").rsplit("/", 1)[-1])
    if m is not None and len(m["ms"]) == 13:
        return int(m["ms"]) / 1e3, "file name"
    return None, None


def _text(v: Any, limit: int = 255) -> str | None:
    return v.strip()[:limit] if isinstance(v, str) and v.strip() else None


def _strict_int(v: Any) -> int | None:
    if type(v) is int:
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return None


def trace_meta(top: dict[str, Any], path: str, node_hint: str | None = None) -> TraceMeta:
    """What the top-level keys and the file name say about the trace's rank, host and devices."""
    dist = top.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    rank = _strict_int(dist.get("rank"))
    if rank is None:
        # imported here: the log parsers cost a trace-only process ~0.1 s to import
        from goodput_agent.parsing.job_log import rank_from_filename

        rank = rank_from_filename(PurePosixPath(path.replace("\\", "/")).name)
    devices_raw = top.get("deviceProperties") or top.get("computeProperties") or []
    devices = [d["name"] for d in devices_raw if isinstance(d, dict) and _text(d.get("name"))] \
        if isinstance(devices_raw, list) else []
    host, source = _text(top.get("host_name")) or _text(top.get("hostname")), "trace metadata"
    if host is None:
        host, source = host_from_filename(path), "file name"
    if host is None:
        host, source = node_hint, "folder"
    return TraceMeta(path=path, rank=rank, world_size=_strict_int(dist.get("world_size")),
                     host=host, host_source=source if host else None,
                     devices=devices, trace_name=_text(top.get("traceName"), 1024),
                     backend=_text(dist.get("backend")))


# ---------------------------------------------------------------------------------------------
# the entry point


def load_trace(path: Path, rel_path: str | None = None, node_hint: str | None = None, *,
               fast: bool = True) -> Trace:
    """The trace's GPU ops, runtime calls, annotations and steps; TraceProblem when unreadable.

    `fast=False` skips the chunked orjson path and reads with ijson only (same result)."""
    name = rel_path or str(path)
    collecting = gc.isenabled()
    gc.disable()  # millions of short-lived acyclic dicts: cyclic collection would double the time
    try:
        with path.open("rb") as fh:
            sink = Collector()
            try:
                if not fast:
                    raise _Fallback
                top, problem = _read_fast(_Source(fh), sink)
            except _Fallback:
                sink = Collector()

                def reopen() -> _Source:
                    fh.seek(0)
                    return _Source(fh)

                top, problem = _read_ijson(reopen, sink)
    except _Problem as exc:
        raise TraceProblem(f"{name}: {exc}") from None
    except OSError as exc:
        raise TraceProblem(f"{name}: cannot read ({exc.strerror or exc})") from None
    finally:
        if collecting:
            gc.enable()
    return _build(top, problem, sink, name, node_hint)


PARALLEL_BYTES = 48 * 1024 * 1024  # traces bigger than this together load on every core


def _load_or_problem(path: Path, rel_path: str | None, node_hint: str | None
                     ) -> Trace | ParseError:
    try:
        return load_trace(path, rel_path, node_hint)
    except ParseError as exc:
        return exc


def load_traces(jobs: Sequence[tuple[Path, str | None, str | None]]) -> list[Trace | ParseError]:
    """`load_trace(path, rel_path, node_hint)` of each job, in job order, a ParseError where a
    trace cannot be loaded. Big traces load on every core: worker processes take them biggest
    first, and this process loads one itself whenever every worker is busy."""
    sizes = [p.stat().st_size if p.is_file() else 0 for p, _, _ in jobs]
    cores = os.cpu_count() or 1
    if len(jobs) < 2 or cores < 2 or sum(sizes) < PARALLEL_BYTES:
        return [_load_or_problem(*job) for job in jobs]
    out: list[Trace | ParseError | None] = [None] * len(jobs)
    pending = deque(sorted(range(len(jobs)), key=lambda k: -sizes[k]))
    workers = min(cores, len(jobs)) - 1
    running: dict[Future, int] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        while pending or running:
            while pending and len(running) < workers:
                k = pending.popleft()
                running[pool.submit(_load_or_problem, *jobs[k])] = k
            if pending:  # every worker is busy: load one here
                k = pending.popleft()
                out[k] = _load_or_problem(*jobs[k])
                done = [f for f in running if f.done()]
            else:
                done = list(wait(running, return_when=FIRST_COMPLETED).done)
            for f in done:
                out[running.pop(f)] = f.result()
    return out  # type: ignore[return-value] - every slot is filled


def _build(top: dict[str, Any], problem: str | None, sink: Collector, name: str,
           node_hint: str | None) -> Trace:
    if problem and not sink.gpu_ops():
        raise TraceProblem(f"{name}: {problem}, before any GPU event")
    meta = trace_meta(top, name, node_hint)
    meta.events_total = sink.count
    if sink.pids:
        meta.pid = max(sink.pids.items(), key=lambda kv: kv[1])[0]
    columns = sink.columns()
    trace = Trace(meta=meta, steps=sink.steps(), columns=columns)
    firsts = [c.column("ts")[0] for c in columns if len(c)]
    meta.started_at, meta.started_from = started_at(top, min(firsts, default=None), name)
    if problem:
        trace.warnings.append(f"{name}: {problem}; loaded the events before that")
    if sink.negative:
        trace.warnings.append(f"{name}: skipped {sink.negative} events with negative duration")
    if sink.malformed:
        trace.warnings.append(f"{name}: skipped {sink.malformed} malformed events "
                              "(not objects, or without name/ts/dur)")
    if not sink.gpu_ops():
        extra = f"; {sink.other_device} MTIA device events not analysed" \
            if sink.other_device else ""
        if sink.negative:
            extra += f"; {sink.negative} events skipped for a negative duration"
        trace.warnings.append(f"{name}: no GPU kernels (CPU-only trace){extra}")
    return trace
