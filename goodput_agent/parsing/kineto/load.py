"""Load a PyTorch profiler (Kineto) trace into a compact `Trace`, streaming, in bounded memory.

Fast path: the bytes of the `traceEvents` array are cut into ~8 MB pieces at event boundaries
(`}` `,` `{`, any whitespace between) and each piece is parsed as `[piece]`. A piece
parses only when both of its ends are real boundaries between events (a cut inside a string
leaves a string open, a cut inside a nested object leaves a brace open), so a wrong cut is always
detected; it is then re-cut by an exact scan of strings and brackets
(`file_bytes.exact_scan`). Pieces are decoded into only the fields used (collect.py:
msgspec structs, orjson where they do not fit). The top-level keys before the array (the head)
and after it (the tail) are parsed on their own. When the
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
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import ijson
import orjson

from goodput_agent.core.limits import human, limits
from goodput_agent.parsing.base import ParseError
from goodput_agent.parsing.kineto.collect import (
    SYNC_OPS,
    Collector,
    decode_piece,
    is_dataloader_span,
)
from goodput_agent.parsing.kineto.file_bytes import (
    BOUNDARY,
    PIECE_BYTES,
    Fallback,
    Source,
    TooBig,
    exact_scan,
    split_head,
    start_problem,
)
from goodput_agent.parsing.kineto.meta import started_at, trace_meta
from goodput_agent.parsing.kineto.model import Trace

__all__ = ["SYNC_OPS", "TraceProblem", "is_dataloader_span", "load_trace", "load_traces"]

_TAIL_BYTES = 256 * 1024  # the last stretch of the array, scanned exactly to find where it ends
_MAX_HEAD = 64 * 1024 * 1024  # top-level keys before traceEvents
_MAX_EVENT = 256 * 1024 * 1024  # one event larger than this: leave it to ijson


class TraceProblem(ParseError):
    """A trace that cannot be loaded; the message is one line naming the file and the problem."""


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
            raise Fallback from None
        if isinstance(top, dict):
            return top
    raise Fallback


def _read_fast(src: Source, sink: Collector) -> tuple[dict[str, Any], str | None]:
    buf, checked = b"", False
    while True:
        block = src.read()
        buf += block
        if not checked and (buf.strip() or not block):
            if problem := start_problem(buf):
                raise _Problem(src.problem or problem)
            checked = True
        if head := split_head(buf):
            break
        if not block:
            try:  # the whole file is in `buf`: a JSON object without the key
                whole = orjson.loads(buf)
            except orjson.JSONDecodeError:
                raise Fallback from None  # ijson tells what it is
            if isinstance(whole, dict) and "traceEvents" not in whole:
                raise _Problem("no traceEvents array")
            raise Fallback
        if len(buf) > _MAX_HEAD:
            raise _Problem(f"no traceEvents array in the first {_MAX_HEAD >> 20} MB")
    top, at = head
    if buf[at : at + 1] != b"[":
        raise Fallback  # not a list, or odd spacing: ijson names what it is
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
        m = BOUNDARY.search(buf, len(buf) - _TAIL_BYTES)
        if m and _emit(buf, m.start() + 1, sink):
            buf = buf[m.end() - 1 :]
            continue
        end, last, bad = exact_scan(buf)
        if bad:
            raise Fallback
        if end is not None:
            return _finish_array(buf, end, src, sink, top)
        if last >= 0:
            if not _emit(buf, last + 1, sink):
                raise Fallback
            buf, need_sep = buf[last + 1 :], True
        elif eof:
            break
        elif len(buf) > _MAX_EVENT:
            raise Fallback
        else:
            want = len(buf) + PIECE_BYTES  # one event longer than the window: read on
    end, last, bad = exact_scan(buf)
    if bad:
        raise Fallback
    if end is not None:
        return _finish_array(buf, end, src, sink, top)
    if last >= 0 and not _emit(buf, last + 1, sink):
        raise Fallback
    return top, _cut_problem(src, sink.count)


def _finish_array(buf: bytes, end: int, src: Source, sink: Collector,
                  top: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    if not _emit(buf, end, sink):
        raise Fallback
    rest = [buf[end + 1 :]]
    while block := src.read():
        rest.append(block)
    tail = b"".join(rest)
    if src.problem:  # the array is whole but the file stops (or breaks) after it
        return top, f"{src.problem} after the traceEvents array"
    top.update(_tail_keys(tail))
    return top, None


def _cut_problem(src: Source, count: int) -> str:
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


def _top_level_ijson(src: Source) -> tuple[dict[str, Any], str, str | None]:
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


def _read_ijson(open_source: Callable[[], Source],
                sink: Collector) -> tuple[dict[str, Any], str | None]:
    src = open_source()
    head = src.read()
    if problem := start_problem(head[:64]):
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
# the entry point


def load_trace(path: Path, rel_path: str | None = None, node_hint: str | None = None, *,
               fast: bool = True) -> Trace:
    """The trace's GPU ops, runtime calls, annotations and steps; TraceProblem when unreadable.

    `fast=False` skips the chunked orjson path and reads with ijson only (same result)."""
    name = rel_path or str(path)
    cap = limits().trace_bytes
    collecting = gc.isenabled()
    gc.disable()  # millions of short-lived acyclic dicts: cyclic collection would double the time
    try:
        with path.open("rb") as fh:
            if path.stat().st_size > cap:  # decompressed, it is bigger still
                raise TooBig(path.stat().st_size)
            sink = Collector()
            try:
                if not fast:
                    raise Fallback
                top, problem = _read_fast(Source(fh, cap), sink)
            except Fallback:
                sink = Collector()

                def reopen() -> Source:
                    fh.seek(0)
                    return Source(fh, cap)

                top, problem = _read_ijson(reopen, sink)
    except TooBig:
        raise TraceProblem(
            f"{name}: larger than the {human(cap)} a trace may decompress to (it would take "
            "about 2.7 times that in memory): set GOODPUT_MAX_TRACE_BYTES to raise the limit, "
            "or profile fewer steps") from None
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
