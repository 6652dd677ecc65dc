"""PyTorch NCCL Flight Recorder dumps: what each rank's process groups were doing at the end.

Written on a watchdog timeout (TORCH_NCCL_DUMP_ON_TIMEOUT, TORCH_NCCL_TRACE_BUFFER_SIZE > 0)
to TORCH_NCCL_DEBUG_INFO_TEMP_FILE + rank ("/tmp/nccl_trace_rank_3"), as a pickle; or as JSON
through `torch._C._distributed_c10d._dump_nccl_trace_json`. Keys (FlightRecorder.hpp, version
2.x): "version", "comm_lib_version", "pg_config" {name: {name, desc, ranks}}, "pg_status" {pg_id:
{last_enqueued_collective, last_started_collective, last_completed_collective}}, "entries" [{
record_id, pg_id, process_group [name, desc], collective_seq_id, p2p_seq_id, op_id,
profiling_name ("nccl:all_reduce"), time_created_ns, state (scheduled|started|completed),
input_sizes, output_sizes, timeout_ms, is_p2p, retired, frames ...}], "nccl_comm_state".

A pickled dump is read ONLY through a restricted unpickler: plain containers and scalars are
built by pickle opcodes themselves, and every global (class or function) is refused, so no
code in the file can run. One context Event per dump (kind collective_progress) names the
process group with the oldest unfinished collective (the one a hang is about), its last
scheduled / started / completed sequence numbers and that collective.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.head_words import holds
from goodput_agent.parsing.job_log import rank_from_filename
from goodput_agent.parsing.lines import read_whole

FORMAT = "flight_recorder"
MAX_BYTES = 256 * 1024 * 1024
EXCERPT_CHARS = 500
_STATES = ("scheduled", "started", "completed")


class _RefusingUnpickler(pickle.Unpickler):
    """Builds only what pickle opcodes build by themselves; every global is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise ParseError(f"refused to load {module}.{name} from a pickled dump")

    def persistent_load(self, pid: Any) -> Any:
        raise ParseError("refused a persistent id in a pickled dump")


def safe_unpickle(data: bytes) -> Any:
    try:
        return _RefusingUnpickler(io.BytesIO(data)).load()
    except ParseError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
            AttributeError, MemoryError, RecursionError, OverflowError) as e:
        raise ParseError(f"corrupt pickled dump ({type(e).__name__})") from e


class Entry(BaseModel):
    """One recorded collective or point-to-point operation."""

    model_config = ConfigDict(extra="allow")
    record_id: int | None = None
    pg_id: int | str | None = None
    process_group: list[Any] | tuple[Any, ...] | None = None
    collective_seq_id: int | None = None
    p2p_seq_id: int | None = None
    op_id: int | None = None
    profiling_name: str | None = None
    time_created_ns: int | None = None
    state: str | None = None
    is_p2p: bool | None = None
    timeout_ms: int | None = None
    input_sizes: list[Any] | None = None
    output_sizes: list[Any] | None = None

    @property
    def pg(self) -> str:
        return str(self.pg_id) if self.pg_id is not None else "?"

    @property
    def p2p(self) -> bool:
        if self.is_p2p is not None:
            return self.is_p2p
        name = self.profiling_name or ""
        return any(w in name for w in ("send", "recv")) and "all" not in name

    @property
    def seq(self) -> int | None:
        return self.p2p_seq_id if self.p2p else self.collective_seq_id

    def brief(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("record_id", "collective_seq_id", "p2p_seq_id",
                                            "profiling_name", "state", "time_created_ns",
                                            "timeout_ms", "input_sizes")}
        d["pg"] = self.pg
        if self.process_group:
            d["pg_name"] = [str(x) for x in self.process_group][:2]
        return {k: v for k, v in d.items() if v is not None}


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _entries(raw: Any, warnings: list[str]) -> list[Entry]:
    out: list[Entry] = []
    if not isinstance(raw, list):
        return out
    bad = 0
    for item in raw:
        try:
            out.append(Entry.model_validate(item))
        except ValidationError:
            bad += 1
    if bad:
        warnings.append(f"{bad} malformed entries skipped")
    return out


def _pg_summary(entries: list[Entry], status: dict[str, Any] | None) -> dict[str, Any]:
    """Sequence numbers of one PG's collectives; pg_status (authoritative) wins over entries."""
    coll = [e for e in entries if not e.p2p and e.seq is not None]
    seqs = {st: [e.seq for e in coll if e.state == st] for st in _STATES}
    started = seqs["started"] + seqs["completed"]
    d: dict[str, Any] = {
        "last_completed_seq": max(seqs["completed"], default=None),
        "last_started_seq": max(started, default=None),
        "last_scheduled_seq": max((e.seq for e in coll), default=None),
        "entries": len(entries),
    }
    if status:
        for key, name in (("last_completed_seq", "last_completed_collective"),
                          ("last_started_seq", "last_started_collective"),
                          ("last_scheduled_seq", "last_enqueued_collective")):
            if (v := _int(status.get(name))) is not None:
                d[key] = v
    pending = sorted((e for e in entries if e.state in ("scheduled", "started")),
                     key=lambda e: (e.time_created_ns or 0, e.record_id or 0))
    if pending:
        d["stuck"] = pending[0]
    d["last"] = max(entries, key=lambda e: (e.time_created_ns or 0, e.record_id or 0),
                    default=None)
    return d


def _world_size(pg_config: Any) -> int | None:
    if not isinstance(pg_config, dict):
        return None
    for name, info in pg_config.items():
        if not isinstance(info, dict):
            continue
        if str(name) == "0" or info.get("desc") == "default_pg":
            ranks = re.findall(r"\d+", str(info.get("ranks", "")))
            return len(ranks) or None
    return None


class FlightRecorderParser:
    format = FORMAT

    def sniff(self, head: str, name: str) -> bool:
        if "traceEvents" in head[:4096]:
            return False  # a Kineto trace
        keys = sum(holds(head, k) for k in ("pg_config", "pg_status", "nccl_comm_state",
                                       "entries", "collective_seq_id"))
        if head.lstrip().startswith("{"):
            return keys >= 2 and holds(head, "version")
        return keys >= 2 and ("nccl_trace" in name or "fr_trace" in name
                              or name.endswith((".pkl", ".pickle")) or head[:1] == "\ufffd")

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        data = self._read(path, ctx)
        dump = self._load(data, ctx)
        res = ParseResult(format=FORMAT, lines_read=data.count(b"\n") + 1)
        entries = _entries(dump.get("entries"), res.warnings)
        status = dump.get("pg_status") if isinstance(dump.get("pg_status"), dict) else {}
        pgs: dict[str, list[Entry]] = {}
        for e in entries:
            pgs.setdefault(e.pg, []).append(e)
        for pg_id in status:
            pgs.setdefault(str(pg_id), [])
        summaries = {pg: _pg_summary(es, status.get(pg) or status.get(_int(pg)))
                     for pg, es in pgs.items()}
        rank = _int(dump.get("rank"))
        if rank is None:
            rank = rank_from_filename(path.name)
        if rank is None:
            rank = ctx.rank_hint
        res.events.append(self._event(ctx, rank, summaries, dump))
        res.facts = {k: v for k, v in res.events[0].detail.items() if k != "stuck_op"}
        if ws := _world_size(dump.get("pg_config")):
            res.facts["world_size"] = ws
        if isinstance(dump.get("nccl_comm_state"), dict):
            res.facts["nccl_comms"] = len(dump["nccl_comm_state"])
        return res

    @staticmethod
    def _read(path: Path, ctx: ParseContext) -> bytes:
        try:
            raw = read_whole(path, MAX_BYTES)
            if len(raw) > MAX_BYTES:
                raise ParseError(f"{ctx.rel_path}: dump larger than {MAX_BYTES} bytes")
            return raw
        except (OSError, EOFError) as e:
            raise ParseError(f"cannot read {ctx.rel_path}: {e.strerror or e}") from e

    @staticmethod
    def _load(data: bytes, ctx: ParseContext) -> dict[str, Any]:
        start = data.lstrip()[:1]
        try:
            if start == b"{":
                dump = json.loads(data.decode("utf-8", errors="replace"))
            elif start == b"\x80":
                dump = safe_unpickle(data)
            else:
                raise ParseError("neither JSON nor a pickle")
        except ParseError as e:
            raise ParseError(f"{ctx.rel_path}: {e}") from e
        except (json.JSONDecodeError, RecursionError) as e:
            raise ParseError(f"{ctx.rel_path}: invalid JSON dump ({e})") from e
        if not isinstance(dump, dict) or not ({"entries", "pg_config", "pg_status"} & set(dump)):
            raise ParseError(f"{ctx.rel_path}: not a Flight Recorder dump")
        return dump

    @staticmethod
    def _event(ctx: ParseContext, rank: int | None, summaries: dict[str, dict[str, Any]],
               dump: dict[str, Any]) -> Event:
        def key(item: tuple[str, dict[str, Any]]) -> tuple[int, int, int]:
            pg, s = item
            stuck = s.get("stuck")
            return (0 if stuck else 1, stuck.time_created_ns or 0 if stuck else 0,
                    0 if pg in ("0", "default_pg") else 1)

        pg, s = min(summaries.items(), key=key, default=("?", {}))
        op: Entry | None = s.get("stuck") or s.get("last")
        detail: dict[str, Any] = {
            "rank": rank, "pg": pg,
            "last_completed_seq": s.get("last_completed_seq"),
            "last_started_seq": s.get("last_started_seq"),
            "last_scheduled_seq": s.get("last_scheduled_seq"),
            "last_op": op.profiling_name if op else None,
            "version": str(dump.get("version")) if dump.get("version") is not None else None,
            "pgs": {p: {k: v for k, v in x.items() if k not in ("stuck", "last")}
                    for p, x in summaries.items()},
        }
        if s.get("stuck"):
            detail["stuck_op"] = s["stuck"].brief()
        ts = None
        if op and op.time_created_ns:
            ts = datetime.fromtimestamp(op.time_created_ns / 1e9, UTC)
            detail["ts_is"] = "stuck_op_created" if s.get("stuck") else "last_op_created"
        who = f"rank {rank}" if rank is not None else "a rank"
        if s.get("stuck"):
            summary = (f"Flight Recorder: {who} PG {pg} waits in {detail['last_op']} "
                       f"(seq {s['stuck'].seq}); last completed {detail['last_completed_seq']}")
        else:
            summary = (f"Flight Recorder: {who} PG {pg} all recorded collectives completed "
                       f"(last {detail['last_completed_seq']})")
        excerpt = json.dumps(op.brief() if op else {"pg": pg}, default=str)[:EXCERPT_CHARS]
        return Event(kind=EventKind.collective_progress, role=Role.context, category=None,
                     ts=ts, clock=Clock.absolute if ts else Clock.none, node=ctx.node_hint,
                     rank=rank, summary=summary,
                     locator=Locator(path=ctx.rel_path, line_start=1, line_end=1),
                     excerpt=excerpt, detail=detail)


PARSER = FlightRecorderParser()
