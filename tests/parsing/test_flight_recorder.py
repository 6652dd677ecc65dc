"""Flight Recorder dumps (JSON and pickle), with the keys FlightRecorder.hpp writes."""

from __future__ import annotations

import json
import os
import pickle
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.core.events import Clock, EventKind, Role
from goodput_agent.parsing.base import ParseContext, ParseError
from goodput_agent.parsing.flight_recorder import PARSER, safe_unpickle

T0 = 1_714_557_600_000_000_000  # ns


def entry(rid: int, seq: int, state: str, name: str = "nccl:all_reduce", pg: int = 0,
          **kw) -> dict:
    return {"record_id": rid, "pg_id": pg, "process_group": [str(pg), "default_pg" if pg == 0
                                                             else "tp"],
            "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq, "profiling_name": name,
            "time_created_ns": T0 + rid * 1_000_000, "input_sizes": [[1024]],
            "input_dtypes": ["Float"], "output_sizes": [[1024]], "output_dtypes": ["Float"],
            "state": state, "time_discovered_started_ns": 0,
            "time_discovered_completed_ns": 0, "retired": state == "completed",
            "timeout_ms": 600000, "is_p2p": False, **kw}


def dump(entries: list[dict], **kw) -> dict:
    return {"version": "2.4", "comm_lib_version": "2.21.5",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"},
                          "1": {"name": "1", "desc": "tp", "ranks": "[0, 1]"}},
            "pg_status": {}, "entries": entries, **kw}


HUNG = dump([
    entry(0, 1, "completed"), entry(1, 2, "completed"),
    entry(2, 1, "completed", "nccl:all_gather", pg=1),
    entry(3, 3, "started", "nccl:reduce_scatter"),
    entry(4, 4, "scheduled"),
    entry(5, 2, "scheduled", "nccl:all_gather", pg=1),
], pg_status={"0": {"last_enqueued_collective": "4", "last_started_collective": "3",
                    "last_completed_collective": "2"}})


def write_json(tmp_path: Path, doc: dict, name: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def parse(path: Path, **ctx):
    return PARSER.parse(path, ParseContext(rel_path=f"fr/{path.name}", **ctx))


def test_json_dump_of_a_hung_rank(tmp_path: Path) -> None:
    res = parse(write_json(tmp_path, HUNG, "nccl_trace_rank_3.json"))
    (e,) = res.events
    assert (e.kind, e.role, e.category, e.rank) == (EventKind.collective_progress,
                                                    Role.context, None, 3)
    assert e.detail["pg"] == "0"  # its oldest unfinished collective is older than PG 1's
    assert (e.detail["last_completed_seq"], e.detail["last_started_seq"],
            e.detail["last_scheduled_seq"]) == (2, 3, 4)
    assert e.detail["last_op"] == "nccl:reduce_scatter"
    assert e.detail["stuck_op"]["collective_seq_id"] == 3
    assert e.detail["pgs"]["1"]["last_completed_seq"] == 1
    assert e.detail["pgs"]["1"]["last_scheduled_seq"] == 2
    assert e.ts == datetime.fromtimestamp((T0 + 3_000_000) / 1e9, UTC)
    assert e.clock == Clock.absolute
    assert e.locator.path == "fr/nccl_trace_rank_3.json"
    assert json.loads(e.excerpt)["profiling_name"] == "nccl:reduce_scatter"
    for key in ("rank", "last_completed_seq", "last_started_seq", "last_scheduled_seq",
                "last_op", "pg"):
        assert res.facts[key] == e.detail[key]
    assert res.facts["world_size"] == 4


def test_pg_status_wins_over_a_wrapped_ring_buffer(tmp_path: Path) -> None:
    doc = dump([entry(9, 120, "completed"), entry(10, 121, "started")],
               pg_status={"0": {"last_enqueued_collective": "125",
                                "last_started_collective": "121",
                                "last_completed_collective": "120"}})
    e = parse(write_json(tmp_path, doc, "x.json"), rank_hint=7).events[0]
    assert e.rank == 7  # no rank in the dump or the name: the context's
    assert (e.detail["last_completed_seq"], e.detail["last_scheduled_seq"]) == (120, 125)


def test_all_completed_dump(tmp_path: Path) -> None:
    e = parse(write_json(tmp_path, dump([entry(0, 1, "completed"), entry(1, 2, "completed")],
                                        rank=1), "fr.json"), rank_hint=5).events[0]
    assert e.rank == 1  # the dump's own rank wins
    assert "stuck_op" not in e.detail and e.detail["last_op"] == "nccl:all_reduce"
    assert e.detail["last_completed_seq"] == 2
    assert "completed" in e.summary


def test_pickled_dump_reads_through_the_restricted_unpickler(tmp_path: Path) -> None:
    doc = dict(HUNG)
    doc["entries"] = [dict(x, process_group=tuple(x["process_group"])) for x in HUNG["entries"]]
    path = tmp_path / "nccl_trace_rank_2"
    path.write_bytes(pickle.dumps(doc, protocol=2))
    e = parse(path).events[0]
    assert e.rank == 2 and e.detail["last_started_seq"] == 3


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"version": "2.4", "entries": [_Evil(marker)], "pg_config": {}})
    path = tmp_path / "nccl_trace_rank_0"
    path.write_bytes(payload)
    with pytest.raises(ParseError, match="refused"):
        parse(path)
    assert not marker.exists()
    with pytest.raises(ParseError, match="refused"):
        safe_unpickle(pickle.dumps(_Evil(marker), protocol=0))
    assert not marker.exists()


@pytest.mark.parametrize("content", [b"\x80\x04\x95garbage", b"{broken", b"plain text",
                                     b'{"traceEvents": []}'])
def test_unreadable_dumps_raise_parse_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "nccl_trace_rank_1"
    path.write_bytes(content)
    with pytest.raises(ParseError):
        parse(path)


def test_malformed_entries_are_skipped(tmp_path: Path) -> None:
    doc = dump([entry(0, 1, "completed"), {"state": 5}, "junk", entry(1, 2, "started")])
    res = parse(write_json(tmp_path, doc, "nccl_trace_rank_4.json"))
    assert res.events[0].detail["last_started_seq"] == 2
    assert res.warnings == ["2 malformed entries skipped"]


def test_sniff() -> None:
    assert PARSER.sniff(json.dumps(HUNG)[:65536], "nccl_trace_rank_3.json")
    head = pickle.dumps(HUNG, protocol=2).decode("utf-8", errors="replace")
    assert PARSER.sniff(head, "nccl_trace_rank_3")
    assert not PARSER.sniff('{"traceEvents": [], "distributedInfo": {}}', "trace.json")
    assert not PARSER.sniff('{"message": {"message": "x"}}', "error.json")
    assert not PARSER.sniff("entries pg_config in a text log", "train.log")
