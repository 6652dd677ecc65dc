"""What one rank's trace holds: kernels, NCCL buckets, host syncs and steps, the GPU
and the profiler version."""

from __future__ import annotations

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
