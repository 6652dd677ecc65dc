"""HTA's definitions, computed by Goodput, on small timelines whose answers follow by hand."""

import pytest

from goodput_agent.analysis.slowdown.hta_metrics import (
    COMMUNICATION,
    COMPUTATION,
    MEMORY,
    OTHER,
    hta_job_metrics,
    hta_kernel_type,
    hta_metrics,
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


class Timeline:
    """Builds a Trace: each GPU op gets a launch call (cudaLaunchKernel) with its correlation."""

    def __init__(self, path: str = "rank0.json") -> None:
        self.trace = Trace(meta=TraceMeta(path=path, rank=0))
        self._corr = 0

    def op(self, ts: float, dur: float, name: str = "gemm", *, kind: str = COMPUTE,
           stream: int = 7, launch: float | None = None) -> None:
        self._corr += 1
        launched = ts - 5 if launch is None else launch
        self.trace.runtime.append(CpuSpan(launched, 2, "cudaLaunchKernel", "cuda_runtime", 1,
                                          self._corr, len(self.trace.runtime)))
        self.trace.gpu.append(GpuOp(ts, dur, kind, name, stream, 0, self._corr,
                                    len(self.trace.gpu)))

    def step(self, number: int, ts: float, dur: float) -> None:
        self.trace.steps.append(Step(number, ts, dur))

    def done(self) -> Trace:
        self.trace.gpu.sort(key=lambda g: g.ts)
        self.trace.runtime.sort(key=lambda r: r.ts)
        return self.trace


@pytest.mark.parametrize(("name", "kind"), [
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
     COMMUNICATION),
    ("ncclKernel_AllGather_RING_LL_Sum_int8_t", COMMUNICATION),
    ("Memcpy DtoD (Device -> Device)", MEMORY),
    ("Memset (Device)", MEMORY),
    ("dma_copy", MEMORY),
    ("void at::native::vectorized_elementwise_kernel<4>", COMPUTATION),
    ("Stream Sync", OTHER),
    ("void cub::DeviceMemcpy::BatchMemcpyKernel", OTHER),  # `.*Memcpy` is not compute to HTA
    ("nccl_all_reduce_fallback", COMPUTATION),  # no `Kernel`: not communication
])
def test_kernel_type_follows_htas_name_rules(name: str, kind: str) -> None:
    assert hta_kernel_type(name) == kind


def test_temporal_breakdown_merges_streams_and_counts_hidden_comm_as_compute() -> None:
    t = Timeline()
    t.op(0, 10)  # compute [0, 10)
    t.op(5, 15, "ncclDevKernel_AllReduce", kind=COMM, stream=20)  # [5, 20): 5 hidden
    t.op(30, 5, "Memcpy HtoD (Pinned -> Device)", kind=MEMCPY, stream=8)  # after a 10 µs gap
    m = hta_metrics(t.done())
    assert m.filtered is False and m.ops == 3
    b = m.temporal
    assert b is not None
    assert (b.start_us, b.kernel_us) == (0, 35)
    assert (b.idle_us, b.compute_us, b.non_compute_us) == (10, 10, 15)
    assert (b.idle_pct, b.compute_pct, b.non_compute_pct) == (28.57, 28.57, 42.86)
    assert m.overlap.comm_us == 15 and m.overlap.overlapped_us == 5
    assert m.overlap.overlap_pct == 33.33


def test_fractional_timestamps_round_inwards_like_hta() -> None:
    t = Timeline()
    t.op(10.2, 4.5)  # [11, 14): 3 µs, not 4.5
    t.op(20.6, 0.3)  # [21, 20): ends before it starts, so it adds nothing
    m = hta_metrics(t.done())
    assert m.temporal is not None
    assert (m.temporal.start_us, m.temporal.kernel_us, m.temporal.compute_us) == (11, 3, 3)


def test_ops_launched_after_the_last_step_started_are_left_out() -> None:
    t = Timeline()
    t.op(5, 10)  # warm-up, before the first step: kept
    for n, start in enumerate((100, 200, 300)):
        t.step(n, start, 100)
        t.op(start + 10, 50)
    t.op(420, 10, launch=305)  # runs after the window, launched in the last step: dropped
    m = hta_metrics(t.done())
    assert m.filtered is True and m.last_step_start_us == 300
    assert m.ops == 3
    assert m.temporal is not None
    assert (m.temporal.start_us, m.temporal.kernel_us, m.temporal.compute_us) == (5, 255, 110)


def test_one_step_is_no_filter_and_the_filter_is_decided_for_the_whole_job() -> None:
    alone = Timeline()
    alone.step(1, 0, 100)
    alone.op(10, 10)
    alone.op(150, 10, launch=140)
    assert hta_metrics(alone.done()).ops == 2  # one ProfilerStep name: HTA keeps everything

    other = Timeline("rank1.json")
    other.step(2, 0, 100)
    other.op(10, 10)
    other.op(150, 10, launch=140)  # launched after rank 1's only step started
    a, b = hta_job_metrics([alone.trace, other.done()])
    assert a.filtered and b.filtered  # two names across the job's traces
    assert (a.ops, b.ops) == (0, 0)
    assert a.temporal is None  # nothing left: HTA itself raises here


def test_idle_gaps_are_host_wait_kernel_wait_or_other_per_stream() -> None:
    t = Timeline()
    t.op(0, 10, launch=-5)
    t.op(30, 10, launch=20)  # launched after the previous op ended at 10: 20 µs host wait
    t.op(50, 10, launch=25)  # queued in time, 10 µs gap under 30: kernel wait
    t.op(160, 10, launch=30)  # queued in time, 100 µs gap: other
    t.op(0, 500, stream=9)  # another stream, no gap of its own
    m = hta_metrics(t.done())
    by_stream = {s.stream: s for s in m.idle}
    s7 = by_stream[7]
    assert (s7.host_wait_us, s7.kernel_wait_us, s7.other_us) == (20, 10, 100)
    assert by_stream[9].total_us == 0
    # the threshold is a parameter, as HTA's consecutive_kernel_delay
    strict = {s.stream: s for s in hta_metrics(t.trace, kernel_wait_us=5).idle}[7]
    assert (strict.kernel_wait_us, strict.other_us) == (0, 110)


def test_stream_sync_is_gpu_time_but_not_an_idle_gap_boundary() -> None:
    t = Timeline()
    t.op(0, 10)
    t.op(40, 10, launch=5)
    t.trace.runtime.append(CpuSpan(12, 8, "Stream Sync", "cuda_sync", 7, 99, 50))
    m = hta_metrics(t.done())
    assert m.temporal is not None
    assert (m.temporal.kernel_us, m.temporal.idle_us, m.temporal.non_compute_us) == (50, 22, 8)
    assert m.idle[0].other_us == 30  # the gap is measured between kernels, syncs ignored


def test_overlap_per_step_follows_the_launch_not_the_gpu_time() -> None:
    t = Timeline()
    for n, start in enumerate((0, 100, 200)):
        t.step(n, start, 100)
    t.op(10, 40)  # step 0: compute [10, 50)
    t.op(40, 20, "ncclDevKernel_AllReduce", kind=COMM, stream=20)  # 10 of 20 hidden
    t.op(120, 30, launch=95)  # launched in step 0, runs in step 1's window
    t.op(130, 10, "ncclDevKernel_AllReduce", kind=COMM, stream=20)  # under the op at 120
    t.op(160, 20, "ncclDevKernel_AllGather", kind=COMM, stream=20)  # under nothing
    m = hta_metrics(t.done())
    steps = {s.step: s for s in m.overlap.steps}
    assert set(steps) == {0, 1}
    # op at 120 belongs to step 0 (its launch), so step 1 has no compute of its own
    assert (steps[0].comm_us, steps[0].overlapped_us, steps[0].overlap_pct) == (20, 10, 50.0)
    assert (steps[1].comm_us, steps[1].overlapped_us, steps[1].overlap_pct) == (30, 0, 0.0)
    assert m.overlap.mean_step_pct == 25.0
    assert m.overlap.overlap_pct == round(100 * 20 / 50, 2)  # whole range: 10 + 10 of 50


def test_no_communication_gives_no_overlap_ratio() -> None:
    t = Timeline()
    t.op(0, 10)
    m = hta_metrics(t.done())
    assert m.overlap.overlap_pct is None and m.overlap.mean_step_pct is None
    assert m.overlap.comm_us == 0
