"""Where each op, launch and kernel of a step lands in time, on which thread and stream;
ranks chained step after step and synchronized at their collectives."""

from __future__ import annotations

from dataclasses import dataclass, field

from goodput_agent.evals.kineto.args import _comm_args, _copy_args, _kernel_args, _nccl_args
from goodput_agent.evals.kineto.spec import COMPUTE_STREAM, DATALOADER, Kernel, RankTrace, StepPlan


@dataclass(slots=True)
class CpuOp:
    name: str
    cat: str  # cpu_op | user_annotation
    tid: int
    ts: float
    dur: float
    ext: int = 0  # External id, numbered by the writer (base of the step + index + 1)
    args: str = ""  # extra args, already JSON


@dataclass(slots=True)
class Launch:
    """A runtime call on the host and, unless `gpu_cat` is empty, the GPU op it enqueues."""

    runtime: str
    tid: int
    ts: float
    dur: float
    parent: int  # index of the enclosing CpuOp in the step
    gpu_cat: str = ""  # kernel | gpu_memcpy | gpu_memset
    gpu_name: str = ""
    stream: int = COMPUTE_STREAM
    gpu_ts: float = 0.0
    gpu_dur: float = 0.0
    args: str = ""  # extra GPU args, already JSON


@dataclass(slots=True)
class StepLayout:
    cpu: list[CpuOp] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    end: float = 0.0  # ProfilerStep end (host)
    # per bucket (by index): host launch end, gradients ready on the GPU (for synchronize)
    bucket_launch: list[float] = field(default_factory=list)
    bucket_ready: list[float] = field(default_factory=list)
    nccl: list[int] = field(default_factory=list)  # launches index of each all-reduce
    order: list[int] = field(default_factory=list)  # ...and its bucket


def _threads(rt: RankTrace) -> tuple[int, int]:
    return rt.pid, rt.pid + 9_503  # the main thread, the autograd engine thread


class _Host:
    """One step being laid out: its host ops and launches, and when each stream is next free."""

    def __init__(self, step: StepPlan, out: StepLayout, free: dict[int, float]) -> None:
        self.cpu, self.launches, self.free = out.cpu, out.launches, free
        self.comp = COMPUTE_STREAM
        self.gap, self.lat = step.launch_gap_us, step.launch_us

    def op(self, name: str, cat: str, tid: int, ts: float, dur: float, args: str = "") -> int:
        self.cpu.append(CpuOp(name, cat, tid, ts, dur, args=args))
        return len(self.cpu) - 1

    def kernel(self, t: float, k: Kernel, tid: int, name: str | None = None,
               after: float = 0.0, gap: float | None = None) -> float:
        """Launch `k` from the host at `t`; returns when the host is done with it."""
        gap, lat, comp, free = self.gap if gap is None else gap, self.lat, self.comp, self.free
        parent = self.op(name or k.op, "cpu_op", tid, t, gap - 0.5)
        at = t + max(gap - lat - 1.5, 0.5)
        start = max(at + lat + 1.0, free.get(comp, 0.0), after)
        self.launches.append(Launch("cudaLaunchKernel", tid, at, lat, parent, "kernel", k.name,
                                    comp, start, k.dur_us, _kernel_args(k)))
        free[comp] = start + k.dur_us
        return t + gap

    def read_scalar(self, t: float, tid: int) -> float:
        """`.item()`: a blocking DtoH copy once the compute stream drains, then a sync."""
        lat, comp, free, cpu, launches = self.lat, self.comp, self.free, self.cpu, self.launches
        item = self.op("aten::item", "cpu_op", tid, t, 0.0)
        self.op("aten::_local_scalar_dense", "cpu_op", tid, t + 1.0, 0.0)
        copy_at = max(t + 3.0 + lat, free.get(comp, 0.0))
        launches.append(Launch("cudaMemcpyAsync", tid, t + 3.0, copy_at + 2.0 - t - 1.0,
                               item + 1, "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)",
                               comp, copy_at, 1.9, _copy_args(4)))
        free[comp] = copy_at + 1.9
        sync_at = copy_at + 2.5
        launches.append(Launch("cudaStreamSynchronize", tid, sync_at, 1.8, item + 1))
        end = sync_at + 2.5
        cpu[item].dur = end - t
        cpu[item + 1].dur = end - t - 1.5
        return end + 1.0


def lay_out(rt: RankTrace, step: StepPlan, free: dict[int, float]) -> StepLayout:
    """Place one step's host spans and GPU ops on the simulation clock. `free`: when each
    stream is next free, carried from step to step (updated here)."""
    main, bwd = _threads(rt)
    out = StepLayout(bucket_launch=[0.0] * len(step.buckets),
                     bucket_ready=[0.0] * len(step.buckets))
    cpu, launches = out.cpu, out.launches
    comp, nccl = COMPUTE_STREAM, rt.nccl_stream
    gap, lat = step.launch_gap_us, step.launch_us
    host = _Host(step, out, free)
    op, kernel, read_scalar = host.op, host.kernel, host.read_scalar

    t = step.start_us
    step_op = op(f"ProfilerStep#{step.number}", "user_annotation", main, t, 0.0)
    op("Optimizer.zero_grad#AdamW.zero_grad", "user_annotation", main, t + 2.0, 11.0)
    t += 15.0
    op(DATALOADER, "user_annotation", main, t, step.dataloader_us)
    t += step.dataloader_us + 4.0
    # the batch to the GPU
    to = op("aten::to", "cpu_op", main, t, 0.0)
    copy_at = max(t + 2.0 + lat, free.get(comp, 0.0))
    kind = "Pinned" if step.h2d_pinned else "Pageable"
    busy = lat if step.h2d_pinned else copy_at + step.h2d_us - t - 2.0
    launches.append(Launch("cudaMemcpyAsync", main, t + 2.0, busy, to, "gpu_memcpy",
                           f"Memcpy HtoD ({kind} -> Device)", comp, copy_at, step.h2d_us,
                           _copy_args(step.h2d_bytes, step.h2d_us)))
    free[comp] = copy_at + step.h2d_us
    t += 2.0 + busy + 2.0
    cpu[to].dur = t - cpu[to].ts
    mset = op("aten::zero_", "cpu_op", main, t, gap - 0.5)
    launches.append(Launch("cudaMemsetAsync", main, t + 1.0, 3.0, mset, "gpu_memset",
                           "Memset (Device)", comp, max(t + 5.0, free[comp]), 1.6,
                           _copy_args(4096, 1.6)))
    free[comp] = launches[-1].gpu_ts + 1.6
    t += gap
    syncs = {s.after: s for s in step.syncs}
    for i, k in enumerate(step.forward):
        t = kernel(t, k, main)
        if i in syncs:
            t = read_scalar(t, main) + syncs[i].host_us
    # backward on the autograd thread; DDP's hooks launch each bucket when it is ready
    by_after = {b.after: j for j, b in enumerate(step.buckets)}
    nccl_free = free.get(nccl, 0.0)
    ready: list[tuple[int, float]] = []  # (bucket, ready on GPU)
    t += 6.0
    for i, k in enumerate(step.backward):
        t = kernel(t, k, bwd, f"autograd::engine::evaluate_function: {_bwd_op(k.op)}")
        if i in by_after:
            ready.append((by_after[i], free[comp]))
            if step.overlap:
                t = _all_reduce(rt, step, out, by_after[i], t, bwd, free[comp])
    if not step.overlap:
        for j, at in ready:
            t = _all_reduce(rt, step, out, j, t, bwd, at)
    for j, idx in enumerate(out.nccl):
        lay, b = launches[idx], step.buckets[out.order[j]]
        lay.gpu_ts = max(lay.ts + lay.dur + 1.0, out.bucket_ready[out.order[j]], nccl_free)
        end = b.end_us if b.end_us is not None else lay.gpu_ts + b.transfer_us
        lay.gpu_dur = max(end - lay.gpu_ts, 1.0)
        nccl_free = lay.gpu_ts + lay.gpu_dur
    free[nccl] = nccl_free
    # the optimizer waits (on the GPU) for the last all-reduce
    t += 4.0
    opt = op("Optimizer.step#AdamW.step", "user_annotation", main, t, 0.0)
    for k in step.optimizer:
        t = kernel(t, k, main, after=nccl_free, gap=step.optimizer_gap_us or gap)
    cpu[opt].dur = t - cpu[opt].ts
    if step.loss_item:
        t = read_scalar(t + 3.0, main)
    out.end = t + step.tail_us
    cpu[step_op].dur = out.end - step.start_us
    return out


def _all_reduce(rt: RankTrace, step: StepPlan, out: StepLayout, j: int, t: float, tid: int,
                ready: float) -> float:
    b = step.buckets[j]
    ann = len(out.cpu)
    out.cpu.append(CpuOp("nccl:all_reduce", "user_annotation", tid, t, 0.0))
    out.cpu.append(CpuOp("record_param_comms", "cpu_op", tid, t + 1.0, 0.0,
                         args=_comm_args(rt, b)))
    at = t + 4.0
    out.nccl.append(len(out.launches))
    out.order.append(j)
    out.launches.append(Launch("cudaLaunchKernel", tid, at, step.launch_us + 2.0, ann + 1,
                               "kernel", rt.nccl_kernel, rt.nccl_stream, 0.0, 0.0,
                               _nccl_args(rt, b)))
    out.bucket_launch[j] = at + step.launch_us + 2.0
    out.bucket_ready[j] = ready
    end = at + step.launch_us + 5.0
    out.cpu[ann].dur = end - t
    out.cpu[ann + 1].dur = end - t - 1.5
    return end + 1.0


def _bwd_op(op: str) -> str:
    base = op.removeprefix("aten::").rstrip("_").split("_")[0]
    return {"mm": "MmBackward0", "addmm": "AddmmBackward0", "gelu": "GeluBackward0",
            "layer": "NativeLayerNormBackward0", "softmax": "SoftmaxBackward0"}.get(
        base, f"{base.capitalize()}Backward0")


def chain(rt: RankTrace, gap_us: float = 12.0) -> RankTrace:
    """Start every step where the previous one ended (one rank, no peers to wait for)."""
    free: dict[int, float] = {}
    t = rt.steps[0].start_us if rt.steps else 0.0
    for s in rt.steps:
        s.start_us = t
        s.end_us = lay_out(rt, s, free).end
        t = s.end_us + gap_us
    return rt


def synchronize(ranks: list[RankTrace], skew_us: list[float] | None = None,
                gap_us: float = 12.0) -> None:
    """Make the ranks of one job meet at their collectives, step by step: the k-th all-reduce
    starts on each rank when its bucket is ready and the previous one is done, and ends on
    every rank at the last arrival plus the transfer (rank r a further `skew_us[r]` later).
    Earlier arrivals wait inside the kernel, so a slow rank makes everyone else's NCCL kernels
    long while the step totals even out. Sets each step's start_us and each bucket's end_us;
    every rank must have the same number of steps and buckets."""
    skew = skew_us or [0.0] * len(ranks)
    free: list[dict[int, float]] = [{} for _ in ranks]
    t = [rt.steps[0].start_us if rt.steps else 0.0 for rt in ranks]
    for n in range(len(ranks[0].steps)):
        steps = [rt.steps[n] for rt in ranks]
        for s, start in zip(steps, t, strict=True):
            s.start_us = start
            for b in s.buckets:
                b.end_us = None
        probes = [lay_out(rt, s, dict(f)) for rt, s, f in zip(ranks, steps, free, strict=True)]
        prev = max((f.get(rt.nccl_stream, 0.0) for rt, f in zip(ranks, free, strict=True)),
                   default=0.0)
        for k in range(len(steps[0].buckets)):
            arrive = max(max(p.bucket_launch[k] + 1.0, p.bucket_ready[k], prev) for p in probes)
            end = arrive + steps[0].buckets[k].transfer_us
            for r, s in enumerate(steps):
                s.buckets[k].end_us = end + skew[r]
            prev = end + max(skew)
        for r, (rt, s) in enumerate(zip(ranks, steps, strict=True)):
            s.end_us = lay_out(rt, s, free[r]).end
            t[r] = s.end_us + gap_us
