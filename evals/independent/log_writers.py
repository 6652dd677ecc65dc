"""Kernel logs (journalctl -k short / short-iso / short-precise, dmesg -T / --time-format iso)
and the ranks' own output with the prefixes torchrun --tee and srun -l put in front."""

from __future__ import annotations

import random
from datetime import datetime

from .model import Job

KERNEL_STYLES = ("short-iso", "short", "short-precise", "dmesg-T", "dmesg-iso")
PREFIX_STYLES = ("rank", "default", "srun")


def kernel_line(job: Job, host: str, t: datetime, text: str, style: str) -> str:
    loc = job.local(t)
    name = job.log_host(host)
    if style == "short-iso":
        return f"{loc.strftime('%Y-%m-%dT%H:%M:%S%z')} {name} kernel: {text}"
    if style == "short":
        return f"{loc.strftime('%b %d %H:%M:%S')} {name} kernel: {text}"
    if style == "short-precise":
        return f"{loc.strftime('%b %d %H:%M:%S.%f')} {name} kernel: {text}"
    if style == "dmesg-T":
        return f"[{loc.strftime('%a %b %d %H:%M:%S %Y')}] {text}"
    return f"{loc.strftime('%Y-%m-%dT%H:%M:%S,%f%z')} {text}"


def kernel_file(job: Job, host: str, events: list[tuple[datetime, str]], style: str) -> str:
    return "\n".join(kernel_line(job, host, t, text, style)
                     for t, text in sorted(events)) + "\n"


def glog(t: datetime, level: str, where: str) -> str:
    """PyTorch's C++ log header, as ProcessGroupNCCL prints it (UTC here: the job ran in UTC)."""
    return f"[{level}{t.strftime('%m%d %H:%M:%S.%f')} {where}]"


def pylog(t: datetime, text: str) -> str:
    return f"{t.strftime('%Y-%m-%d %H:%M:%S,%f')[:-3]} - train - {text}"


def prefix(rank: int, style: str) -> str:
    return {"rank": f"[rank{rank}]:", "default": f"[default{rank}]:", "srun": f"{rank}: "}[style]


def write_rank_logs(files: dict[str, str], job: Job, lines: dict[int, list[tuple[datetime, str]]],
                    rng: random.Random) -> None:
    """Per-rank files (rank in the name) or one combined log with rank prefixes."""
    layout = rng.choice(("per-rank", "combined", "per-node"))
    style = rng.choice(PREFIX_STYLES)
    if layout == "per-rank":
        name = rng.choice(("logs/rank{r}.log", "logs/train_rank_{r}.txt", "output/rank-{r}.out"))
        for rank, rows in lines.items():
            files[name.format(r=rank)] = "\n".join(text for _, text in sorted(rows)) + "\n"
        return
    if layout == "per-node":
        for host in job.hosts:
            merged = sorted((t, r, text) for r in job.ranks_on(host)
                            for t, text in lines.get(r, []))
            files[f"logs/{host}.log"] = "\n".join(f"{prefix(r, style)}{text}"
                                                  for _, r, text in merged) + "\n"
        return
    merged = sorted((t, r, text) for r, rows in lines.items() for t, text in rows)
    files[rng.choice(("logs/slurm-{j}.out", "train-{j}.out"))
          .format(j=job.job_id)] = "\n".join(f"{prefix(r, style)}{text}"
                                             for _, r, text in merged) + "\n"


def nccl_init(job: Job, rank: int, t: datetime) -> tuple[datetime, str]:
    host = job.log_host(job.host_of(rank))
    pid = job.pids[rank]
    local = job.local_rank(rank)
    bus = ("1b", "3d", "4c", "5d", "9b", "bb", "cb", "db")[local % 8]
    return t, (f"{host}:{pid}:{pid + 71} [{local}] NCCL INFO comm 0x{pid * 4099:x} rank {rank} "
               f"nranks {job.world} cudaDev {local} nvmlDev {local} busId {bus}000 commId "
               f"0x{int(job.job_id) * 7919:x} - Init COMPLETE")


def watchdog(t: datetime, rank: int, seq: int, timeout_ms: int = 600000) -> str:
    return (f"{glog(t, 'E', 'ProcessGroupNCCL.cpp:632')} [Rank {rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
            f"NumelIn=262144, NumelOut=262144, Timeout(ms)={timeout_ms}) ran for "
            f"{timeout_ms + 27} milliseconds before timing out.")


def abort_lines(t: datetime, rank: int) -> list[str]:
    return [f"{glog(t, 'E', 'ProcessGroupNCCL.cpp:1664')} [PG 0 Rank {rank}] Exception (either "
            "an error or timeout) detected by watchdog at work: 4211, last enqueued NCCL work: "
            "4212, last completed NCCL work: 4210.",
            f"{glog(t, 'E', 'ProcessGroupNCCL.cpp:630')} [Rank {rank}] Some NCCL operations have "
            "failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
            "operations might run on corrupted/incomplete data.",
            "terminate called after throwing an instance of 'c10::DistBackendError'"]
