"""Scale benchmark: investigate a ~2 GB bundle vs `grep -E` over the same files.

    python benchmarks/scan_scale.py [--scale 1.0] [--keep DIR]

Prints time and peak RSS of `goodput investigate`, the time of grep, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RANKS, NODES, GPUS = 1024, 128, 8
GREP_PATTERN = ("NVRM|Xid|Out of memory|oom-kill|segfault|mlx5|Traceback|Error|NCCL WARN|"
                "Watchdog caught|CUDA out of memory|Killed process|DUE TO")


def _noise_rank(rng: random.Random, rank: int, i: int) -> str:
    return (f"2024-05-01 10:{(i // 600) % 60:02d}:{(i // 10) % 60:02d},{i % 1000:03d} INFO "
            f"[rank{rank}] step {i} loss {rng.random() * 3:.4f} lr 3.0e-04 grad_norm "
            f"{rng.random():.3f} tokens/s {rng.randint(9000, 11000)}\n")


def _noise_kernel(node: str, i: int) -> str:
    return (f"2024-05-01T10:{(i // 600) % 60:02d}:{(i // 10) % 60:02d}+0000 {node} kernel: "
            f"audit: type=1400 audit({1714557600 + i}.{i % 1000:03d}:{i}): apparmor=\"ALLOWED\" "
            f"operation=\"open\" profile=\"snap\" name=\"/proc/{i}/stat\"\n")


def generate(root: Path, scale: float) -> int:
    rng = random.Random(1)
    per_rank = int(1_500_000 * scale)
    per_node = int(3_500_000 * scale)
    total = 0
    (root / "logs").mkdir(parents=True)
    culprit_node, culprit_rank = 77, 77 * GPUS + 5
    for r in range(RANKS):
        node = f"gpu-{r // GPUS:03d}"
        lines = [f"{node}:{1000 + r}:{2000 + r} [{r % GPUS}] NCCL INFO comm 0xabc rank {r} nranks "
                 f"{RANKS} cudaDev {r % GPUS} busId {r % GPUS:x}0000 - Init COMPLETE\n"]
        size, i = len(lines[0]), 0
        while size < per_rank:
            line = _noise_rank(rng, r, i)
            lines.append(line)
            size += len(line)
            i += 1
        if r == culprit_rank:
            lines.append("2024-05-01 10:59:58,100 ERROR RuntimeError: CUDA error: unspecified "
                         "launch failure\n")
        else:
            lines.append(f"[rank{r}]:[E501 11:09:59.000000 1 ProcessGroupNCCL.cpp:616] [Rank {r}] "
                         "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90, "
                         "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                         "600011 milliseconds before timing out.\n")
        data = "".join(lines)
        (root / "logs" / f"rank{r}.log").write_text(data)
        total += len(data)
    for n in range(NODES):
        node = f"gpu-{n:03d}"
        d = root / "nodes" / node
        d.mkdir(parents=True)
        lines, size, i = [], 0, 0
        while size < per_node:
            line = _noise_kernel(node, i)
            lines.append(line)
            size += len(line)
            i += 1
        if n == culprit_node:
            xid = (f"2024-05-01T10:59:57+0000 {node} kernel: NVRM: Xid (PCI:0000:9b:00): 79, "
                   "pid=1234, name=python, GPU has fallen off the bus.\n")
            lines.insert(len(lines) // 2, xid)
        data = "".join(lines)
        (d / "kern.log").write_text(data)
        total += len(data)
    (root / "incident.yaml").write_text("question: why did job 1 fail?\njob: '1'\n")
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="goodput-bench-"))
    bundle = root / "bundle"
    if not bundle.exists():
        t = time.perf_counter()
        size = generate(bundle, args.scale)
        print(f"generated {size / 1e9:.2f} GB in {time.perf_counter() - t:.1f} s at {bundle}")
    files = [str(p) for p in bundle.rglob("*.log")]
    # warm the page cache for both contenders alike
    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)
    t = time.perf_counter()
    subprocess.run(["grep", "-E", "-c", GREP_PATTERN, *files], stdout=subprocess.DEVNULL,
                   env={**os.environ, "LC_ALL": "C"}, check=False)
    grep_s = time.perf_counter() - t
    goodput = shutil.which("goodput") or str(Path(sys.executable).with_name("goodput"))
    t = time.perf_counter()
    proc = subprocess.run([goodput, "investigate", str(bundle), "--json", "--ledger",
                           str(root / "bench.duckdb")], capture_output=True, text=True)
    goodput_s = time.perf_counter() - t
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    verdict = proc.stdout.split('"category": "', 1)[-1].split('"', 1)[0] if proc.stdout else "?"
    print(f"goodput investigate: {goodput_s:.2f} s, peak RSS {rss_mb:.0f} MB, exit "
          f"{proc.returncode}, verdict {verdict}")
    print(f"grep -E baseline:    {grep_s:.2f} s")
    print(f"ratio goodput/grep:  {goodput_s / grep_s:.2f}x  (target <= 1.5x, RSS < 1024 MB)")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
