"""How one rank dies: Xid lines, Python exceptions and their error files, CUDA errors."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from goodput_agent.evals.cluster.context import Ctx
from goodput_agent.evals.cluster.spec import CUDA_ASYNC_NOTE
from goodput_agent.evals.cluster.training import (
    Death,
    traceback_lines,
    train_frames,
)


def _t_fail(ctx: Ctx) -> datetime:
    return ctx.spec.start + timedelta(
        seconds=ctx.spec.fail_after_s, microseconds=ctx.rng.randint(0, 999999)
    )


def xid_line(
    ctx: Ctx, local: int, code: int, text: str, pid: int | None = None, name: str = "python"
) -> str:
    who = f"pid={pid}, name={name}, " if pid else "pid='<unknown>', name=<unknown>, "
    return f"NVRM: Xid (PCI:{ctx.bus[local]}): {code}, {who}{text}"


def recovery_action(ctx: Ctx, local: int, pid: int, action: str) -> str:
    """Xid 154: the driver changed the GPU's recovery action (reset, reboot, drain)."""
    return xid_line(
        ctx, local, 154, f"GPU recovery action changed from 0x0 (None) to {action}", pid
    )


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


def cuda_error(ctx: Ctx, rank: int, t: datetime, err: str, tail: str = "backward") -> Death:
    return py_exception(
        ctx,
        rank,
        t,
        train_frames(ctx, tail),
        [f"RuntimeError: CUDA error: {err}", *CUDA_ASYNC_NOTE],
    )


def watchdog_cuda_abort(ctx: Ctx, rank: int, t: datetime, err: str) -> Death:
    """The NCCL watchdog thread hits a CUDA error on its own GPU and aborts the process."""
    pg = ctx.pg(rank)
    what = (
        "NCCL watchdog thread terminated"
        if ctx.spec.torch == "2.1"
        else "Process group watchdog thread terminated"
    )
    msg = f"{pg} {what} with exception: CUDA error: {err}"
    lines = [
        f"{ctx.nccl_prefix(rank, 97)} NCCL WARN Cuda failure '{err}'",
        ctx.c10(rank, t, "E", "ProcessGroupNCCL.cpp:1595", msg),
        *CUDA_ASYNC_NOTE,
        "",
        "Exception raised from c10_cuda_check_implementation at "
        "/pytorch/c10/cuda/CUDAException.cpp:43 "
        "(most recent call first):",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {msg}",
        *CUDA_ASYNC_NOTE,
    ]
    ctx.out(rank, t, lines)
    return Death(t + timedelta(milliseconds=ctx.rng.randint(150, 500)), -6)


def heartbeat_abort(ctx: Ctx, rank: int, t: datetime) -> Death:
    """PyTorch's heartbeat monitor killing a rank whose watchdog is stuck inside a CUDA call."""
    pg = ctx.pg(rank)
    ms = timedelta(milliseconds=1)
    ctx.out(
        rank,
        t,
        [
            ctx.c10(
                rank,
                t,
                "E",
                "ProcessGroupNCCL.cpp:1423",
                f"{pg} Heartbeat monitor timed out! Process "
                "will be terminated after dumping debug info. workMetaList_.size()=2",
            ),
            ctx.c10(
                rank,
                t + ms,
                "E",
                "ProcessGroupNCCL.cpp:1468",
                f"{pg} ProcessGroupNCCL preparing to dump debug info.",
            ),
            ctx.c10(
                rank,
                t + 2 * ms,
                "F",
                "ProcessGroupNCCL.cpp:1299",
                f"{pg} ProcessGroupNCCL's "
                "watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
                "collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) "
                "hang "
                "blocking the watchdog, and could be triggered by another thread holding the GIL "
                "inside "
                "a CUDA api (for example, CudaEventDestroy), or other deadlock-prone behaviors.If "
                "you "
                "suspect the watchdog is not actually stuck and a longer timeout would help, you "
                "can "
                "either increase the timeout (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) to a larger value "
                "or "
                "disable the heartbeat monitor (TORCH_NCCL_ENABLE_MONITORING=0).If either of "
                "aforementioned helps, feel free to file an issue to PyTorch about the short "
                "timeout or "
                "false positive abort; otherwise, please attempt to debug the hang. ",
            ),
        ],
    )
    return Death(t + timedelta(milliseconds=600), -6)
