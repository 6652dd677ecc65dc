import random

import pytest

from goodput_agent.analysis.slowdown.model import PARTS
from goodput_agent.analysis.slowdown.trace_steps import (
    RankTimeline,
    rank_breakdown,
    step_breakdown,
    step_parts,
    steps_of,
)
from goodput_agent.parsing.kineto.model import (
    COMM,
    COMPUTE,
    MEMCPY,
    CpuSpan,
    GpuOp,
    Step,
    Trace,
    TraceMeta,
)
from tests.analysis.slowdown.trace_builders import DATALOADER, RunPlan, TraceBuilder, ddp_run
from tests.conftest import SHARED

HTA_TRACES = SHARED / "traces" / "hta"


def op(ts, dur, kind=COMPUTE, corr=-1, stream=7, device=0):
    return GpuOp(ts=ts, dur=dur, kind=kind, name=f"k_{kind}", stream=stream, device=device,
                 correlation=corr)


def launch(ts, corr):
    return CpuSpan(ts=ts, dur=4, name="cudaLaunchKernel", cat="cuda_runtime", tid=1,
                   correlation=corr)


def one_step_trace() -> Trace:
    gpu = [op(0, 300, corr=1), op(250, 150, corr=2, stream=8), op(350, 250, COMM, corr=3,
           stream=20), op(590, 60, MEMCPY, corr=4), op(800, 100, corr=5), op(950, 50, corr=6)]
    runtime = [launch(-10, 1), launch(-8, 2), launch(-6, 3), launch(-4, 4), launch(780, 5),
               launch(10, 6)]
    loader = CpuSpan(ts=650, dur=100, name=DATALOADER, cat="user_annotation", tid=1)
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


def test_step_parts_are_the_breakdown_drawn_as_intervals():
    tl = RankTimeline(one_step_trace())
    step = tl.steps[0]
    spans = step_parts(tl, step, comm_wait_us=120)
    ordered = sorted(spans)  # disjoint and covering the step exactly
    assert ordered[0][0] == step.ts and ordered[-1][1] == step.end
    assert all(a[1] <= b[0] + 1e-9 for a, b in zip(ordered, ordered[1:], strict=False))
    b = step_breakdown(tl, step, comm_wait_us=120)
    for part in PARTS:
        assert sum(e - s for s, e, p in spans if p == part) == pytest.approx(getattr(b, part))


def test_comm_wait_is_carved_out_of_exposed_comm():
    b = step_breakdown(one_step_trace(), Step(number=1, ts=0, dur=1000), comm_wait_us=120)
    assert (b.comm_wait_us, b.comm_transfer_us) == (pytest.approx(120), pytest.approx(80))
    b = step_breakdown(one_step_trace(), Step(number=1, ts=0, dur=1000), comm_wait_us=900)
    assert b.comm_wait_us == pytest.approx(200) and b.comm_transfer_us == 0


def test_a_trailing_gap_with_no_op_after_it_is_the_hosts():
    t = one_step_trace()
    b = step_breakdown(t, Step(number=1, ts=0, dur=1400))  # nothing runs after 1000
    assert b.idle_host_us == pytest.approx(50 + 400)


def test_ops_of_other_devices_are_not_the_ranks():
    t = one_step_trace()
    t.gpu = sorted([*t.gpu, op(650, 150, device=3)], key=lambda o: o.ts)
    b = step_breakdown(t, Step(number=1, ts=0, dur=1000))
    assert b.compute_us == pytest.approx(550) and b.idle_input_us == pytest.approx(100)


def test_without_correlations_idle_is_split_by_the_cpu_spans_over_it():
    b = TraceBuilder()
    b.step(0, 0, 1000)
    b.kernel(0, 100, correlated=False)
    b.dataloader(100, 200)  # 100-300: input
    b.sync(300, 300)  # 300-600: host
    b.kernel(700, 300, correlated=False, launch_at=20)  # 600-700: no CPU span: other
    rb = rank_breakdown(b.build())
    (s,) = rb.steps
    assert (s.idle_input_us, s.idle_host_us, s.idle_other_us) == (
        pytest.approx(200), pytest.approx(300), pytest.approx(100))
    assert any("no launch to match" in w for w in rb.warnings)


def test_parts_always_sum_to_the_step():
    rng = random.Random(5)
    for _ in range(300):
        ops = sorted((op(rng.uniform(0, 1000), rng.uniform(0, 200), rng.choice(
            (COMPUTE, COMM, MEMCPY)), corr=i if rng.random() < 0.8 else -1,
            stream=rng.choice((7, 8, 20)), device=rng.choice((0, 0, 0, 1)))
            for i in range(30)), key=lambda o: o.ts)
        runtime = [launch(o.ts - rng.uniform(-50, 300), o.correlation) for o in ops]
        runtime += [CpuSpan(ts=rng.uniform(0, 1000), dur=rng.uniform(0, 100),
                            name="cudaStreamSynchronize", cat="cuda_runtime", tid=1)
                    for _ in range(3)]
        loaders = [CpuSpan(ts=rng.uniform(0, 1000), dur=rng.uniform(0, 150), name=DATALOADER,
                           cat="user_annotation", tid=1) for _ in range(3)]
        trace = Trace(meta=TraceMeta(path="r"), gpu=ops, runtime=sorted(runtime,
                      key=lambda s: s.ts), annotations=sorted(loaders, key=lambda s: s.ts))
        step = Step(number=1, ts=rng.uniform(0, 300), dur=rng.uniform(100, 900))
        b = step_breakdown(trace, step, comm_wait_us=rng.uniform(0, 100))
        assert sum(b.parts().values()) == pytest.approx(b.step_us, abs=1e-6)
        assert all(v >= -1e-9 for v in b.parts().values())
        assert b.comm_overlapped_us <= b.comm_total_us + 1e-9


def test_a_run_without_profiler_steps_is_cut_at_its_recurring_kernel():
    plan = RunPlan(ranks=1, steps=8, profiler_steps=False, input_us=3000)
    (trace,) = ddp_run(plan)
    tl = RankTimeline(trace)
    truth = ddp_run(RunPlan(ranks=1, steps=8, input_us=3000))[0].steps
    assert len(tl.steps) == 7 and {s.source for s in tl.steps} == {"kernel-pattern"}
    assert statistics_close([s.dur for s in tl.steps], [s.dur for s in truth[:7]])
    assert "multi_tensor_apply_kernel" in tl.warnings[0]
    rb = rank_breakdown(tl)
    assert rb.mean_parts["idle_input_us"] == pytest.approx(3000, rel=0.02)


def statistics_close(a: list[float], b: list[float]) -> bool:
    return all(abs(x - y) <= 0.02 * y for x, y in zip(a, b, strict=True))


def test_without_a_regular_kernel_the_gpu_timeline_is_one_step():
    t = one_step_trace()
    t.steps = []
    (s,) = steps_of(t)
    assert (s.ts, s.end, s.source) == (0, 1000, "whole-trace")
    assert "whole GPU timeline is one step" in RankTimeline(t).warnings[0]


def test_rank_breakdown_has_the_median_step_mean_parts_and_families():
    (trace,) = ddp_run(RunPlan(ranks=1, steps=5, input_us=2000))
    rb = rank_breakdown(trace)
    assert len(rb.steps) == 5 and rb.rank == 0 and rb.host == "node-0"
    m = rb.median_step
    assert sum(getattr(m, p) for p in PARTS) == pytest.approx(m.step_us)
    assert sum(rb.mean_parts.values()) == pytest.approx(
        sum(s.step_us for s in rb.steps) / len(rb.steps))
    fams = {f.family: f for f in rb.kernel_families}
    assert fams["ampere_sgemm"].calls == 5 * 10 and fams["ncclDevKernel_AllReduce"].kind == COMM


@pytest.mark.skipif(not HTA_TRACES.is_dir(), reason="needs ../shared/traces (real HTA traces)")
def test_real_traces_split_exactly():
    from goodput_agent.parsing.kineto.load import load_trace

    for name in ("trace_diff_control_control.json.gz", "nccl_parser_config_nccl_data.json.gz",
                 "ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                 "critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
                 "trace_filter_sampled_rank-1.json.gz"):
        rb = rank_breakdown(load_trace(HTA_TRACES / name))
        assert rb.steps, name
        for s in rb.steps:
            assert sum(s.parts().values()) == pytest.approx(s.step_us, rel=1e-9), name
            assert min(s.parts().values()) >= -1e-6, name
        assert sum(rb.mean_parts[p] for p in PARTS) == pytest.approx(
            sum(s.step_us for s in rb.steps) / len(rb.steps))
        assert rb.kernel_families, name
