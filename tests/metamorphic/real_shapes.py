"""Small bundles in the shapes real users paste (issue 24's classes), written for these tests
(our own lines in the formats, not copied public text), and the five changes a real paste goes
through: a long preamble before the decisive line, one rank of eight kept, lines wrapped at 80
columns, colour codes (ANSI and syslog's #033 escape), the kernel log left out."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

RANKS = 8


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _nccl_init(rank: int, host: str) -> str:
    return (f"[rank{rank}]:{host}:{4100 + rank}:{4200 + rank} [{rank % 8}] NCCL INFO comm "
            f"0x55{rank:02d} rank {rank} nranks {RANKS} cudaDev {rank % 8} busId "
            f"{(rank % 8) * 16 + 0x18:x}000 commId 0xabc - Init COMPLETE\n")


def _progress(rank: int, step: int) -> str:
    return f"[rank{rank}]:2024-05-01 10:{step:02d}:00,000 INFO step {step} loss 2.{step:02d}\n"


def dataloader_killed(root: Path) -> Path:
    log = "".join(_progress(0, s) for s in range(5)) + textwrap.dedent("""\
        [rank0]:Traceback (most recent call last):
        [rank0]:  File "train.py", line 40, in <module>
        [rank0]:    for batch in loader:
        [rank0]:RuntimeError: DataLoader worker (pid 7781) is killed by signal: Killed.
        """)
    kern = ("2024-05-01T10:05:10+0000 gpu-07 kernel: Out of memory: Killed process 7781 "
            "(pt_data_worker) total-vm:91234567kB, anon-rss:61234567kB\n")
    return _write(root, {"logs/rank0.log": log, "nodes/gpu-07/kern.log": kern})


def shm_bus_error(root: Path) -> Path:
    log = "".join(_progress(0, s) for s in range(3)) + (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).\n"
        "RuntimeError: DataLoader worker (pid 912) is killed by signal: Bus error. It is "
        "possible that dataloader's workers are out of shared memory. Please try to raise your "
        "shared memory limit.\n")
    return _write(root, {"logs/train.log": log})


def gpu_lost(root: Path) -> Path:
    log = "".join(_progress(2, s) for s in range(4)) + (
        "[rank2]:terminate called after throwing an instance of 'c10::Error'\n"
        "[rank2]:  what():  CUDA error: unknown error\n")
    smi = ("$ nvidia-smi\nUnable to determine the device handle for GPU 0000:3b:00.0: "
           "Unknown Error\n")
    kern = ("2024-05-01T10:03:58+0000 gpu-02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=5120, "
            "name=python, GPU has fallen off the bus.\n")
    return _write(root, {"logs/rank2.log": log, "notes/smi.txt": smi,
                         "nodes/gpu-02/kern.log": kern})


def time_limit(root: Path) -> Path:
    log = "".join(_progress(0, s) for s in range(6)) + (
        "slurmstepd: error: *** JOB 4242 ON gpu-01 CANCELLED AT 2024-05-01T10:07:00 DUE TO "
        "TIME LIMIT ***\n")
    return _write(root, {"logs/slurm-4242.out": log})


def silent_rank_hang(root: Path) -> Path:
    """Eight ranks in one srun -l style log: seven time out in the same all-reduce, rank 3
    printed its NCCL init and progress but no watchdog line."""
    lines = [_nccl_init(r, f"node{r // 4}") for r in range(RANKS)]
    lines += [_progress(r, s) for s in range(3) for r in range(RANKS)]
    for r in range(RANKS):
        if r == 3:
            continue
        lines.append(
            f"[rank{r}]:[E501 10:40:00.000000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog "
            "caught collective operation timeout: WorkNCCL(SeqNum=118, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800010 milliseconds before "
            "timing out.\n")
    return _write(root, {"logs/train.log": "".join(lines)})


def pods_table(root: Path) -> Path:
    table = textwrap.dedent("""\
        NAME                      READY   STATUS      RESTARTS      AGE
        trainer-master-0          0/1     OOMKilled   3 (2m ago)    40m
        trainer-worker-0          1/1     Running     0             40m
        trainer-worker-1          1/1     Running     0             40m
        """)
    return _write(root, {"k8s/pods.txt": table})


def sglang_retract(root: Path) -> Path:
    lines = []
    for i in range(8):
        t = f"2025-03-01 10:{i:02d}:00"
        lines.append(f"[{t} TP0] Decode batch. #running-req: 40, #token: 95000, token usage: "
                     f"0.99, gen throughput (token/s): 310.5, #queue-req: {12 + i}, \n")
        lines.append(f"[{t} TP0] Decode out of memory happened. #retracted_reqs: 2, "
                     "#new_token_ratio: 0.2000 -> 0.3000\n")
    return _write(root, {"logs/sglang.log": "".join(lines)})


CASES: dict[str, Callable[[Path], Path]] = {
    "dataloader_killed": dataloader_killed, "shm_bus_error": shm_bus_error,
    "gpu_lost": gpu_lost, "time_limit": time_limit, "silent_rank_hang": silent_rank_hang,
    "pods_table": pods_table, "sglang_retract": sglang_retract,
}


# --- the changes a real paste goes through ---------------------------------------------------

def _logs(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and "nodes" not in p.parts]


def preamble(root: Path) -> Path:
    """200 KB of an argument dump and NCCL INFO lines before each log's first line."""
    dump = "".join(f"  {k:<40} ........ {k.upper()}_VALUE\n" for k in
                   (f"arg_{i}" for i in range(2000)))
    info = "".join(f"gpu-9:1:1 [0] NCCL INFO Channel {i % 32:02d}/0 : 0[0] -> 1[1] via P2P/IPC\n"
                   for i in range(1600))
    for p in _logs(root):
        p.write_text(dump + info + p.read_text())
    return root


def one_rank_of_eight(root: Path) -> Path:
    """Keep only rank 5's lines (or the file as it is when it has no rank prefixes)."""
    for p in _logs(root):
        lines = p.read_text().splitlines(keepends=True)
        if any(ln.startswith("[rank") for ln in lines):
            p.write_text("".join(ln for ln in lines if ln.startswith("[rank5]:")) or lines[-1])
    return root


def wrap80(root: Path) -> Path:
    for p in _logs(root):
        out = []
        for ln in p.read_text().splitlines():
            out += [ln[i:i + 80] for i in range(0, len(ln), 80)] or [""]
        p.write_text("\n".join(out) + "\n")
    return root


_WORDS = re.compile(r"(error|Error|ERROR|Killed|INFO|NCCL|Unable|TIME LIMIT|Decode)")


def colour(root: Path) -> Path:
    """rich/torchrun ANSI colours on some files, rsyslog's #033 escape on the others."""
    for i, p in enumerate(_logs(root)):
        esc = "\x1b" if i % 2 == 0 else "#033"
        p.write_text(_WORDS.sub(rf"{esc}[1;31m\1{esc}[0m", p.read_text()))
    return root


def drop_kernel_log(root: Path) -> Path:
    for p in sorted(root.rglob("*")):
        if p.is_file() and "nodes" in p.parts:
            p.unlink()
    return root


TRANSFORMS: dict[str, Callable[[Path], Path]] = {
    "preamble_200k": preamble, "one_rank_of_eight": one_rank_of_eight, "wrap80": wrap80,
    "colour_codes": colour, "no_kernel_log": drop_kernel_log,
}
