"""evals/kineto_writer.py: the trace layout Kineto writes, the step timeline, ranks meeting at
their collectives, determinism, and sizing large traces."""

import gzip
import itertools
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from goodput_agent.evals.kineto_writer import (
    DATALOADER,
    NCCL_OLD,
    HostSync,
    RankTrace,
    chain,
    model_step,
    render,
    sized,
    synchronize,
    write_trace,
)

BASE_NS = 1_777_000_000_000_000_000


def rank(r: int = 0, steps: int = 3, style: str = "2.4", scale: float = 1.0, **kw) -> RankTrace:
    return RankTrace(rank=r, world_size=4, pid=5000 + r, device=r % 4, devices=4, style=style,
                     base_ns=BASE_NS, clock_us=1_000_000.0 + 17 * r, trace_name="/tmp/t.json",
                     steps=[model_step(n, layers=2, scale=scale) for n in range(5, 5 + steps)],
                     **kw)


def load(path: Path) -> tuple[str, dict]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    text = raw.decode()
    return text, json.loads(text)


def by_cat(doc: dict, cat: str) -> list[dict]:
    return [e for e in doc["traceEvents"] if e.get("cat") == cat]


@pytest.mark.parametrize("style", ["2.1", "2.4", "2.6"])
def test_head_and_tail_are_laid_out_as_kineto_writes_them(tmp_path, style):
    path = tmp_path / "t.json.gz"
    size = write_trace(path, chain(rank(2, style=style)))
    text, doc = load(path)
    assert size == len(text.encode())
    assert '"distributedInfo": {"backend": "nccl", "rank": 2, "world_size": 4' in text
    keys = list(doc)
    assert keys[:3] == ["schemaVersion", "deviceProperties", "distributedInfo"]
    assert len(doc["deviceProperties"]) == 4 and doc["deviceProperties"][3]["id"] == 3
    after = keys[keys.index("traceEvents") + 1:]
    before = keys[3:keys.index("traceEvents")]
    assert {"2.1": ([], []), "2.4": ([], ["traceName", "displayTimeUnit", "baseTimeNanoseconds"]),
            "2.6": (["displayTimeUnit", "baseTimeNanoseconds"], ["traceName"])}[style] == (
        before, after)
    if style != "2.1":
        assert doc["baseTimeNanoseconds"] == BASE_NS
        assert doc["distributedInfo"]["pg_config"][0]["ranks"] == [0, 1, 2, 3]
    ts = [e["ts"] for e in doc["traceEvents"] if isinstance(e.get("ts"), int | float)]
    assert all(isinstance(t, int) for t in ts) == (style == "2.1")  # whole µs in old traces
    last = doc["traceEvents"][-1]
    assert last["name"] == "Record Window End" and last["ts"] >= max(ts)


def test_events_carry_what_analyses_join_on(tmp_path):
    path = tmp_path / "t.json"
    write_trace(path, chain(rank(1, steps=2)))
    _, doc = load(path)
    ev = doc["traceEvents"]
    steps = [e for e in ev if e.get("name", "").startswith("ProfilerStep#")]
    assert [e["name"] for e in steps] == ["ProfilerStep#5", "ProfilerStep#6"]
    assert all(e["cat"] == "user_annotation" for e in steps)
    assert len([e for e in ev if e.get("name") == DATALOADER]) == 2
    runtime = {e["args"]["correlation"]: e for e in by_cat(doc, "cuda_runtime")}
    cpu_ext = {e["args"]["External id"] for e in ev if e.get("cat") in ("cpu_op",
                                                                         "user_annotation")}
    gpu = by_cat(doc, "kernel") + by_cat(doc, "gpu_memcpy") + by_cat(doc, "gpu_memset")
    for g in gpu:
        a = g["args"]
        assert {"device", "stream", "correlation"} <= set(a) and a["device"] == 1 == g["pid"]
        launch = runtime[a["correlation"]]
        assert launch["args"]["External id"] == a["External id"] in cpu_ext
        assert launch["ts"] <= g["ts"]
        if g["cat"] == "kernel":
            assert len(a["grid"]) == len(a["block"]) == 3
    flows = defaultdict(set)
    for e in ev:
        if e.get("cat") == "ac2g":
            flows[e["id"]].add(e["ph"])
    assert set(flows) == {g["args"]["correlation"] for g in gpu}
    assert all(p == {"s", "f"} for p in flows.values())
    names = {g["name"] for g in gpu}
    assert {"Memcpy HtoD (Pinned -> Device)", "Memset (Device)",
            "Memcpy DtoH (Device -> Pageable)"} <= names
    nccl = [g for g in by_cat(doc, "kernel") if g["name"].startswith("ncclDevKernel_AllReduce")]
    assert len(nccl) == 2 * 2 and nccl[0]["args"]["Collective name"] == "allreduce"
    meta = {(e["name"], e["pid"], e["tid"]): e["args"] for e in ev if e.get("ph") == "M"}
    assert meta[("process_labels", 1, 0)] == {"labels": "GPU 1"}
    assert meta[("thread_name", 5001, 5001)]["name"] == "thread 5001 (pt_main_thread)"


def test_old_traces_use_old_nccl_names_and_cpu_op_args(tmp_path):
    rt = chain(rank(0, style="2.1", nccl_kernel=NCCL_OLD))
    write_trace(tmp_path / "t.json", rt)
    _, doc = load(tmp_path / "t.json")
    assert any(e["name"] == NCCL_OLD for e in by_cat(doc, "kernel"))
    op = by_cat(doc, "cpu_op")[0]["args"]
    assert op["Trace name"] == "PyTorch Profiler" and "Ev Idx" not in op


def _gpu_by_stream(doc: dict) -> dict[int, list[dict]]:
    out = defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            out[e["tid"]].append(e)
    return {s: sorted(v, key=lambda e: e["ts"]) for s, v in out.items()}


def test_one_clock_streams_serial_buckets_wait_for_gradients(tmp_path):
    rt = chain(rank(0, steps=2))
    write_trace(tmp_path / "t.json", rt)
    _, doc = load(tmp_path / "t.json")
    streams = _gpu_by_stream(doc)
    for ops in streams.values():  # one stream runs one op at a time
        assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-6 for a, b in itertools.pairwise(ops))
    compute, nccl = streams[7], streams[rt.nccl_stream]
    bwd = [k for k in compute if "gemm" in k["name"] or "reduce_kernel" in k["name"]]
    opt = [k for k in compute if "FusedAdam" in k["name"]]
    first_step = [n for n in nccl if n["ts"] < opt[0]["ts"]]
    assert len(first_step) == 2  # one bucket per layer
    for bucket in first_step:  # an all-reduce starts after some backward kernel ended
        assert any(k["ts"] + k["dur"] <= bucket["ts"] + 1e-6 for k in bwd)
    assert opt[0]["ts"] >= first_step[-1]["ts"] + first_step[-1]["dur"] - 1e-6
    steps = [e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert steps[0]["ts"] + steps[0]["dur"] <= steps[1]["ts"]
    assert rt.steps[0].end_us is not None and rt.steps[1].start_us > rt.steps[0].end_us


def test_a_host_sync_idles_the_gpu_for_the_host_work(tmp_path):
    rt = rank(0, steps=1)
    rt.steps[0].syncs = [HostSync(after=3, host_us=2_000.0)]
    write_trace(tmp_path / "t.json", chain(rt))
    _, doc = load(tmp_path / "t.json")
    compute = _gpu_by_stream(doc)[7]
    gaps = [b["ts"] - (a["ts"] + a["dur"]) for a, b in itertools.pairwise(compute)]
    assert max(gaps) >= 2_000.0
    assert any(e["name"] == "cudaStreamSynchronize" for e in by_cat(doc, "cuda_runtime"))


def test_ranks_meet_at_collectives_and_a_slow_rank_waits_least():
    ranks = [rank(r, steps=4, scale=1.5 if r == 2 else 1.0) for r in range(4)]
    synchronize(ranks, skew_us=[0.0, 1.0, 2.0, 3.0])
    for n in range(4):
        ends = [[b.end_us for b in rt.steps[n].buckets] for rt in ranks]
        for k in range(len(ends[0])):
            assert max(e[k] for e in ends) - min(e[k] for e in ends) == pytest.approx(3.0)
    step = {rt.rank: [s.end_us - s.start_us for s in rt.steps[1:]] for rt in ranks}
    means = {r: sum(v) / len(v) for r, v in step.items()}
    assert max(means.values()) / min(means.values()) < 1.03  # the barrier evens them out


def test_synchronized_nccl_kernels_are_shortest_on_the_slow_rank(tmp_path):
    ranks = [rank(r, steps=3, scale=1.5 if r == 1 else 1.0) for r in range(3)]
    synchronize(ranks)
    total = {}
    for rt in ranks:
        write_trace(tmp_path / f"r{rt.rank}.json.gz", rt)
        _, doc = load(tmp_path / f"r{rt.rank}.json.gz")
        total[rt.rank] = sum(k["dur"] for k in by_cat(doc, "kernel") if "nccl" in k["name"])
    assert min(total, key=total.get) == 1


def test_same_spec_same_bytes_and_gzip_mtime_zero(tmp_path):
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    write_trace(a, chain(rank(0)))
    write_trace(b, chain(rank(0)))
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes()[4:8] == b"\0\0\0\0"  # gzip MTIME


def test_sized_reaches_the_target_within_a_step():
    rt = rank(0, steps=1)
    one = sum(len(p.encode()) for p in render(chain(rt)))
    big = sized(rt, 1_500_000)
    size = sum(len(p.encode()) for p in render(chain(big)))
    assert abs(size - 1_500_000) < one and len(big.steps) > 5
    assert len({s.number for s in big.steps}) == len(big.steps)


def test_event_dicts_are_written_with_a_kineto_head(tmp_path):
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0,
               "dur": 5.0, "args": {"device": 0, "stream": 7, "correlation": 1}}]
    write_trace(tmp_path / "e.json", events, rank=3, world_size=4, trace_name="e",
                base_ns=BASE_NS, devices=1)
    text, doc = load(tmp_path / "e.json")
    assert re.search(r'"rank": 3\b', text) and doc["traceEvents"] == events
    with pytest.raises(ValueError):
        write_trace(tmp_path / "x.json", events)


def test_the_loader_reads_rank_steps_and_gpu_ops(tmp_path):
    from goodput_agent.parsing.kineto import load as trace_load

    rt = chain(rank(3, steps=3))
    write_trace(tmp_path / "gpu-node-04_5003.1777000000000.pt.trace.json.gz", rt)
    t = trace_load.load_trace(tmp_path / "gpu-node-04_5003.1777000000000.pt.trace.json.gz")
    assert (t.meta.rank, t.meta.world_size, t.meta.host) == (3, 4, "gpu-node-04")
    assert [s.number for s in t.steps] == [5, 6, 7] and not t.warnings
    kernels = sum(len(s.forward) + len(s.backward) + len(s.optimizer) + len(s.buckets)
                  for s in rt.steps)
    assert len([o for o in t.gpu if o.kind in ("compute", "comm")]) == kernels
