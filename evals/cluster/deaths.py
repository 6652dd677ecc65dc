"""How one rank dies: Xid lines, Python exceptions and their error files, CUDA errors."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from goodput_agent.evals.cluster.context import Ctx
from goodput_agent.evals.cluster.training import Death, traceback_lines


def _t_fail(ctx: Ctx) -> datetime:
    return ctx.spec.start + timedelta(
        seconds=ctx.spec.fail_after_s, microseconds=ctx.rng.randint(0, 999999)
    )


def xid_line(
    ctx: Ctx, local: int, code: int, text: str, pid: int | None = None, name: str = "python"
) -> str:
    who = f"pid={pid}, name={name}, " if pid else "pid='<unknown>', name=<unknown>, "
    return f"NVRM: Xid (PCI:{ctx.bus[local]}): {code}, {who}{text}"


def write_error_file(ctx: Ctx, rank: int, t: datetime, tb: list[str]) -> None:
    exc = next((x for x in reversed(tb) if x and not x.startswith(" ")), tb[-1])
    doc = {
        "message": {
            "message": exc,
            "extraInfo": {
                "py_callstack": "\n".join(tb) + "\n",
                "timestamp": str(int(t.timestamp())),
            },
        }
    }
    ctx.sink(f"errors/error-{rank}.json").raw = json.dumps(doc, indent=2) + "\n"


def py_exception(
    ctx: Ctx, rank: int, t: datetime, frames: list[tuple[str, int, str, str]], exc: list[str]
) -> Death:
    """An uncaught Python exception on `rank` (a primary failure of its own)."""
    tb = traceback_lines(frames, exc)
    prefix = ctx.tb_prefix(rank)
    ctx.out(rank, t, [prefix + line for line in tb])
    efile = "error_files" in ctx.spec.extras and ctx.has_agent
    if efile:
        write_error_file(ctx, rank, t, tb)
    return Death(t + timedelta(milliseconds=ctx.rng.randint(300, 900)), 1, efile, tb)


def nccl_cuda_failure(ctx: Ctx, cuda_error: str) -> list[str]:
    """The DistBackendError a collective raises when CUDA fails under NCCL."""
    return [
        "torch.distributed.DistBackendError: NCCL error in: "
        "/pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:3012, unhandled cuda error (run with NCCL_DEBUG=INFO for "
        "details), "
        f"NCCL version {ctx.nccl}",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        f"Cuda failure {cuda_error}",
    ]
