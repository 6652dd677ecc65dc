"""Synthetic profiler traces for the analysis tests, built directly as `Trace` objects.

`TraceBuilder` places single events: steps, kernels on streams (each with its runtime launch,
linked by a correlation id), NCCL kernels, memcpys, runtime calls, annotations and DataLoader
spans. `ddp_run` simulates a data-parallel training run on several ranks with each slowdown
cause as a knob (input stall, launch-bound host, a slow rank, slower all-reduce) and
`dcgm_series` writes DCGM clock series for the throttling cases.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from goodput_agent.parsing.kineto.model import (
    COMM,
    COMPUTE,
    MEMCPY,
    MEMSET,
    CpuSpan,
    GpuOp,
    Step,
    Trace,
    TraceMeta,
)
from goodput_agent.parsing.openmetrics import Series

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GEMM = "ampere_sgemm_128x64_tn"
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
               "<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>)")
OPTIMIZER = "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float> >(int)"
DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
LAUNCH_US = 4.0  # CPU time of one launch call
LAUNCH_LATENCY_US = 5.0  # a kernel starts this long after its launch at the earliest
_RUNTIME_OF = {COMPUTE: "cudaLaunchKernel", COMM: "cudaLaunchKernel",
               MEMCPY: "cudaMemcpyAsync", MEMSET: "cudaMemsetAsync"}


class TraceBuilder:
    def __init__(self, path: str = "rank0.pt.trace.json", *, rank: int | None = 0,
                 host: str | None = "node-0", device: int = 0, world_size: int | None = None,
                 tid: int = 1):
        self.meta = TraceMeta(path=path, rank=rank, world_size=world_size, host=host,
                              host_source="trace metadata" if host else None)
        self.device = device
        self.tid = tid
        self.gpu: list[GpuOp] = []
        self.runtime: list[CpuSpan] = []
        self.annotations: list[CpuSpan] = []
        self.steps: list[Step] = []
        self._correlation = 0

    def step(self, number: int, ts: float, dur: float) -> Step:
        s = Step(number=number, ts=ts, dur=dur)
        self.steps.append(s)
        self.annotations.append(CpuSpan(ts=ts, dur=dur, name=f"ProfilerStep#{number}",
                                        cat="user_annotation", tid=self.tid))
        return s

    def op(self, name: str, ts: float, dur: float, *, kind: str = COMPUTE, stream: int = 7,
           device: int | None = None, launch_at: float | None = None,
           correlated: bool = True) -> GpuOp:
        """A GPU op and the runtime call that launched it (at `launch_at`, by default well
        before it starts: queued behind earlier work). `correlated=False` leaves the link out."""
        self._correlation += 1
        corr = self._correlation if correlated else -1
        launched = ts - 50.0 if launch_at is None else launch_at
        self.runtime.append(CpuSpan(ts=launched, dur=LAUNCH_US, name=_RUNTIME_OF[kind],
                                    cat="cuda_runtime", tid=self.tid, correlation=corr))
        op = GpuOp(ts=ts, dur=dur, kind=kind, name=name, stream=stream,
                   device=self.device if device is None else device, correlation=corr)
        self.gpu.append(op)
        return op

    def kernel(self, ts: float, dur: float, name: str = GEMM, **kw: object) -> GpuOp:
        return self.op(name, ts, dur, kind=COMPUTE, **kw)  # type: ignore[arg-type]

    def nccl(self, ts: float, dur: float, name: str = ALLREDUCE, stream: int = 20,
             **kw: object) -> GpuOp:
        return self.op(name, ts, dur, kind=COMM, stream=stream, **kw)  # type: ignore[arg-type]

    def memcpy(self, ts: float, dur: float, name: str = "Memcpy HtoD (Pinned -> Device)",
               **kw: object) -> GpuOp:
        return self.op(name, ts, dur, kind=MEMCPY, **kw)  # type: ignore[arg-type]

    def runtime_call(self, name: str, ts: float, dur: float, correlation: int = -1) -> CpuSpan:
        span = CpuSpan(ts=ts, dur=dur, name=name, cat="cuda_runtime", tid=self.tid,
                       correlation=correlation)
        self.runtime.append(span)
        return span

    def sync(self, ts: float, dur: float, name: str = "cudaStreamSynchronize") -> CpuSpan:
        return self.runtime_call(name, ts, dur)

    def annotation(self, name: str, ts: float, dur: float,
                   cat: str = "user_annotation") -> CpuSpan:
        span = CpuSpan(ts=ts, dur=dur, name=name, cat=cat, tid=self.tid)
        self.annotations.append(span)
        return span

    def dataloader(self, ts: float, dur: float) -> CpuSpan:
        return self.annotation(DATALOADER, ts, dur, cat="cpu_op")

    def build(self, with_steps: bool = True) -> Trace:
        by_ts = sorted
        return Trace(meta=self.meta.model_copy(),
                     gpu=by_ts(self.gpu, key=lambda o: (o.ts, o.stream)),
                     runtime=by_ts(self.runtime, key=lambda s: s.ts),
                     annotations=by_ts(self.annotations, key=lambda s: s.ts),
                     steps=by_ts(self.steps, key=lambda s: s.ts) if with_steps else [])


@dataclass
class RunPlan:
    """A data-parallel run: every step, each rank reads a batch (`input_us`), launches
    `kernels` forward/backward kernels of `kernel_us` each (CPU-bound when `launch_gap_us` is
    longer than a kernel), all-reduces the gradients (`allreduce_us` of transfer, after the
    last rank arrives), then runs the optimizer; `slow` multiplies a rank's kernel times, and
    `input_by_rank` / `launch_gap_by_rank` make one rank's input or host slow; `h2d_us` copies
    each batch to the GPU before the forward pass."""

    ranks: int = 4
    steps: int = 6
    kernels: int = 20
    kernel_us: float = 1000.0
    allreduce_us: float = 2000.0
    optimizer_us: float = 500.0
    input_us: float = 0.0
    launch_gap_us: float = 0.0
    h2d_us: float = 0.0  # a host-to-device copy of the batch, before the first kernel
    slow: dict[int, float] = field(default_factory=dict)
    input_by_rank: dict[int, float] = field(default_factory=dict)  # overrides input_us
    launch_gap_by_rank: dict[int, float] = field(default_factory=dict)  # overrides launch_gap_us
    gpus_per_node: int = 8
    jitter: float = 0.02  # relative noise on each kernel's duration
    seed: int = 7
    t0: float = 1_700_000_000_000_000.0  # µs, about the Kineto clock of a 2023 trace
    folder: str = "traces"
    profiler_steps: bool = True


def host_of(rank: int, gpus_per_node: int = 8) -> str:
    return f"node-{rank // gpus_per_node}"


def ddp_run(plan: RunPlan | None = None, **kw: object) -> list[Trace]:
    p = plan or RunPlan(**kw)  # type: ignore[arg-type]
    rnd = random.Random(p.seed)
    builders = [TraceBuilder(f"{p.folder}/rank{r}.pt.trace.json", rank=r,
                             host=host_of(r, p.gpus_per_node), device=r % p.gpus_per_node,
                             world_size=p.ranks) for r in range(p.ranks)]
    t = p.t0
    for number in range(p.steps):
        arrive, cpu_at, gpu_at = [], [], []
        for r, b in enumerate(builders):
            cpu = t
            input_us = p.input_by_rank.get(r, p.input_us)
            if input_us > 0:
                b.dataloader(cpu, input_us)
                cpu += input_us
            gpu = cpu
            if p.h2d_us > 0:
                start = cpu + LAUNCH_LATENCY_US
                b.memcpy(start, p.h2d_us, launch_at=cpu)
                cpu += LAUNCH_US
                gpu = start + p.h2d_us
            for k in range(p.kernels):
                dur = p.kernel_us * p.slow.get(r, 1.0) * (1 + rnd.uniform(-p.jitter, p.jitter))
                start = max(cpu + LAUNCH_LATENCY_US, gpu)
                b.kernel(start, dur, name=GEMM if k % 2 else ELEMENTWISE, launch_at=cpu)
                cpu += max(LAUNCH_US, p.launch_gap_by_rank.get(r, p.launch_gap_us))
                gpu = start + dur
            arrive.append(max(cpu + LAUNCH_LATENCY_US, gpu))
            cpu_at.append(cpu)
            gpu_at.append(gpu)
        done = max(arrive) + p.allreduce_us * (1 + rnd.uniform(-p.jitter, p.jitter))
        ends = []
        for r, b in enumerate(builders):
            b.nccl(arrive[r], done - arrive[r], launch_at=cpu_at[r])
            # the optimizer waits for the gradients: launched at once, queued behind the
            # all-reduce by a stream dependency
            b.kernel(done, p.optimizer_us, name=OPTIMIZER, launch_at=cpu_at[r] + LAUNCH_US)
            ends.append(done + p.optimizer_us)
            b.sync(cpu_at[r] + 2 * LAUNCH_US, ends[r] - cpu_at[r] - 2 * LAUNCH_US + 2.0,
                   name="cudaStreamSynchronize")
        end = max(ends) + 20.0
        for b in builders:
            b.step(number, t, end - t)
        t = end
    return [b.build(with_steps=p.profiler_steps) for b in builders]


def dcgm_series(host: str, gpus: list[int], start_s: float, *, samples: int = 40,
                every_s: float = 15.0, clock_mhz: float = 1980.0,
                throttled: dict[int, tuple[int, float]] | None = None,
                throttle_from: int = 0, reasons_name: str = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
                idle_gpus: tuple[int, ...] = ()) -> list[Series]:
    """DCGM exporter series of `gpus` on `host`: SM clock, clock-event reasons, power and
    temperature, one sample every `every_s`. `throttled`: gpu -> (reason bits, SM clock MHz)
    from sample `throttle_from` on; `idle_gpus` report GpuIdle (0x1) and an idle clock."""
    out: list[Series] = []
    for g in gpus:
        labels = {"Hostname": host, "gpu": str(g), "UUID": f"GPU-{host}-{g}"}
        clock, reasons, power, temp = [], [], [], []
        for i in range(samples):
            ts = start_s + i * every_s
            bits, mhz = 0, clock_mhz
            if g in idle_gpus:
                bits, mhz = 0x1, 210.0
            elif throttled and g in throttled and i >= throttle_from:
                bits, mhz = throttled[g]
            clock.append((ts, mhz))
            reasons.append((ts, float(bits)))
            power.append((ts, 650.0 if mhz == clock_mhz else 400.0))
            temp.append((ts, 70.0 if not bits & 0x60 else 91.0))
        out += [Series(name="DCGM_FI_DEV_SM_CLOCK", labels=labels, points=clock),
                Series(name=reasons_name, labels=labels, points=reasons),
                Series(name="DCGM_FI_DEV_POWER_USAGE", labels=labels, points=power),
                Series(name="DCGM_FI_DEV_GPU_TEMP", labels=labels, points=temp)]
    return out
