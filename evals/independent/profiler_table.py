"""Issue 24, class 2: the torch profiler's `prof.key_averages().table(...)` text, of a good run
and a slow one, pasted instead of traces: rows of self/total CPU and CUDA time per op."""

from __future__ import annotations

import random

import yaml

from .case import Case, Expected

COLUMNS = ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA",
           "Self CUDA %", "CUDA total", "CUDA time avg", "# of Calls")
DATALOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _t(us: float) -> str:
    """torch.autograd.profiler_util's time format."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _ops(rng: random.Random, steps: int, cause: str | None) -> list[tuple[str, float, float,
                                                                          float, float, int]]:
    """(name, self cpu, cpu total, self cuda, cuda total) in us, calls, for `steps` steps."""
    gemm = rng.uniform(52000, 56000) * steps
    nccl = rng.uniform(9000, 11000) * steps * (4.0 if cause == "communication" else 1)
    wait = rng.uniform(300, 500) * steps * (110 if cause == "input_stall" else 1)
    step = gemm * 1.25 + nccl + wait
    others = wait + gemm * 0.02 + nccl * 0.004 + 1400.0 * steps + 3100.0 * steps
    sync = step * 0.97 - others  # the host waits for the GPU at the step's end
    kernels = gemm * 0.92
    copy = 900.0 * steps
    return [("ProfilerStep*", step * 0.03, step, 0.0, kernels + nccl + copy, steps),
            ("cudaStreamSynchronize", sync, sync, 0.0, 0.0, steps),
            (DATALOADER, wait, wait, 0.0, 0.0, steps),
            ("aten::mm", gemm * 0.02, gemm * 0.05, 0.0, kernels, 96 * steps),
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1",
             0.0, 0.0, kernels, kernels, 96 * steps),
            ("nccl:all_reduce", nccl * 0.004, nccl * 0.006, 0.0, nccl, 4 * steps),
            (ALLREDUCE, 0.0, 0.0, nccl, nccl, 4 * steps),
            ("aten::copy_", 1400.0 * steps, 2600.0 * steps, 0.0, copy, 40 * steps),
            ("Memcpy HtoD (Pageable -> Device)", 0.0, 0.0, copy, copy, 40 * steps),
            ("cudaLaunchKernel", 3100.0 * steps, 3100.0 * steps, 0.0, 0.0, 520 * steps)]


def key_averages(rng: random.Random, steps: int, cause: str | None, sort: str) -> str:
    ops = _ops(rng, steps, cause)
    cpu_total = sum(o[1] for o in ops)
    cuda_total = sum(o[3] for o in ops) or 1.0
    key = {"cuda_time_total": 4, "cpu_time_total": 2}[sort]
    ops.sort(key=lambda o: -o[key])
    sep = "  ".join(["-" * 55] + ["-" * 12] * len(COLUMNS)) + "  "
    head = "  ".join([f"{'Name':>55}"] + [f"{c:>12}" for c in COLUMNS]) + "  "
    rows = [sep, head, sep]
    for name, scpu, cpu, scuda, cuda, calls in ops:
        short = name if len(name) <= 55 else name[:52] + "..."
        cells = [f"{scpu / cpu_total:.2%}", _t(scpu), f"{cpu / cpu_total:.2%}", _t(cpu),
                 _t(cpu / calls), _t(scuda), f"{scuda / cuda_total:.2%}", _t(cuda),
                 _t(cuda / calls), str(calls)]
        rows.append("  ".join([f"{short:>55}"] + [f"{c:>12}" for c in cells]) + "  ")
    rows += [sep, f"Self CPU time total: {_t(cpu_total)}", f"Self CUDA time total: "
             f"{_t(cuda_total)}", ""]
    return "\n".join(rows)


def profiler_tables(rng: random.Random, case_id: str, variant: int) -> Case:
    cause = ("input_stall", "communication")[variant % 2]
    steps = rng.choice((5, 10, 20))
    sort = rng.choice(("cuda_time_total", "cpu_time_total"))
    files = {rng.choice(("profile/before.txt", "baseline/key_averages.txt")):
             key_averages(rng, steps, None, sort),
             rng.choice(("profile/after.txt", "slow/key_averages.txt")):
             key_averages(rng, steps, cause, sort),
             "incident.yaml": yaml.safe_dump({"question": rng.choice((
                 "training got slower since yesterday's run, why? (profiler tables attached)",
                 "why is the step time higher in the new run?"))})}
    what = {"input_stall": "the DataLoader __next__ row grows ~100x (ms to tens of ms per step) "
                           "while GEMM and all-reduce rows hold",
            "communication": "the NCCL all-reduce kernel's CUDA total grows ~4x while the GEMMs "
                             "and the DataLoader hold"}[cause]
    return Case(expected=Expected(
        case_id=case_id, kind="slowdown", category=cause, max_confidence=0.7,
        notes=f"two key_averages() tables of {steps} profiled steps, the good run and the slow "
              f"one: {what}. Aggregates only: no timeline to see overlap"), files=files)
