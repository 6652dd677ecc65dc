"""load_traces: the traces of a run loaded on every core give what loading them one by one
gives, in the order asked, with a broken trace as its one-line ParseError."""

import pickle
from datetime import UTC
from pathlib import Path

import goodput_agent.parsing.kineto.load as trace_load
from goodput_agent.parsing.base import ParseError
from tests.conftest import REPO

RUN = REPO / "evals" / "slowdown_cases" / "s01-input-stall" / "traces" / "incident"


def _same(a: trace_load.Trace, b: trace_load.Trace) -> bool:
    return (a.meta, a.gpu, a.runtime, a.annotations, a.steps, a.warnings) == \
        (b.meta, b.gpu, b.runtime, b.annotations, b.steps, b.warnings)


def test_parallel_loading_matches_one_by_one(tmp_path: Path, monkeypatch) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [{"ph": "X", "cat": "kern')
    jobs = [(p, p.name, "node-a") for p in sorted(RUN.glob("*.gz"))]
    jobs.insert(1, (broken, "broken.json", None))
    assert len(jobs) >= 4
    monkeypatch.setattr(trace_load, "PARALLEL_BYTES", 0)  # take the pool path on small files
    monkeypatch.setattr(trace_load.os, "cpu_count", lambda: 3)
    parallel = trace_load.load_traces(jobs)
    one_by_one = [trace_load._load_or_problem(*job) for job in jobs]
    assert len(parallel) == len(jobs)
    for got, want, (_, name, _) in zip(parallel, one_by_one, jobs, strict=True):
        if isinstance(want, ParseError):
            assert isinstance(got, ParseError) and str(got) == str(want)
            assert str(got).startswith("broken.json: ") and "\n" not in str(got)
        else:
            assert not isinstance(got, ParseError) and got.meta.path == name
            assert _same(got, want) and got.gpu


def test_a_trace_pickles_as_rows_and_comes_back_equal() -> None:
    trace = trace_load.load_trace(next(RUN.glob("*.gz")))
    back = pickle.loads(pickle.dumps(trace))
    assert _same(back, trace) and back.gpu and back.runtime


def test_a_trace_knows_when_it_began() -> None:
    """Kineto 2.4+: event times relative to baseTimeNanoseconds; older Kineto: epoch
    microseconds; else the millisecond stamp of tensorboard_trace_handler's file name."""
    name = "nid1_42.1777978802052.pt.trace.json.gz"
    base = 1_777_978_800_000_000_000
    at, source = trace_load.started_at({"baseTimeNanoseconds": base}, 1_500.0, name)
    assert source == "baseTimeNanoseconds" and abs(at - 1_777_978_800.0015) < 1e-5
    assert trace_load.started_at({}, 1_777_978_801_000_000.0, name) == \
        (1_777_978_801.0, "event time")
    assert trace_load.started_at({}, 1_500.0, name) == (1_777_978_802.052, "file name")
    assert trace_load.started_at({}, 1_500.0, "rank0.json") == (None, None)
    loaded = trace_load.load_trace(next(RUN.glob("*.gz")))
    stamp = int(loaded.meta.path.split(".")[-5]) / 1e3  # the handler's ms stamp in the name
    assert loaded.meta.started_from == "baseTimeNanoseconds"
    assert abs(loaded.meta.started_at - stamp) < 60


def test_real_traces_begin_when_their_file_names_say(shared_dir: Path) -> None:
    """Real HTA test traces whose names carry the profiler's local wall time (zone unknown):
    Kineto 2.4's baseTimeNanoseconds + relative ts, and older epoch-µs ts, both land on it to
    within a minute, give or take whole hours of time zone."""
    from datetime import datetime

    for name, source in (("cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                          "baseTimeNanoseconds"),
                         ("ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                          "event time")):
        trace = trace_load.load_trace(shared_dir / "traces" / "hta" / name)
        year = datetime.fromtimestamp(trace.meta.started_at).year
        local = datetime.strptime(f"{year} {name.split('.')[1]}",
                                  "%Y %b_%d_%H_%M_%S")
        gap = trace.meta.started_at - local.replace(tzinfo=UTC).timestamp()
        assert trace.meta.started_from == source
        assert abs(gap) < 14 * 3600 and min(gap % 3600, -gap % 3600) < 60, (name, gap)
