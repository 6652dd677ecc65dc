"""Kineto (torch.profiler) trace JSON of one rank of a DDP job: ProfilerStep annotations, a
DataLoader span, launches on the CPU, kernels on the GPU stream, an NCCL all-reduce per step."""

from __future__ import annotations

from dataclasses import dataclass, field

COMPUTE_KERNELS = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1",
                   "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernel"
                   "Impl(at::TensorIteratorBase&, c10::string_view)::{lambda()#2}>",
                   "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
                   "cutlass::bfloat16_t>, false, true, false, false, true, true, false>",
                   "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32"
                   "_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2"
                   "_tn_align8::Params)")
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
DATALOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


@dataclass
class StepPlan:
    """Times in microseconds from the step's start, on this rank."""
    input_us: float  # waiting for the next batch
    host_gap_us: float  # extra host time between kernel launches (syncs, python)
    kernel_us: list[float]  # compute kernels, in order
    comm_start_wait_us: float  # how long the all-reduce waits for the slowest rank
    comm_us: float  # the all-reduce's own transfer


@dataclass
class RankTrace:
    rank: int
    world: int
    pid: int
    base_ns: int
    events: list[dict] = field(default_factory=list)
    _corr: int = 1

    def _cpu(self, name: str, ts: float, dur: float, cat: str = "cpu_op") -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": self.pid,
                            "tid": self.pid + 1, "ts": round(ts, 3), "dur": round(dur, 3),
                            "args": {"External id": self._corr}})

    def _kernel(self, name: str, launch_ts: float, ts: float, dur: float, stream: int) -> None:
        corr = self._corr
        self._corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                            "pid": self.pid, "tid": self.pid + 1, "ts": round(launch_ts, 3),
                            "dur": 4.1, "args": {"correlation": corr}})
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                            "ts": round(ts, 3), "dur": round(dur, 3),
                            "args": {"device": 0, "stream": stream, "correlation": corr,
                                     "grid": [132, 1, 1], "block": [256, 1, 1]}})
        self.events.append({"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": round(ts, 3),
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})
        self.events.append({"ph": "s", "id": corr, "pid": self.pid, "tid": self.pid + 1,
                            "ts": round(launch_ts, 3), "cat": "ac2g", "name": "ac2g"})

    def step(self, number: int, start: float, plan: StepPlan) -> float:
        """Lay one step out; return when it ends (the all-reduce's end)."""
        t = start
        if plan.input_us > 0:
            self._cpu(DATALOADER, t, plan.input_us, "user_annotation")
        t += plan.input_us + 15
        gap = plan.host_gap_us / max(1, len(plan.kernel_us))
        gpu_t = t + 8
        for i, dur in enumerate(plan.kernel_us):
            launch = max(t, gpu_t - 30) if gap < 1 else t
            if gap >= 1:
                self._cpu("aten::item", t, gap, "cpu_op")
                self._cpu("cudaStreamSynchronize", t + gap * 0.3, gap * 0.6, "cuda_runtime")
                launch = t + gap
            kstart = max(gpu_t, launch + 5)
            self._kernel(COMPUTE_KERNELS[i % len(COMPUTE_KERNELS)], launch, kstart, dur, 7)
            t = launch + 6
            gpu_t = kstart + dur
        comm_len = plan.comm_start_wait_us + plan.comm_us
        self._cpu("record_param_comms", t, 20)
        self._kernel(NCCL_KERNEL, t + 2, gpu_t + 3, comm_len, 20)
        end = gpu_t + 3 + comm_len + 10
        self._cpu(f"ProfilerStep#{number}", start, end - start, "user_annotation")
        return end

    def document(self) -> dict:
        return {"schemaVersion": 1, "deviceProperties": [
                    {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85028896768,
                     "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
                "distributedInfo": {"backend": "nccl", "rank": self.rank,
                                    "world_size": self.world},
                "baseTimeNanoseconds": self.base_ns, "displayTimeUnit": "ms",
                "traceEvents": self.events, "traceName": f"rank{self.rank}"}
