"""GPU hardware faults: Xid 79/48/64/74/95/119/94 and how the job dies of them."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from goodput_agent.evals.cluster.context import Ctx, NodeRT, Outcome
from goodput_agent.evals.cluster.deaths import (
    _t_fail,
    cuda_error,
    heartbeat_abort,
    nccl_cuda_failure,
    py_exception,
    recovery_action,
    watchdog_cuda_abort,
    xid_line,
)
from goodput_agent.evals.cluster.endings import _culprit, _finish_crash, pre_decoys
from goodput_agent.evals.cluster.formats import _hex
from goodput_agent.evals.cluster.spec import PY_SITE
from goodput_agent.evals.cluster.training import Death, progress, prologue, train_frames
from goodput_agent.evals.failure_cases.recipe import _VOLUME, AGENT_LAYOUTS, Recipe


def _gpu_xid79(
    ctx: Ctx,
    head: list[str],
    fell: list[str],
    v: str,
    local: int,
    pid: int,
    rank: int,
    t_err: datetime,
) -> tuple[list[str], Death]:
    kmsgs = head + fell
    if v == "xid79-154" or "k8s" in v:
        kmsgs.append(recovery_action(ctx, local, pid, "0x2 (Node Reboot Required)"))
    death = watchdog_cuda_abort(ctx, rank, t_err, "unspecified launch failure")
    return kmsgs, death


def _gpu_xid48_dbe(
    ctx: Ctx, head: list[str], dbe: str, local: int, rng: random.Random, rank: int, t_err: datetime
) -> tuple[list[str], Death]:
    kmsgs = head + [
        dbe,
        xid_line(
            ctx,
            local,
            63,
            f"Row Remapper: New row (0x{_hex(rng, 16)}) marked "
            "for remapping, reset gpu to activate.",
        ),
    ]
    death = cuda_error(ctx, rank, t_err, "uncorrectable ECC error encountered")
    return kmsgs, death


def _gpu_xid64_row_remap(
    ctx: Ctx,
    head: list[str],
    dbe: str,
    local: int,
    pid: int,
    rng: random.Random,
    rank: int,
    t_err: datetime,
) -> tuple[list[str], Death]:
    kmsgs = head + [
        dbe,
        xid_line(
            ctx,
            local,
            64,
            f"Row Remapper Error: (0x{_hex(rng, 16)}) - All reserved rows for bank are remapped",
        ),
        recovery_action(ctx, local, pid, "0x1 (GPU Reset Required)"),
    ]
    death = cuda_error(ctx, rank, t_err, "uncorrectable ECC error encountered", "forward")
    return kmsgs, death


def _gpu_xid74_nvlink(
    ctx: Ctx, rng: random.Random, head: list[str], local: int, pid: int, rank: int, t_err: datetime
) -> tuple[list[str], Death]:
    link = rng.randint(0, 17)
    kmsgs = head + [
        xid_line(
            ctx,
            local,
            74,
            f"NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
            pid,
        )
    ]
    ctx.out(
        rank,
        t_err - timedelta(milliseconds=3),
        [
            f"{ctx.nccl_prefix(rank, 97)} transport/p2p.cc:275 NCCL WARN Cuda failure "
            "'unspecified launch failure'",
            f"{ctx.nccl_prefix(rank, 97)} NCCL INFO transport/p2p.cc:436 -> 1",
        ],
    )
    frames = train_frames(ctx, "backward")[:-1] + [
        (
            f"{PY_SITE}/torch/distributed/fsdp/_runtime_utils.py",
            1093,
            "_reduce_grad",
            "dist.reduce_scatter_tensor(",
        ),
        (
            f"{PY_SITE}/torch/distributed/distributed_c10d.py",
            4102,
            "reduce_scatter_tensor",
            "work = group._reduce_scatter_base(output, input, opts)",
        ),
    ]
    death = py_exception(
        ctx,
        rank,
        t_err,
        frames,
        nccl_cuda_failure(ctx, "'unspecified launch failure'"),
    )
    return kmsgs, death


def _gpu_xid95_drain(
    ctx: Ctx, head: list[str], local: int, pid: int, rank: int, t_err: datetime
) -> tuple[list[str], Death]:
    kmsgs = head + [
        xid_line(ctx, local, 95, "Uncontained: FBHUB. RST: Yes, D-RST: No", pid),
        recovery_action(ctx, local, pid, "0x4 (Drain and Reset)"),
    ]
    death = cuda_error(ctx, rank, t_err, "uncorrectable ECC error encountered")
    return kmsgs, death


def _gpu_xid119_gsp(
    ctx: Ctx, local: int, pid: int, rng: random.Random, node: NodeRT, t_fail: datetime, rank: int
) -> tuple[list[str], Death]:
    banner = "NVRM: _kgspLogXid119: "
    kmsgs = [
        f"{banner}{'*' * 33} GSP Timeout {'*' * 34}",
        f"{banner}Note: Please also check logs above.",
        xid_line(
            ctx,
            local,
            119,
            f"Timeout after 45s of waiting for RPC response from GPU{local} "
            f"GSP! Expected function 76 (GSP_RM_CONTROL) sequence {rng.randint(9000, 40000)} "
            "(0x20801702 0x4).",
            pid,
        ),
        f"{banner}{'*' * 80}",
    ]
    ctx.kern_block(
        node,
        t_fail + timedelta(seconds=45),
        [
            xid_line(
                ctx,
                local,
                119,
                f"Timeout after 45s of waiting for RPC response from GPU{local} GSP! "
                "Expected function 10 (FREE) (0x5c000001 0x0).",
                pid,
            )
        ],
    )
    death = heartbeat_abort(ctx, rank, t_fail + timedelta(seconds=480 + rng.uniform(0.2, 3)))
    return kmsgs, death


def sc_gpu_hardware(ctx: Ctx) -> Outcome:
    spec, rng = ctx.spec, ctx.rng
    ni, node, local, rank = _culprit(ctx)
    pre_decoys(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    pid, bus, v = ctx.pid(rank), ctx.bus[local], spec.variant
    head = [
        f"NVRM: GPU at PCI:{bus}: {node.uuids[local]}",
        f"NVRM: GPU Board Serial Number: 16528{rng.randint(10**7, 10**8 - 1)}",
    ]
    fell = [
        xid_line(ctx, local, 79, "GPU has fallen off the bus.", pid),
        f"NVRM: GPU {bus}.0: GPU has fallen off the bus.",
        "NVRM: A GPU crash dump has been created. If possible, please run",
        "NVRM: nvidia-bug-report.sh as root to collect this data before",
        "NVRM: the NVIDIA kernel module is unloaded.",
    ]
    dbe = xid_line(
        ctx,
        local,
        48,
        "An uncorrectable double bit error (DBE) has been detected on GPU in "
        f"the framebuffer at physAddr 0x{_hex(rng, 9)} partition {rng.randint(0, 11)}, "
        f"subpartition {rng.randint(0, 1)}.",
        pid,
    )
    t_err = t_fail + timedelta(seconds=rng.uniform(0.4, 6.0))
    kill: dict[str, Any] = {}
    if v.startswith("xid79"):
        kmsgs, death = _gpu_xid79(ctx, head, fell, v, local, pid, rank, t_err)
    elif v == "xid48-dbe":
        kmsgs, death = _gpu_xid48_dbe(ctx, head, dbe, local, rng, rank, t_err)
    elif v == "xid64-row-remap":
        kmsgs, death = _gpu_xid64_row_remap(ctx, head, dbe, local, pid, rng, rank, t_err)
    elif v == "xid74-nvlink":
        kmsgs, death = _gpu_xid74_nvlink(ctx, rng, head, local, pid, rank, t_err)
    elif v == "xid95-drain":
        kmsgs, death = _gpu_xid95_drain(ctx, head, local, pid, rank, t_err)
    elif v == "xid119-gsp":
        kmsgs, death = _gpu_xid119_gsp(ctx, local, pid, rng, node, t_fail, rank)
    elif v == "xid94-contained":
        kmsgs = head + [xid_line(ctx, local, 94, "Contained: SM (0x1). RST: No, D-RST: No", pid)]
        death = cuda_error(ctx, rank, t_err, "uncorrectable ECC error encountered", "forward")
    else:
        raise ValueError(v)
    ctx.kern_block(node, t_fail, kmsgs)
    oc = _finish_crash(ctx, run, t_fail, rank, death, **kill)
    if v == "xid79-k8s-nokern":
        oc.k8s_nodes[node.name] = {"alloc_gpu": ctx.gpn - 1}
    return oc


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "gpu_hardware",
        "xid79",
        misleading=True,
        decoys=("xid45", "xid43"),
        layouts=AGENT_LAYOUTS,
        notes="Xid 79 (fell off the bus) on {node} {bus} behind rank {rank}; "
        + _VOLUME
        + "; an Xid 45/43 on another node comes after the kill and is a symptom",
    ),
    Recipe(
        "gpu_hardware",
        "xid48-dbe",
        misleading=True,
        decoys=("old_xid",),
        layouts=AGENT_LAYOUTS,
        notes="Xid 48 (DBE) + 63 on {node} {bus}, rank {rank} raises 'uncorrectable ECC error "
        "encountered'; an Xid 79 on another node is from the previous day (outside the window)",
    ),
    Recipe(
        "gpu_hardware",
        "xid64-row-remap",
        platform="k8s",
        misleading=True,
        decoys=("xid45",),
        notes="Xid 48 + 64 (row remapping exhausted) + 154 'GPU Reset Required' on {node} {bus}; "
        "Xid 45 on another node after the kill is a symptom",
    ),
    Recipe(
        "gpu_hardware",
        "xid74-nvlink",
        kill=True,
        culprit="not_master",
        notes="Xid 74 NVLink fatal error on {node} {bus}; rank {rank} fails with "
        "ncclUnhandledCudaError",
    ),
    Recipe(
        "gpu_hardware",
        "xid95-drain",
        misleading=True,
        tz="local",
        layouts=AGENT_LAYOUTS,
        notes="Xid 95 (uncontained ECC) + 154 'Drain and Reset' on {node} {bus}; times are local",
    ),
    Recipe(
        "gpu_hardware",
        "xid119-gsp",
        misleading=True,
        torch=("2.3", "2.5", "2.6"),
        layouts=AGENT_LAYOUTS,
        notes="Xid 119 GSP RPC timeout on {node} {bus}: rank {rank} hangs silently until the "
        "heartbeat "
        "monitor kills it (looks like a hang)",
    ),
    Recipe(
        "gpu_hardware",
        "xid79-k8s-nokern",
        platform="k8s",
        misleading=True,
        culprit_kernel=None,
        notes="Xid 79 on {node} but its kernel log is missing: only rank {rank}'s CUDA error and "
        "the node's "
        "allocatable nvidia.com/gpu dropping to 7 show it",
    ),
    Recipe(
        "gpu_hardware",
        "xid94-contained",
        kill=True,
        culprit="not_master",
        retry=True,
        culprit_kernel="dmesg-raw",
        notes="Xid 94 (contained ECC) on {node} {bus} in raw dmesg (uptime, anchored by syslog); "
        "NVIDIA's "
        "action is restart the app, so a retry is useful",
    ),
)
