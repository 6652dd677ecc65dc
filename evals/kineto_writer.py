"""Write PyTorch profiler (Kineto) traces of one rank the way Kineto writes them.

Layout (libkineto/src/output_json.cpp): the head (`schemaVersion`, `deviceProperties`,
`distributedInfo` with `"rank": N` -- HTA reads the rank only with that space), `traceEvents`
(the CPU ops first, then the CUPTI activities: runtime calls with their `ac2g` flow starts,
kernels / memcpys / memsets with the flow ends, then process and thread names, the trace span
and the "Record Window End" marker), then the tail. Three generations of that layout:

- "2.1": absolute microsecond `ts` as integers, nothing after the array;
- "2.4": `ts` relative to `baseTimeNanoseconds` with three decimals, `distributedInfo` with
  the process groups, then `traceName`, `displayTimeUnit`, `baseTimeNanoseconds` after it;
- "2.6": as 2.4 but `displayTimeUnit` and `baseTimeNanoseconds` before `traceEvents`.

A trace is described by a `RankTrace` (per-step phases: DataLoader wait, H2D copy, forward and
backward kernels with launch gaps, gradient all-reduce buckets overlapped with the backward
pass, optimizer, host syncs); `lay_out` places every op on one clock, `synchronize` makes the
ranks of a job meet at their collectives, `write_trace` streams the events to .json or .json.gz
(gzip mtime 0: the same spec gives the same bytes), a step at a time, so 100 MB traces cost
little memory. `sized` repeats a spec's steps to reach a byte count; `write_large_job` writes a
whole job of large traces (benchmarks/trace_vs_hta.py).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

Style = Literal["2.1", "2.4", "2.6"]
COMPUTE_STREAM = 7
DATALOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
NCCL_NEW = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
NCCL_OLD = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
H100 = {"name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045379072, "computeMajor": 9,
        "computeMinor": 0, "numSms": 132}
A100 = {"name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85097971712, "computeMajor": 8,
        "computeMinor": 0, "numSms": 108}
CBID = {"cudaLaunchKernel": 211, "cudaMemcpyAsync": 41, "cudaMemsetAsync": 51,
        "cudaStreamSynchronize": 131}


# --------------------------------------------------------------------------- the spec


class Kernel(BaseModel):
    name: str
    dur_us: float
    op: str = "aten::mm"  # the CPU op that launches it
    grid: tuple[int, int, int] = (132, 1, 1)
    block: tuple[int, int, int] = (256, 1, 1)


class Bucket(BaseModel):
    """One gradient bucket's all-reduce: launched when backward kernel `after` has been
    launched, it starts on the NCCL stream once that kernel is done (its gradients are ready)."""

    after: int
    transfer_us: float  # the data movement alone (the kernel's duration on the last arrival)
    nelems: int = 6_553_600
    end_us: float | None = None  # set by synchronize(): when it ends on this rank


class HostSync(BaseModel):
    """`.item()` after forward kernel `after`: the host waits for the GPU to drain, then
    works `host_us` (Python on the value) before it launches the next kernel."""

    after: int
    host_us: float


class StepPlan(BaseModel):
    number: int
    start_us: float = 0.0  # on the simulation clock (set by chain() / synchronize())
    end_us: float | None = None  # the ProfilerStep's end (set by chain() / synchronize())
    dataloader_us: float = 300.0  # the host waiting in DataLoader.__next__
    h2d_us: float = 180.0
    h2d_bytes: int = 25_165_824
    h2d_pinned: bool = True  # False: a pageable copy, the host blocks until it is done
    forward: list[Kernel] = Field(default_factory=list)
    backward: list[Kernel] = Field(default_factory=list)
    optimizer: list[Kernel] = Field(default_factory=list)
    buckets: list[Bucket] = Field(default_factory=list)
    launch_gap_us: float = 8.0  # host time from one launch to the next
    launch_us: float = 4.0  # the cudaLaunchKernel call itself
    optimizer_gap_us: float | None = None  # host time per optimizer launch (default: as above)
    syncs: list[HostSync] = Field(default_factory=list)
    overlap: bool = True  # False: every bucket is launched after the backward pass
    loss_item: bool = True  # the step ends reading the loss (the host waits for the GPU)
    tail_us: float = 25.0  # host time from the loss read to the next step


class RankTrace(BaseModel):
    rank: int
    world_size: int
    pid: int
    device: int  # the local GPU index
    devices: int = 8  # entries in deviceProperties
    gpu: dict[str, Any] = Field(default_factory=lambda: dict(H100))
    style: Style = "2.4"
    base_ns: int  # baseTimeNanoseconds (2.4/2.6); for 2.1 the epoch of the clock
    clock_us: float = 0.0  # what the trace clock reads at simulation time 0
    trace_name: str = ""
    host_name: str | None = None  # a top-level host key (only some deployments write one)
    nccl_kernel: str = NCCL_NEW
    nccl_stream: int = 20
    nccl_version: str = "2.21.5"
    python: str = "python3.10"
    steps: list[StepPlan] = Field(default_factory=list)


# --------------------------------------------------------------------------- layout


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


def lay_out(rt: RankTrace, step: StepPlan, free: dict[int, float]) -> StepLayout:
    """Place one step's host spans and GPU ops on the simulation clock. `free`: when each
    stream is next free, carried from step to step (updated here)."""
    main, bwd = _threads(rt)
    out = StepLayout(bucket_launch=[0.0] * len(step.buckets),
                     bucket_ready=[0.0] * len(step.buckets))
    cpu, launches = out.cpu, out.launches
    comp, nccl = COMPUTE_STREAM, rt.nccl_stream
    gap, lat = step.launch_gap_us, step.launch_us

    def op(name: str, cat: str, tid: int, ts: float, dur: float, args: str = "") -> int:
        cpu.append(CpuOp(name, cat, tid, ts, dur, args=args))
        return len(cpu) - 1

    def kernel(t: float, k: Kernel, tid: int, name: str | None = None,
               after: float = 0.0, gap: float = gap) -> float:
        """Launch `k` from the host at `t`; returns when the host is done with it."""
        parent = op(name or k.op, "cpu_op", tid, t, gap - 0.5)
        at = t + max(gap - lat - 1.5, 0.5)
        start = max(at + lat + 1.0, free.get(comp, 0.0), after)
        launches.append(Launch("cudaLaunchKernel", tid, at, lat, parent, "kernel", k.name,
                               comp, start, k.dur_us, _kernel_args(k)))
        free[comp] = start + k.dur_us
        return t + gap

    def read_scalar(t: float, tid: int) -> float:
        """`.item()`: a blocking DtoH copy once the compute stream drains, then a sync."""
        item = op("aten::item", "cpu_op", tid, t, 0.0)
        op("aten::_local_scalar_dense", "cpu_op", tid, t + 1.0, 0.0)
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


# --------------------------------------------------------------------------- args


def _kernel_args(k: Kernel) -> str:
    threads = k.block[0] * k.block[1] * k.block[2]
    return (f'"queued": 0, "device": {{dev}}, "context": 1, "stream": {{stream}}, '
            f'"correlation": {{corr}}, "registers per thread": 128, "shared memory": 49152, '
            f'"blocks per SM": {k.grid[0] / 132:.6g}, "warps per SM": '
            f'{k.grid[0] * threads / 32 / 132:.6g}, "grid": [{k.grid[0]}, {k.grid[1]}, '
            f'{k.grid[2]}], "block": [{k.block[0]}, {k.block[1]}, {k.block[2]}], '
            f'"est. achieved occupancy %": {min(100, int(k.grid[0] * threads / 2048 / 1.32))}')


def _copy_args(nbytes: int, dur_us: float = 1.9) -> str:
    return (f'"device": {{dev}}, "context": 1, "stream": {{stream}}, "correlation": {{corr}}, '
            f'"bytes": {nbytes}, "memory bandwidth (GB/s)": {nbytes / dur_us / 1000:.6g}')


def _pg(rt: RankTrace) -> str:
    ranks = ", ".join(str(r) for r in range(rt.world_size))
    return (f'"Process Group Name": "0", "Process Group Description": "default_pg", '
            f'"Process Group Ranks": "[{ranks}]"')


def _comm_args(rt: RankTrace, b: Bucket) -> str:
    if rt.style == "2.1":
        return ""
    return (f'"In msg nelems": {b.nelems}, "Out msg nelems": {b.nelems}, '
            f'"Group size": {rt.world_size}, "dtype": "Float", "In split size": "[]", '
            f'"Out split size": "[]", "Global rank start": 0, "Global rank stride": 1, '
            f'{_pg(rt)}, "Collective name": "allreduce"')


def _nccl_args(rt: RankTrace, b: Bucket) -> str:
    head = ('"queued": 0, "device": {dev}, "context": 1, "stream": {stream}, "correlation": '
            '{corr}, "registers per thread": 96, "shared memory": 87568, "blocks per SM": '
            '0.181818, "warps per SM": 3.090909, "grid": [24, 1, 1], "block": [544, 1, 1], '
            '"est. achieved occupancy %": 0')
    if rt.style == "2.1":
        return head
    return (head + f', "Collective name": "allreduce", "In msg nelems": {b.nelems}, '
            f'"Out msg nelems": {b.nelems}, "Group size": {rt.world_size}, "dtype": "Float", '
            f'"In split size": "[]", "Out split size": "[]", {_pg(rt)}')


# --------------------------------------------------------------------------- writing


@lru_cache(maxsize=4096)
def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class _Clock:
    def __init__(self, rt: RankTrace):
        self.offset = rt.clock_us
        self.whole = rt.style == "2.1"

    def __call__(self, t: float) -> str:
        v = t + self.offset
        return str(round(v)) if self.whole else f"{v:.3f}"


class _Writer:
    """Formats events of one rank; ids run on across steps."""

    def __init__(self, rt: RankTrace):
        self.rt, self.ts = rt, _Clock(rt)
        self.ext = 0  # External ids (one per CPU op)
        self.corr = 0  # correlation ids (one per runtime call)
        self.bases: list[int] = []  # per step, the External id before its first CPU op
        self.new = rt.style != "2.1"

    def cpu_events(self, lay: StepLayout) -> Iterator[str]:
        rt, ts = self.rt, self.ts
        self.bases.append(self.ext)
        for op in lay.cpu:
            self.ext += 1
            op.ext = self.ext
            extra = (f', "Record function id": {op.ext}, "Ev Idx": {op.ext - 1}' if self.new
                     else f', "Trace name": "PyTorch Profiler", "Trace iteration": 0, '
                          f'"Profiler Event Index": {op.ext - 1}')
            more = f", {op.args}" if op.args else ""
            yield (f'\n  {{\n    "ph": "X", "cat": "{op.cat}", "name": {_s(op.name)}, '
                   f'"pid": {rt.pid}, "tid": {op.tid},\n    "ts": {ts(op.ts)}, "dur": '
                   f'{_dur(op.dur, self.new)},\n    "args": {{\n'
                   f'      "External id": {op.ext}{extra}{more}\n    }}\n  }},')

    def gpu_events(self, lay: StepLayout, n: int) -> Iterator[str]:
        """Step `n`'s runtime calls and GPU ops (after cpu_events numbered its CPU ops)."""
        rt, ts, dev = self.rt, self.ts, self.rt.device
        for la in lay.launches:
            self.corr += 1
            corr, ext = self.corr, self.bases[n] + la.parent + 1
            at = ts(la.ts)
            yield (f'\n  {{\n    "ph": "X", "cat": "cuda_runtime", "name": "{la.runtime}", '
                   f'"pid": {rt.pid}, "tid": {la.tid},\n    "ts": {at}, "dur": '
                   f'{_dur(la.dur, self.new)},\n    "args": {{\n      "External id": {ext}, '
                   f'"cbid": {CBID[la.runtime]}, "correlation": {corr}\n    }}\n  }},')
            if not la.gpu_cat:
                continue
            yield (f'\n  {{\n    "ph": "s", "id": {corr}, "pid": {rt.pid}, "tid": {la.tid}, '
                   f'"ts": {at},\n    "cat": "ac2g", "name": "ac2g"\n  }},')
            g = ts(la.gpu_ts)
            args = la.args.format(dev=dev, stream=la.stream, corr=corr)
            yield (f'\n  {{\n    "ph": "X", "cat": "{la.gpu_cat}", "name": {_s(la.gpu_name)}, '
                   f'"pid": {dev}, "tid": {la.stream},\n    "ts": {g}, "dur": '
                   f'{_dur(la.gpu_dur, self.new)},\n    "args": {{\n      "External id": '
                   f'{ext}, {args}\n    }}\n  }},')
            yield (f'\n  {{\n    "ph": "f", "id": {corr}, "pid": {dev}, "tid": {la.stream}, '
                   f'"ts": {g},\n    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }},')

    def closing(self, first: float, last: float) -> str:
        rt, ts = self.rt, self.ts
        main, bwd = _threads(rt)
        at = ts(first)
        m = [("process_name", rt.pid, 0, f'"name": "{rt.python}"'),
             ("process_labels", rt.pid, 0, '"labels": "CPU"'),
             ("process_sort_index", rt.pid, 0, f'"sort_index": {rt.pid}'),
             ("process_name", rt.device, 0, f'"name": "{rt.python}"'),
             ("process_labels", rt.device, 0, f'"labels": "GPU {rt.device}"'),
             ("process_sort_index", rt.device, 0, f'"sort_index": {16777216 + rt.device}')]
        for s in (COMPUTE_STREAM, rt.nccl_stream):
            m += [("thread_name", rt.device, s, f'"name": "stream {s} "'),
                  ("thread_sort_index", rt.device, s, f'"sort_index": {s}')]
        for tid, what in ((main, "pt_main_thread"), (bwd, "pt_autograd_0")):
            m += [("thread_name", rt.pid, tid, f'"name": "thread {tid} ({what})"'),
                  ("thread_sort_index", rt.pid, tid, f'"sort_index": {tid}')]
        parts = [f'\n  {{\n    "name": "{n}", "ph": "M", "ts": {at}, "pid": {p}, "tid": {t},\n'
                 f'    "args": {{\n      {a}\n    }}\n  }},' for n, p, t, a in m]
        parts.append(f'\n  {{\n    "ph": "X", "cat": "Trace", "ts": {at}, "dur": '
                     f'{_dur(last - first, self.new)},\n    "pid": "Spans", "tid": '
                     f'"PyTorch Profiler",\n    "name": "PyTorch Profiler (0)",\n    "args": '
                     f'{{\n      "Op count": 0\n    }}\n  }},\n  {{\n    "name": '
                     f'"process_sort_index", "ph": "M", "ts": {at},\n    "pid": "Spans", '
                     f'"tid": 0,\n    "args": {{\n      "sort_index": 536870912\n    }}\n  }},')
        parts.append(f'\n  {{\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", '
                     f'"s": "g",\n    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": '
                     f'{at}\n  }},\n  {{\n    "name": "Record Window End", "ph": "i", "s": "g",'
                     f'\n    "pid": "", "tid": "", "ts": {ts(last)}\n  }}\n  ]')
        return "".join(parts)


def _dur(d: float, decimals: bool) -> str:
    return f"{max(d, 0.0):.3f}" if decimals else str(max(round(d), 0))


def _head(rt: RankTrace) -> str:
    props = ",".join(
        f'\n      {{\n      "id": {i}, "name": {_s(rt.gpu["name"])}, "totalGlobalMem": '
        f'{rt.gpu["totalGlobalMem"]},\n      "computeMajor": {rt.gpu["computeMajor"]}, '
        f'"computeMinor": {rt.gpu["computeMinor"]},\n      "maxThreadsPerBlock": 1024, '
        f'"maxThreadsPerMultiprocessor": 2048,\n      "regsPerBlock": 65536, "warpSize": 32,'
        f'\n      "sharedMemPerBlock": 49152, "numSms": {rt.gpu["numSms"]}\n    , '
        f'"regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, '
        f'"sharedMemPerMultiprocessor": 233472\n    }}' for i in range(rt.devices))
    dist = f'"backend": "nccl", "rank": {rt.rank}, "world_size": {rt.world_size}'
    if rt.style != "2.1":
        ranks = ", ".join(str(r) for r in range(rt.world_size))
        dist += (f', "pg_count": 1, "pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", '
                 f'"backend_config": "cuda:nccl", "pg_size": {rt.world_size}, "ranks": '
                 f'[{ranks}]}}], "nccl_version": "{rt.nccl_version}"')
    text = (f'{{\n  "schemaVersion": 1,\n  "deviceProperties": [{props}\n  ],\n'
            f'  "distributedInfo": {{{dist}}},')
    if rt.host_name:
        text += f'\n  "hostname": {_s(rt.host_name)},'
    if rt.style == "2.6":
        text += f'\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {rt.base_ns},'
    return text + '\n  "traceEvents": ['


def _tail(rt: RankTrace) -> str:
    if rt.style == "2.1":
        return "\n}"
    if rt.style == "2.6":
        return f',\n  "traceName": {_s(rt.trace_name)}\n}}'
    return (f',\n  "traceName": {_s(rt.trace_name)},\n  "displayTimeUnit": "ms",\n'
            f'  "baseTimeNanoseconds": {rt.base_ns}\n}}')


def render(rt: RankTrace) -> Iterator[str]:
    """The trace text in pieces (a step's events per piece)."""
    yield _head(rt)
    w = _Writer(rt)
    free: dict[int, float] = {}
    first = last = None
    for s in rt.steps:
        lay = lay_out(rt, s, free)
        first = s.start_us if first is None else first
        last = lay.end
        yield "".join(w.cpu_events(lay))
    free = {}
    for n, s in enumerate(rt.steps):
        yield "".join(w.gpu_events(lay_out(rt, s, free), n))
    yield w.closing((first or 0.0) - 50.0, (last or 0.0) + 50.0)
    yield _tail(rt)


def write_events(path: Path, events: Iterable[dict[str, Any]], *, rank: int, world_size: int,
                 trace_name: str, base_ns: int, devices: int = 8) -> int:
    """Write events given as dicts (tests build small traces this way) with a Kineto head and
    tail; returns the bytes written before compression."""
    rt = RankTrace(rank=rank, world_size=world_size, pid=0, device=0, devices=devices,
                   base_ns=base_ns, trace_name=trace_name)

    def pieces() -> Iterator[str]:
        yield _head(rt)
        body = ",".join("\n  " + json.dumps(e, ensure_ascii=False) for e in events)
        yield body
        yield "\n  ]" + _tail(rt)
    return _sink(path, pieces())


def write_trace(path: Path, spec: RankTrace | Iterable[dict[str, Any]], *,
                rank: int | None = None, world_size: int | None = None,
                trace_name: str | None = None, base_ns: int | None = None, devices: int = 8,
                level: int = 6) -> int:
    """Write one rank's trace (.json, or .json.gz when the name ends in .gz); returns the bytes
    before compression. `spec`: a RankTrace, or already-made event dicts with the keywords."""
    if isinstance(spec, RankTrace):
        return _sink(path, render(spec), level)
    if rank is None or world_size is None or base_ns is None:
        raise ValueError("events need rank, world_size and base_ns")
    return write_events(path, spec, rank=rank, world_size=world_size,
                        trace_name=trace_name or str(path), base_ns=base_ns, devices=devices)


def _sink(path: Path, pieces: Iterable[str], level: int = 6) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    with open(path, "wb") as raw:
        out: io.BufferedIOBase = (gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="",
                                                compresslevel=level)
                                  if path.suffix == ".gz" else raw)
        buf: list[bytes] = []
        held = 0
        for piece in pieces:
            data = piece.encode("utf-8")
            size += len(data)
            buf.append(data)
            held += len(data)
            if held >= 1 << 20:
                out.write(b"".join(buf))
                buf, held = [], 0
        out.write(b"".join(buf))
        if out is not raw:
            out.close()
    return size


# --------------------------------------------------------------------------- large traces


def model_step(number: int = 1, *, layers: int = 12, scale: float = 1.0) -> StepPlan:
    """A transformer-like DDP step: per layer 4 forward and 6 backward kernels, one gradient
    bucket per layer (its all-reduce mostly hidden under the next layer's backward), a fused
    AdamW."""
    fwd_k = [("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
              "_execute_segment_k_off_kernel__5x_cublas", "aten::mm", 160.0),
             ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl"
              "(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}"
              "::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
              "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&)::{lambda()#1}::operator"
              "()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
              "at::detail::Array<char*, 2>)", "aten::gelu", 38.0),
             ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, "
              "float>(int, float, float const*, float const*, float const*, float*, float*, "
              "float*)", "aten::native_layer_norm", 22.0),
             ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1"
              "_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8"
              "::Params)", "aten::addmm", 120.0)]
    bwd_k = [(fwd_k[0][0], "aten::mm", 170.0), (fwd_k[0][0], "aten::mm", 165.0),
             ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackward"
              "CUDAKernelImpl(at::TensorIteratorBase&)::{lambda()#1}::operator()() const>"
              "(int, float*)", "aten::gelu", 45.0),
             ("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, "
              "float>(float const*, float const*, float const*, float const*, float const*, "
              "float*, int)", "aten::native_layer_norm", 30.0),
             (fwd_k[3][0], "aten::addmm", 130.0),
             ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
              "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()"
              "(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >"
              "(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::"
              "sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda("
              "float, float)#1}>, unsigned int, float, 4>)", "aten::sum", 25.0)]
    fwd = [Kernel(name=n, op=o, dur_us=d * scale) for _ in range(layers) for n, o, d in fwd_k]
    bwd = [Kernel(name=n, op=o, dur_us=d * scale) for _ in range(layers) for n, o, d in bwd_k]
    per = len(bwd_k)
    buckets = [Bucket(after=i + per - 1, transfer_us=420.0) for i in range(0, len(bwd), per)]
    opt = [Kernel(name="void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::"
                  "native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous"
                  " namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, "
                  "false>, float*, double, double, double, double, double, bool, float*, "
                  "float*>(int64_t, at::native::(anonymous namespace)::TensorListMetadata<4>, "
                  "...)", op="aten::_fused_adamw_", dur_us=95.0 * scale, grid=(320, 1, 1),
                  block=(512, 1, 1))] * 4
    return StepPlan(number=number, forward=fwd, backward=bwd, optimizer=opt, buckets=buckets)


def sized(rt: RankTrace, target_bytes: int) -> RankTrace:
    """`rt` with its first step repeated (renumbered) until the trace is about
    `target_bytes` long; the per-step size is measured by rendering one step."""
    one = rt.model_copy(update={"steps": rt.steps[:1]})
    first = sum(len(p.encode()) for p in render(one))
    two = rt.model_copy(update={"steps": [rt.steps[0], rt.steps[0].model_copy(
        update={"number": rt.steps[0].number + 1})]})
    per_step = max(sum(len(p.encode()) for p in render(two)) - first, 1)
    n = max(1, math.ceil((target_bytes - (first - per_step)) / per_step))
    base = rt.steps[0]
    steps = [base.model_copy(update={"number": base.number + i,
                                     "buckets": [b.model_copy() for b in base.buckets]})
             for i in range(n)]
    return rt.model_copy(update={"steps": steps})


def write_large_job(root: Path, *, ranks: int = 2, size_bytes: int = 100_000_000,
                    gz: bool = False) -> list[Path]:
    """One job of `ranks` traces of about `size_bytes` each (uncompressed), ranks synchronized
    at their all-reduces; rank r's compute is (1 + r/50) slower so the ranks are told apart."""
    specs = []
    for r in range(ranks):
        step = model_step(scale=1.0 + r / 50)
        rt = RankTrace(rank=r, world_size=ranks, pid=41_000 + r, device=r % 8,
                       base_ns=1_746_352_800_000_000_000, clock_us=7_200_000_000.0 + 3.0 * r,
                       trace_name=f"/tmp/profiler/rank{r}.pt.trace.json", steps=[step])
        specs.append(sized(rt, size_bytes))
    synchronize(specs)
    paths = []
    for rt in specs:
        p = root / f"rank{rt.rank}.pt.trace.json{'.gz' if gz else ''}"
        write_trace(p, rt, level=1)
        paths.append(p)
    return paths


def main(argv: list[str] | None = None) -> int:
    """Write a large job and say how fast: `python -m goodput_agent.evals.kineto_writer DIR`."""
    ap = argparse.ArgumentParser(description="write a job of large Kineto traces")
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--size-mb", type=float, default=100.0)
    ap.add_argument("--gz", action="store_true")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    paths = write_large_job(a.out, ranks=a.ranks, size_bytes=int(a.size_mb * 1e6), gz=a.gz)
    dt = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} traces, {size / 1e6:.1f} MB on disk in {dt:.1f} s "
          f"({a.ranks * a.size_mb / dt:.0f} MB/s of JSON)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
