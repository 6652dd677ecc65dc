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
import time
from pathlib import Path

from goodput_agent.evals.kineto.large import model_step, sized, write_large_job
from goodput_agent.evals.kineto.layout import chain, lay_out, synchronize
from goodput_agent.evals.kineto.render import render, write_events, write_trace
from goodput_agent.evals.kineto.spec import (
    A100,
    COMPUTE_STREAM,
    DATALOADER,
    H100,
    NCCL_NEW,
    NCCL_OLD,
    Bucket,
    HostSync,
    Kernel,
    RankTrace,
    StepPlan,
    Style,
)

__all__ = [
    "A100",
    "Bucket",
    "COMPUTE_STREAM",
    "DATALOADER",
    "H100",
    "HostSync",
    "Kernel",
    "NCCL_NEW",
    "NCCL_OLD",
    "RankTrace",
    "StepPlan",
    "Style",
    "chain",
    "lay_out",
    "model_step",
    "render",
    "sized",
    "synchronize",
    "write_events",
    "write_large_job",
    "write_trace",
]


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
