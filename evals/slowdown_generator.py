"""Generate slowdown eval cases: a seeded simulation of a DDP training job, traced with the
PyTorch profiler on every rank (Kineto format), with one cause planted per case.

Each step on each rank: DataLoader `__next__` (GPU idle), an H2D copy, forward kernels,
backward kernels with gradient all-reduce buckets on a second stream, optimizer kernels. The
CPU launches every kernel (cudaLaunchKernel with a correlation id) ahead of the GPU unless the
launch gap is longer than the kernel. Collectives synchronize the ranks: the i-th all-reduce
ends on every rank at (last rank to arrive) + transfer, so a slow rank makes everyone else's
NCCL kernels long while per-rank step times even out. Every host has its own clock offset.

    python -m goodput_agent.evals.slowdown_generator --out DIR --seed 7
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml
from pydantic import BaseModel

from goodput_agent.evals.kineto_writer import write_trace

BASE = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)
CATEGORIES = ("input_stall", "host_overhead", "straggler", "communication", "gpu_throttling")
FWD = ("ampere_sgemm_128x64_tn", "void at::native::vectorized_elementwise_kernel<4, "
       "at::native::GeluCUDAKernelImpl>(int, float*)", "void cutlass::Kernel<cutlass_80_"
       "tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)")
BWD = ("ampere_sgemm_64x64_nt", "void at::native::reduce_kernel<512, 1>(float*)",
       "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackward>(int, float*)")
OPT = ("void at::native::multi_tensor_apply_kernel<at::native::AdamFunctor>(float*)",)
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


class CaseSpec(BaseModel):
    case_id: str
    category: str
    seed: int
    ranks: int = 8
    per_node: int = 4
    steps: int = 6
    culprit: int | None = None  # the straggler / throttled rank
    slow_factor: float = 1.0  # culprit's compute slowdown
    dataloader_ms: float = 0.3  # every rank's input wait per step
    launch_gap_us: float = 6.0  # CPU time between launches
    transfer_factor: float = 1.0  # all-reduce transfer time multiplier
    baseline: bool = True
    host_style: str = "gpu-node"  # gpu-node | nid
    file_style: str = "tensorboard"  # tensorboard | rank (then under nodes/<node>/)
    metric_name: str = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
    nodes_folders: bool = False
    notes: str = ""
    misleading: bool = False


def host(spec: CaseSpec, node: int) -> str:
    return f"gpu-node-{node + 1:02d}" if spec.host_style == "gpu-node" else f"nid{120 + node:05d}"


class _Rank:
    def __init__(self, rank: int, t0: float, pid: int, device: int):
        self.rank, self.t, self.pid, self.device = rank, t0, pid, device
        self.events: list[dict] = []
        self.corr = 1000 * (rank + 1)

    def cpu(self, name: str, ts: float, dur: float, cat: str = "user_annotation") -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": self.pid,
                            "tid": self.pid, "ts": round(ts, 3), "dur": round(dur, 3),
                            "args": {"External id": len(self.events)}})

    def launch(self, ts: float, name: str, start: float, dur: float, stream: int,
               cat: str = "kernel") -> float:
        self.corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel"
                            if cat == "kernel" else "cudaMemcpyAsync", "pid": self.pid,
                            "tid": self.pid, "ts": round(ts, 3), "dur": 4.0,
                            "args": {"correlation": self.corr, "cbid": 211}})
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": self.device,
                            "tid": stream, "ts": round(start, 3), "dur": round(dur, 3),
                            "args": {"queued": 0, "device": self.device, "context": 1,
                                     "stream": stream, "correlation": self.corr,
                                     "registers per thread": 64, "grid": [132, 1, 1],
                                     "block": [256, 1, 1]}})
        return start + dur


def _simulate(spec: CaseSpec, incident: bool, rng: random.Random) -> list[_Rank]:
    t0 = (BASE + timedelta(minutes=30 if incident else 0)).timestamp() * 1e6
    ranks = [_Rank(r, t0 + rng.uniform(0, 50), 4000 + 17 * r, r % spec.per_node)
             for r in range(spec.ranks)]
    planted = incident
    for step in range(1, spec.steps + 1):
        ready: list[list[float]] = []
        state = []
        for rk in ranks:
            r = rk.rank
            slow = spec.slow_factor if planted and r == spec.culprit else 1.0
            dl = (spec.dataloader_ms if planted else 0.3) * 1000 * rng.uniform(0.9, 1.1)
            gap = spec.launch_gap_us if planted else 6.0
            start = rk.t
            rk.cpu("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", start, dl)
            cpu = start + dl + 5
            gpu = rk.launch(cpu, "Memcpy HtoD (Pinned -> Device)", cpu + 6, 180, 7, "gpu_memcpy")
            cpu += gap
            buckets, n_bwd = [], 0
            for phase, names, count, dur in (("fwd", FWD, 12, 140.0), ("bwd", BWD, 24, 170.0)):
                for i in range(count):
                    d = dur * slow * rng.uniform(0.95, 1.05)
                    gpu = rk.launch(cpu, names[i % len(names)], max(cpu + 5, gpu), d, 7)
                    cpu += gap
                    if phase == "bwd":
                        n_bwd += 1
                        if n_bwd % 6 == 0:
                            buckets.append((gpu, cpu))
            ready.append([b[0] for b in buckets])
            state.append((rk, cpu, buckets, start))
        transfer = 700.0 * (spec.transfer_factor if planted else 1.0)
        ends = [max(rb[k] for rb in ready) + transfer * rng.uniform(0.97, 1.03)
                for k in range(len(ready[0]))]
        for rk, cpu, buckets, start in state:
            prev = 0.0
            for k, (bucket_ready, launch_at) in enumerate(buckets):
                s = max(bucket_ready, prev)
                prev = rk.launch(launch_at, NCCL, s, ends[k] - s, 20)
            gpu = prev
            for _ in range(4):
                gpu = rk.launch(max(cpu, prev - 50), OPT[0], max(cpu + 5, gpu), 90.0, 7)
                cpu = max(cpu, prev - 50) + spec.launch_gap_us
            end = max(gpu, cpu) + 30
            if planted and spec.category == "host_overhead":
                rk.events.append({"ph": "X", "cat": "cuda_runtime",
                                  "name": "cudaStreamSynchronize", "pid": rk.pid,
                                  "tid": rk.pid, "ts": round(gpu, 3), "dur": 20.0,
                                  "args": {"correlation": 0}})
            rk.cpu(f"ProfilerStep#{step}", start, end - start)
            rk.t = end + 10
    return ranks


def _dcgm(spec: CaseSpec, out: Path) -> None:
    """dcgm-exporter series for every GPU of the job, the culprit's clocks throttled."""
    lines = [f"# HELP {n} {h}\n# TYPE {n} gauge" for n, h in (
        ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."),
        (spec.metric_name, "Current clock event reasons (bitmask)."),
        ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."))]
    body: list[str] = []
    start = int(BASE.timestamp())
    for name in ("DCGM_FI_DEV_SM_CLOCK", spec.metric_name, "DCGM_FI_DEV_GPU_TEMP"):
        for r in range(spec.ranks):
            node, gpu = host(spec, r // spec.per_node), r % spec.per_node
            labels = (f'gpu="{gpu}",UUID="GPU-{r:08x}-5d1c-4b7e-9f00-{r:012x}",'
                      f'device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",'
                      f'Hostname="{node}"')
            for k in range(0, 3600, 60):
                bad = spec.category == "gpu_throttling" and r == spec.culprit and k >= 1800
                value = {"DCGM_FI_DEV_SM_CLOCK": 1290 if bad else 1980,
                         spec.metric_name: 0x48 if bad else 0,
                         "DCGM_FI_DEV_GPU_TEMP": 91 if bad else 64}[name]
                body.append(f"{name}{{{labels}}} {value} {start + k}")
    out.parent.mkdir(parents=True, exist_ok=True)
    by_name: dict[str, list[str]] = {}
    for line in body:
        by_name.setdefault(line.split("{")[0], []).append(line)
    text = ""
    for head in lines:
        name = head.split()[2]
        text += head + "\n" + "\n".join(by_name[name]) + "\n"
    out.write_text(text + "# EOF\n")


def render_case(spec: CaseSpec, out: Path) -> None:
    rng = random.Random(spec.seed)
    for run, incident in (("incident", True), ("baseline", False)):
        if run == "baseline" and not spec.baseline:
            continue
        for rk in _simulate(spec, incident, rng):
            node = host(spec, rk.rank // spec.per_node)
            offset = (rk.rank // spec.per_node) * 1.7e6  # every host has its own clock
            events = sorted(({**e, "ts": round(e["ts"] + offset, 3)} for e in rk.events),
                            key=lambda e: e["ts"])
            ts_ms = int((BASE.timestamp() + (1800 if incident else 0)) * 1000)
            name = (f"{node}_{rk.pid}.{ts_ms}.pt.trace.json.gz" if spec.file_style ==
                    "tensorboard" else f"rank{rk.rank}.json.gz")
            folder = out / "traces" / run
            if spec.nodes_folders:
                folder = out / "nodes" / node / "traces" / run
            write_trace(folder / name, events, rank=rk.rank, world_size=spec.ranks,
                        trace_name=f"/tmp/profiler/{name.removesuffix('.gz')}",
                        base_ns=int(BASE.timestamp() * 1e9))
    if spec.category == "gpu_throttling" or spec.metric_name != "DCGM_FI_DEV_CLOCKS_EVENT_REASONS":
        _dcgm(spec, out / "metrics" / "dcgm.om")
    (out / "incident.yaml").write_text(yaml.safe_dump({
        "question": "why did training slow down after the restart?", "kind": "slowdown"}))
    culprit = spec.culprit if spec.category in ("straggler", "gpu_throttling") else None
    expected = {"case_id": spec.case_id, "kind": "slowdown", "category": spec.category,
                "node": host(spec, culprit // spec.per_node) if culprit is not None else None,
                "rank": culprit,
                "gpu": str(culprit % spec.per_node) if spec.category == "gpu_throttling"
                and culprit is not None else None,
                "misleading": spec.misleading, "notes": spec.notes}
    (out / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def plan_suite(seed: int = 7, count: int = 30) -> list[CaseSpec]:
    rng = random.Random(seed)
    specs: list[CaseSpec] = []
    for i in range(count):
        cat = CATEGORIES[i % len(CATEGORIES)]
        ranks = rng.choice((4, 8, 8, 16))
        per_node = min(ranks, rng.choice((2, 4, 8)))
        culprit = rng.randrange(ranks) if cat in ("straggler", "gpu_throttling") else None
        kw: dict = {}
        if cat == "input_stall":
            kw["dataloader_ms"] = rng.uniform(4, 9)
            kw["notes"] = "every rank waits for the DataLoader; kernels unchanged"
        elif cat == "host_overhead":
            kw["launch_gap_us"] = rng.uniform(250, 400)
            kw["notes"] = "CPU-bound launches: tiny kernels, launch gaps longer than them"
        elif cat == "straggler":
            kw["slow_factor"] = rng.uniform(1.3, 1.7)
            kw["misleading"] = True
            kw["notes"] = ("one rank's compute is slow; DDP all-reduce evens out step totals, "
                           "the others' NCCL kernels are the long ones")
            if i % 2:
                kw["metric_name"] = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"  # metrics, no throttle
        elif cat == "communication":
            kw["transfer_factor"] = rng.uniform(2.5, 4.0)
            kw["notes"] = "every all-reduce is slower on every rank; no rank stands out"
        else:
            kw["slow_factor"] = rng.uniform(1.3, 1.6)
            kw["metric_name"] = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS" if i % 2
                                 else "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
            kw["misleading"] = True
            kw["notes"] = ("one GPU throttles (HW slowdown + thermal); its rank is a straggler, "
                           "the longest NCCL kernels are on the other ranks")
        specs.append(CaseSpec(
            case_id=f"s{i + 1:02d}-{cat.replace('_', '-')}", category=cat, seed=seed * 1000 + i,
            ranks=ranks, per_node=per_node, culprit=culprit, baseline=i % 3 != 2,
            host_style="gpu-node" if i % 2 else "nid",
            file_style="tensorboard" if i % 4 < 2 else "rank", nodes_folders=i % 4 >= 2, **kw))
    return specs


def generate_suite(out_dir: Path, seed: int = 7, count: int = 30) -> list[CaseSpec]:
    specs = plan_suite(seed, count)
    for spec in specs:
        render_case(spec, out_dir / spec.case_id)
    (out_dir / "suite.json").write_text(json.dumps(
        {"seed": seed, "count": count, "cases": [{"id": s.case_id, "category": s.category,
                                                  "misleading": s.misleading} for s in specs]},
        indent=2) + "\n")
    return specs


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent /
                    "slowdown_cases")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--count", type=int, default=30)
    a = ap.parse_args(argv)
    generate_suite(a.out, a.seed, a.count)


if __name__ == "__main__":
    main()
