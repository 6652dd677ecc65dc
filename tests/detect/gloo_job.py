"""A real data-parallel training job for the live-detection tests: torch.distributed with the
gloo backend on CPU, one process per rank (started by `srun`, which sets SLURM_PROCID), an
all_reduce per step, a timestamped progress line per step from rank 0.

Faults are made to happen by the test, never by timing:
- `--hang-rank R --hang-at N`: rank R, at step N, blocks in `load_batch` until the file
  RELEASE exists (the others wait for it in all_reduce); before blocking it writes
  STATE_DIR/hung.
- `--slow-rank R`: rank R spends `--slow-s` of Python work per step in `slow_compute` (the
  others wait for it in all_reduce).
Every rank writes STATE_DIR/ready-<rank> once it has run `--ready-at` steps.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import torch
import torch.distributed as dist


def load_batch(step: int, args: argparse.Namespace, rank: int) -> torch.Tensor:
    if rank == args.hang_rank and step == args.hang_at:
        (Path(args.state_dir) / "hung").write_text(str(os.getpid()))
        while not Path(args.release).exists():  # the test releases it (or cancels the job)
            time.sleep(0.05)
    return torch.ones(1024) * (rank + 1)


def slow_compute(seconds: float) -> float:
    end, x = time.perf_counter() + seconds, 0.0
    while time.perf_counter() < end:  # Python work, seen by py-spy in this frame
        x += 1.0
    return x


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--step-s", type=float, default=0.05)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--hang-at", type=int, default=-1)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-s", type=float, default=0.5)
    p.add_argument("--ready-at", type=int, default=20)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--release", default="/nonexistent")
    args = p.parse_args()
    rank = int(os.environ["SLURM_PROCID"])
    world = int(os.environ["SLURM_NTASKS"])
    dist.init_process_group("gloo", init_method=f"file://{args.state_dir}/rendezvous",
                            rank=rank, world_size=world)
    for step in range(1, args.steps + 1):
        batch = load_batch(step, args, rank)
        if rank == args.slow_rank:
            slow_compute(args.slow_s)
        else:
            time.sleep(args.step_s)
        dist.all_reduce(batch)
        if rank == 0:
            now = datetime.now(UTC).isoformat(timespec="milliseconds")
            print(f"{now} iteration {step:6d} | loss {1.0 / step:.5f}", flush=True)
        if step == args.ready_at:
            (Path(args.state_dir) / f"ready-{rank}").write_text(str(os.getpid()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
