"""The typed, piece-at-a-time reader (msgspec structs, numpy columns) keeps exactly what the
event-by-event reader of orjson's dicts keeps, odd events included: the same objects, values
and types alike; and so does the ijson path (`fast=False`) where JSON numbers read alike."""

import json
import pickle
from pathlib import Path

import pytest

import goodput_agent.parsing.kineto.load as trace_load
from goodput_agent.parsing.kineto import collect as trace_collect
from goodput_agent.parsing.kineto.load import load_trace

ODD = [
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": "stream 7",
     "ts": 100.25, "dur": 10.5, "args": {"correlation": 1, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 120, "dur": 3.5,
     "args": {"correlation": 2}},  # int ts, float dur: both kept as they are
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": "2", "tid": "7", "ts": 130,
     "dur": 4, "args": {"device": None, "stream": "stream 9"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 41, "tid": 41,
     "ts": 90.7, "dur": 2.2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 41, "tid": 7, "ts": 140,
     "dur": 5, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#4", "pid": 41, "tid": 41, "ts": 80,
     "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 41, "tid": 41, "ts": 81, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 41, "tid": 41, "ts": 85, "dur": 1},
    {"ph": "X", "cat": "user_annotation", "name": "fwd", "pid": 41, "tid": 41, "ts": 82.5,
     "dur": 0.25},
    {"ph": "X", "cat": "kernel", "name": "neg", "ts": 150, "dur": -1},
    {"ph": "X", "cat": "kernel", "name": None, "ts": 150, "dur": 1},  # malformed
    {"ph": "X", "cat": "mtia_ccp_events", "name": "dma", "ts": 150, "dur": 1},
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "ts": 91},
    {"ph": "i", "name": "instant", "ts": 95},
    {"name": "process_name", "ph": "M", "pid": 41, "args": {"name": "python"}},
]


def _write(path: Path, events: list) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


class _NoStructs:
    def decode(self, text: object) -> None:
        raise trace_collect.msgspec.ValidationError("every piece as dicts")


def _as_dicts(path: Path, monkeypatch) -> trace_load.Trace:
    with monkeypatch.context() as m:
        m.setattr(trace_collect, "_DECODER", _NoStructs())
        return load_trace(path)


def _same(a, b) -> bool:
    def typed(xs):
        return [tuple((type(getattr(o, f)), getattr(o, f)) for f in o.__slots__) for o in xs]
    return ((a.meta, typed(a.gpu), typed(a.runtime), typed(a.annotations), a.steps, a.warnings)
            == (b.meta, typed(b.gpu), typed(b.runtime), typed(b.annotations), b.steps,
                b.warnings))


@pytest.mark.parametrize("odd", [
    None,  # every event fits the structs
    {"ph": "X", "cat": "kernel", "name": "k", "ts": "12", "dur": 1},  # a string time
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 12, "dur": True},  # a boolean duration
    [1, 2],  # not an object
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 12, "dur": 1, "args": [1]},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 12, "dur": 1,
     "args": {"correlation": 2 ** 70, "device": 1.0}},  # past 64 bits, a float id
    {"ph": "X", "cat": "kernel", "name": "caf\u00e9 \u2603", "ts": 12, "dur": 1},  # not ASCII
    {"ph": "X", "cat": "kernel", "name": "quote \" and \\ here", "ts": 12, "dur": 1},
    {"cat": "kernel", "name": "k", "ts": 12, "dur": 1},  # no phase
    {"ph": "Z", "cat": "kernel", "name": "k", "ts": 12, "dur": 1},  # a phase no format has
    {"ph": "s", "cat": ["ac2g"], "id": 3, "ts": 12},  # a flow with an unhashable category
])
def test_structs_keep_what_the_dict_reader_keeps(tmp_path: Path, monkeypatch, odd) -> None:
    events = ODD * 3 + ([odd] if odd is not None else [])
    p = _write(tmp_path / "t.json", events)
    fast = load_trace(p)
    assert _same(fast, _as_dicts(p, monkeypatch))
    assert fast.gpu and fast.meta.events_total == len(events)
    if odd is None or "args" not in odd:  # ijson reads a 70-bit int as an int, orjson not
        assert _same(fast, load_trace(p, fast=False))


def test_many_pieces_of_typed_and_dict_events_keep_trace_order(tmp_path: Path,
                                                              monkeypatch) -> None:
    monkeypatch.setattr(trace_load, "PIECE_BYTES", 2048)  # many pieces, some read as dicts
    events = []
    for i in range(400):
        e = dict(ODD[i % 9])
        e["ts"] = 1000 + (i * 7) % 50  # equal times: ties must stay in trace order
        events.append(e)
        if i % 97 == 0:
            events.append({"ph": "X", "cat": "kernel", "name": "k", "ts": "x", "dur": 1})
    p = _write(tmp_path / "t.json", events)
    fast = load_trace(p)
    assert _same(fast, _as_dicts(p, monkeypatch)) and len(fast.gpu) > 100
    assert _same(fast, load_trace(p, fast=False))


def test_a_loaded_trace_crosses_processes_as_columns(tmp_path: Path) -> None:
    trace = load_trace(_write(tmp_path / "t.json", ODD))
    back = pickle.loads(pickle.dumps(trace))
    assert _same(back, load_trace(tmp_path / "t.json", fast=False))


def test_structs_take_only_the_types_the_dict_rules_read_alike() -> None:
    with pytest.raises(trace_collect.msgspec.ValidationError):
        trace_collect._DECODER.decode(b'[{"ts": 2e400, "dur": 1, "args": {"correlation": 1.5}}]')
