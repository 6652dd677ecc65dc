import random
from pathlib import Path

import pytest

from goodput_agent.analysis.slowdown_model import PARTS
from goodput_agent.analysis.trace_steps import rank_breakdown, step_breakdown, steps_of
from goodput_agent.parsing.trace_model import (
    COMM,
    COMPUTE,
    MEMCPY,
    CpuSpan,
    GpuOp,
    Step,
    Trace,
    TraceMeta,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "hta"


def op(ts, dur, kind=COMPUTE, corr=-1, stream=7):
    return GpuOp(ts=ts, dur=dur, kind=kind, name=f"k_{kind}", stream=stream, device=0,
                 correlation=corr)


def launch(ts, corr):
    return CpuSpan(ts=ts, dur=4, name="cudaLaunchKernel", cat="cuda_runtime", tid=1,
                   correlation=corr)


def one_step_trace() -> Trace:
    gpu = [op(0, 300, corr=1), op(250, 150, corr=2, stream=8), op(350, 250, COMM, corr=3,
           stream=20), op(590, 60, MEMCPY, corr=4), op(800, 100, corr=5), op(950, 50, corr=6)]
    runtime = [launch(-10, 1), launch(-8, 2), launch(-6, 3), launch(-4, 4), launch(780, 5),
               launch(10, 6)]
    loader = CpuSpan(ts=650, dur=100, name="enumerate(DataLoader)#_SingleProcessDataLoaderIter"
                     ".__next__", cat="user_annotation", tid=1)
    return Trace(meta=TraceMeta(path="t.json", rank=0), gpu=gpu, runtime=runtime,
                 annotations=[loader], steps=[Step(number=1, ts=0, dur=1000)])


def test_parts_on_one_clock_count_overlap_once_and_attribute_idle():
    b = step_breakdown(one_step_trace(), Step(number=1, ts=0, dur=1000))
    assert b.compute_us == pytest.approx(550)  # 0-400 on two streams, 800-900, 950-1000
    assert b.comm_transfer_us == pytest.approx(200)  # 350-600 minus the compute under it
    assert b.comm_overlapped_us == pytest.approx(50)
    assert b.memory_us == pytest.approx(50)  # 600-650
    assert b.idle_input_us == pytest.approx(100)  # 650-750 under the DataLoader span
    assert b.idle_host_us == pytest.approx(50)  # 750-800: the next kernel was launched at 780
    assert b.idle_other_us == pytest.approx(50)  # 900-950: its kernel was queued long before
    assert sum(b.parts().values()) == pytest.approx(b.step_us)


def test_comm_wait_is_carved_out_of_exposed_comm():
    b = step_breakdown(one_step_trace(), Step(number=1, ts=0, dur=1000), comm_wait_us=120)
    assert (b.comm_wait_us, b.comm_transfer_us) == (pytest.approx(120), pytest.approx(80))
    b = step_breakdown(one_step_trace(), Step(number=1, ts=0, dur=1000), comm_wait_us=900)
    assert b.comm_wait_us == pytest.approx(200) and b.comm_transfer_us == 0


def test_parts_always_sum_to_the_step():
    rng = random.Random(5)
    for _ in range(200):
        ops = sorted((op(rng.uniform(0, 1000), rng.uniform(0, 200), rng.choice(
            (COMPUTE, COMM, MEMCPY)), corr=i, stream=rng.choice((7, 8, 20))) for i in range(30)),
            key=lambda o: o.ts)
        runtime = [launch(o.ts - rng.uniform(-50, 300), o.correlation) for o in ops]
        runtime.sort(key=lambda s: s.ts)
        trace = Trace(meta=TraceMeta(path="r"), gpu=ops, runtime=runtime)
        step = Step(number=1, ts=rng.uniform(0, 300), dur=rng.uniform(100, 900))
        b = step_breakdown(trace, step, comm_wait_us=rng.uniform(0, 100))
        assert sum(b.parts().values()) == pytest.approx(b.step_us, abs=1e-6)
        assert all(v >= -1e-9 for v in b.parts().values())


def test_without_profiler_steps_the_gpu_timeline_is_one_step():
    t = one_step_trace()
    t.steps = []
    (s,) = steps_of(t)
    assert (s.ts, s.end, s.source) == (0, 1000, "whole-trace")


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/traces (real HTA traces)")
def test_real_traces_split_exactly():
    from goodput_agent.parsing.trace_load import load_trace

    for name in ("trace_diff_control_control.json.gz", "nccl_parser_config_nccl_data.json.gz",
                 "ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"):
        rb = rank_breakdown(load_trace(SHARED / name))
        assert rb.steps, name
        for s in rb.steps:
            assert sum(s.parts().values()) == pytest.approx(s.step_us, rel=1e-9), name
        assert sum(rb.mean_parts[p] for p in PARTS) == pytest.approx(
            sum(s.step_us for s in rb.steps) / len(rb.steps))
