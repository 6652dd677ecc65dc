"""A bug in the training code or its data: Python exceptions, device-side errors."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from goodput_agent.evals.cluster.collateral import collateral
from goodput_agent.evals.cluster.context import Ctx, NodeRT, Outcome
from goodput_agent.evals.cluster.deaths import _t_fail, py_exception, xid_line
from goodput_agent.evals.cluster.endings import (
    _culprit,
    _finish_crash,
    outcome_failed,
    post_decoys,
    pre_decoys,
)
from goodput_agent.evals.cluster.formats import _hex
from goodput_agent.evals.cluster.spec import CUDA_ASYNC_NOTE, PY_SITE
from goodput_agent.evals.cluster.torchelastic import srun_cancel_lines
from goodput_agent.evals.cluster.training import (
    Death,
    progress,
    prologue,
    traceback_lines,
    train_frames,
)
from goodput_agent.evals.failure_cases.recipe import AGENT_LAYOUTS, Recipe


def _app_dataset_keyerror(ctx: Ctx, rng: random.Random, rank: int, t_fail: datetime) -> Death:
    key = f"shard-{rng.randint(0, 2047):05d}/seq-{rng.randint(0, 99999):06d}"
    frames = train_frames(ctx, "none") + [
        ("/workspace/llm/trainer.py", 229, "fit", "batch = next(self.train_iter)"),
        (
            f"{PY_SITE}/torch/utils/data/dataloader.py",
            701,
            "__next__",
            "data = self._next_data()",
        ),
        (
            f"{PY_SITE}/torch/utils/data/dataloader.py",
            1465,
            "_next_data",
            "return self._process_data(data)",
        ),
        (f"{PY_SITE}/torch/utils/data/dataloader.py", 1491, "_process_data", "data.reraise()"),
        (f"{PY_SITE}/torch/_utils.py", 715, "reraise", "raise exception"),
    ]
    worker = rng.randint(0, 7)
    exc = [
        f"KeyError: Caught KeyError in DataLoader worker process {worker}.",
        "Original Traceback (most recent call last):",
        f'  File "{PY_SITE}/torch/utils/data/_utils/worker.py", line 351, in _worker_loop',
        "    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
        f'  File "{PY_SITE}/torch/utils/data/_utils/fetch.py", line 52, in fetch',
        "    data = [self.dataset[idx] for idx in possibly_batched_index]",
        '  File "/workspace/llm/data/packed_dataset.py", line 187, in __getitem__',
        "    meta = self.index[key]",
        f"KeyError: '{key}'",
        "",
    ]
    death = py_exception(ctx, rank, t_fail, frames, exc)
    return death


def _app_missing_shard(ctx: Ctx, rng: random.Random, rank: int, t_fail: datetime) -> Death:
    path = f"/lustre/datasets/fineweb-edu/tokenized/shard-{rng.randint(0, 4095):05d}.bin"
    frames = train_frames(ctx, "none") + [
        ("/workspace/llm/trainer.py", 229, "fit", "batch = next(self.train_iter)"),
        (
            "/workspace/llm/data/packed_dataset.py",
            141,
            "__iter__",
            "yield from self._read_shard(shard)",
        ),
        (
            "/workspace/llm/data/packed_dataset.py",
            96,
            "_read_shard",
            'tokens = np.memmap(path, dtype=np.uint16, mode="r")',
        ),
        (
            "/usr/local/lib/python3.10/dist-packages/numpy/core/memmap.py",
            229,
            "__new__",
            "f_ctx = open(os_fspath(filename), ('r' if mode == 'c' else mode)+'b')",
        ),
    ]
    death = py_exception(
        ctx,
        rank,
        t_fail,
        frames,
        [f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'"],
    )
    return death


def _app_assertion_rank0(ctx: Ctx, rng: random.Random, rank: int, t_fail: datetime) -> Death:
    frames = train_frames(ctx, "forward") + [
        (
            "/workspace/llm/model/transformer.py",
            388,
            "forward",
            "h = layer(h, freqs_cis, mask)",
        ),
        (
            f"{PY_SITE}/torch/nn/modules/module.py",
            1747,
            "_call_impl",
            "return forward_call(*args, **kwargs)",
        ),
        (
            "/workspace/llm/model/attention.py",
            142,
            "forward",
            'assert q.shape[-2] == k.shape[-2], f"seq mismatch {q.shape} vs {k.shape}"',
        ),
    ]
    seq_len = rng.choice((4096, 8192))
    death = py_exception(
        ctx,
        rank,
        t_fail,
        frames,
        [
            f"AssertionError: seq mismatch torch.Size([2, 32, {seq_len}, 128]) vs "
            "torch.Size([2, 32, "
            f"{seq_len - 2}, 128])"
        ],
    )
    return death


def _xid13_culprit(
    ctx: Ctx, v: str, local: int, pid: int, rng: random.Random
) -> tuple[list[str], tuple[str, int, str, str]]:
    """The culprit's error: an Xid 13 and the illegal memory access it raises."""
    if v == "xid13-illegal-address":
        gpc, tpc = rng.randint(0, 7), rng.randint(0, 8)
        kmsgs = [
            xid_line(
                ctx,
                local,
                13,
                f"Graphics SM Warp Exception on (GPC {gpc}, TPC {tpc}, SM 0): Out Of Range Address",
            ),
            xid_line(
                ctx,
                local,
                13,
                f"Graphics SM Global Exception on (GPC {gpc}, TPC {tpc}, SM 0): "
                "Multiple Warp Errors",
            ),
            xid_line(
                ctx,
                local,
                13,
                "Graphics Exception: ESR 0x524648=0x101000e 0x52464c=0x24 "
                "0x524650=0x0 0x524644=0x1174",
            ),
            xid_line(ctx, local, 43, "Ch 00000008", pid),
        ]
        kernel_frame = (
            "/workspace/llm/kernels/fused_rope.py",
            88,
            "forward",
            "_fused_rope_fwd[grid](q, k, cos, sin, q.stride(0), BLOCK=block)",
        )
    else:
        kmsgs = [
            xid_line(
                ctx,
                local,
                31,
                f"Ch 0000003b, intr 00000000. MMU Fault: ENGINE GRAPHICS "
                f"GPCCLIENT_T1_{rng.randint(0, 15)} faulted @ "
                f"0x7f{_hex(rng, 2)}_{_hex(rng, 8)}. "
                "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
                pid,
            )
        ]
        kernel_frame = (
            "/workspace/llm/kernels/moe_dispatch.py",
            133,
            "dispatch",
            "_scatter_tokens_kernel[grid](x, idx, out, n_tokens, BLOCK_M=64)",
        )
    return kmsgs, kernel_frame


def _app_xid13_illegal_address(
    ctx: Ctx,
    v: str,
    local: int,
    pid: int,
    rng: random.Random,
    node: NodeRT,
    t_fail: datetime,
    rank: int,
) -> Death:
    kmsgs, kernel_frame = _xid13_culprit(ctx, v, local, pid, rng)
    ctx.kern_block(node, t_fail, kmsgs)
    frames = train_frames(ctx, "forward") + [
        kernel_frame,
        (
            f"{PY_SITE}/triton/runtime/jit.py",
            345,
            "<lambda>",
            "return lambda *args, **kwargs: self.run(grid=grid, warmup=False, *args, **kwargs)",
        ),
    ]
    death = py_exception(
        ctx,
        rank,
        t_fail + timedelta(seconds=rng.uniform(0.2, 2)),
        frames,
        [
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            *CUDA_ASYNC_NOTE,
        ],
    )
    return death


def sc_application_error(ctx: Ctx) -> Outcome:
    rng, v = ctx.rng, ctx.spec.variant
    ni, node, local, rank = _culprit(ctx)
    pre_decoys(ctx)
    if v == "import-error-node":
        return _import_error(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    pid = ctx.pid(rank)
    if v == "dataset-keyerror":
        death = _app_dataset_keyerror(ctx, rng, rank, t_fail)
    elif v == "missing-shard":
        death = _app_missing_shard(ctx, rng, rank, t_fail)
    elif v == "assertion-rank0":
        death = _app_assertion_rank0(ctx, rng, rank, t_fail)
    elif v in ("xid13-illegal-address", "xid31-triton-mmu"):
        death = _app_xid13_illegal_address(ctx, v, local, pid, rng, node, t_fail, rank)
    else:
        raise ValueError(v)
    return _finish_crash(ctx, run, t_fail, rank, death)


def _import_error(ctx: Ctx) -> Outcome:
    """A node with a stale image: all its ranks die at import, before NCCL is ever up."""
    spec, rng = ctx.spec, ctx.rng
    ni = spec.culprit_node
    assert ni is not None
    run = prologue(ctx, init=False)
    t_fail = spec.start + timedelta(seconds=rng.uniform(9, 16))
    frames = [
        ("/workspace/train.py", 9, "<module>", "from llm.model import build_model"),
        (
            "/workspace/llm/model/__init__.py",
            3,
            "<module>",
            "from .attention import FlashSelfAttention",
        ),
        (
            "/workspace/llm/model/attention.py",
            12,
            "<module>",
            "from flash_attn import flash_attn_func",
        ),
        (
            f"{PY_SITE}/flash_attn/__init__.py",
            3,
            "<module>",
            "from flash_attn.flash_attn_interface import (",
        ),
        (
            f"{PY_SITE}/flash_attn/flash_attn_interface.py",
            10,
            "<module>",
            "import flash_attn_2_cuda as flash_attn_cuda",
        ),
    ]
    exc = [
        f"ImportError: {PY_SITE}/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined "
        "symbol: "
        "_ZN3c104cuda9SetDeviceEi"
    ]
    dead = {}
    for r in ctx.ranks_on(ni):
        t = t_fail + timedelta(milliseconds=rng.randint(0, 900))
        ctx.out(r, t, traceback_lines(frames, exc))
        dead[r] = Death(t + timedelta(milliseconds=200), 1)
    for r in range(ctx.world):
        if ctx.node_idx(r) != ni:
            t = t_fail - timedelta(seconds=rng.uniform(1, 4))
            ctx.out(
                r,
                t,
                ctx.pylog(
                    r,
                    t,
                    "INFO",
                    "trainer",
                    f"initializing process group (rank={r}, world_size={ctx.world}, backend=nccl)",
                ),
            )
    kill_at = max(d.t for d in dead.values()) + timedelta(seconds=1.5)
    ctx.jobout(kill_at - timedelta(milliseconds=50), srun_cancel_lines(ctx, kill_at))
    t_end = collateral(
        ctx, run, t_fail=t_fail, dead=dead, mode="kill", kill_at=kill_at, peermem=False
    )
    post_decoys(ctx, t_fail)
    oc = outcome_failed(ctx, t_end)
    oc.exp_rank = None
    return oc


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "application_error",
        "dataset-keyerror",
        kill=True,
        culprit="not_master",
        layouts=AGENT_LAYOUTS,
        extras=("error_files",),
        notes="KeyError raised in a DataLoader worker of rank {rank} (innermost frame "
        "packed_dataset.py "
        "__getitem__); torchelastic error file names it",
    ),
    Recipe(
        "application_error",
        "missing-shard",
        misleading=True,
        decoys=("edac",),
        layouts=AGENT_LAYOUTS,
        notes="FileNotFoundError for a missing data shard on rank {rank}; a corrected EDAC error "
        "on another "
        "node is harmless; victims are louder",
    ),
    Recipe(
        "application_error",
        "assertion-rank0",
        platform="k8s",
        kill=True,
        culprit="master",
        notes="AssertionError (seq length mismatch) in attention.py on rank 0; the job controller "
        "stops "
        "the other pods right away",
    ),
    Recipe(
        "application_error",
        "xid13-illegal-address",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="Xid 13 (Out Of Range Address) + 43 on {node} {bus} are caused by a custom kernel's "
        "illegal "
        "memory access on rank {rank}: an application bug, not hardware",
    ),
    Recipe(
        "application_error",
        "xid31-triton-mmu",
        platform="k8s",
        misleading=True,
        notes="Xid 31 MMU fault on {node} {bus} from an out-of-bounds Triton kernel on rank "
        "{rank}: an "
        "application bug",
    ),
    Recipe(
        "application_error",
        "import-error-node",
        culprit="not_master",
        layouts=("torchrun_node",),
        notes="stale image on {node}: all its ranks fail at import (undefined symbol) before NCCL "
        "init; "
        "a node-level environment error",
    ),
)
