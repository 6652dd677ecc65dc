"""CUDA out of memory on one rank."""

from __future__ import annotations

from datetime import datetime, timedelta

from goodput_agent.evals.cluster.context import Ctx, Outcome
from goodput_agent.evals.cluster.deaths import _t_fail, nccl_cuda_failure, py_exception
from goodput_agent.evals.cluster.endings import _culprit, _finish_crash, pre_decoys
from goodput_agent.evals.cluster.spec import PY_SITE
from goodput_agent.evals.cluster.training import Death, progress, prologue, train_frames
from goodput_agent.evals.failure_cases.recipe import AGENT_LAYOUTS, Recipe


def oom_text(ctx: Ctx, local: int, legacy: bool = False) -> str:
    rng = ctx.rng
    cap = 79.11 if ctx.gpn == 8 else 39.39
    tried = rng.choice((1.25, 2.5, 3.91, 7.82, 12.0))
    free = rng.uniform(0.08, min(tried * 0.9, 3.0))
    in_use = cap - free - 0.41
    alloc = in_use - rng.uniform(1.2, 4.0)
    unalloc = rng.uniform(0.05, 1.4)
    idx = 0 if ctx.one_gpu_per_task else local

    def size(gib: float) -> str:
        return f"{gib * 1024:.2f} MiB" if gib < 1 else f"{gib:.2f} GiB"

    if legacy:
        return (
            f"RuntimeError: CUDA out of memory. Tried to allocate {size(tried)} (GPU {idx}; "
            f"{cap + 0.04:.2f} GiB total capacity; {alloc:.2f} GiB already allocated; {size(free)} "
            f"free; {alloc + unalloc:.2f} GiB reserved in total by PyTorch) If reserved memory is "
            ">> "
            "allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
            "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
        )
    cls = (
        "torch.cuda.OutOfMemoryError"
        if ctx.spec.torch in ("2.1", "2.3")
        else "torch.OutOfMemoryError"
    )
    return (
        f"{cls}: CUDA out of memory. Tried to allocate {size(tried)}. GPU {idx} has a total "
        "capacity "
        f"of {cap:.2f} GiB of which {size(free)} is free. Including non-PyTorch memory, this "
        "process "
        f"has {in_use:.2f} GiB memory in use. Of the allocated memory {alloc:.2f} GiB is "
        "allocated by "
        f"PyTorch, and {size(unalloc)} is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
        "to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def _oom_forward_long_seq(ctx: Ctx, rank: int, t_fail: datetime, local: int) -> Death:
    frames = train_frames(ctx, "forward") + [
        (
            "/workspace/llm/model/attention.py",
            214,
            "forward",
            "attn = torch.softmax(scores.float(), dim=-1).to(q.dtype)",
        )
    ]
    death = py_exception(ctx, rank, t_fail, frames, [oom_text(ctx, local)])
    return death


def _oom_rank0_checkpoint_gather(ctx: Ctx, rank: int, t_fail: datetime, local: int) -> Death:
    frames = train_frames(ctx, "none") + [
        (
            "/workspace/llm/trainer.py",
            241,
            "fit",
            "self.checkpointer.save(step, self.model, self.optim)",
        ),
        (
            "/workspace/llm/checkpoint.py",
            77,
            "save",
            "state = get_model_state_dict(self.model, "
            "options=StateDictOptions(full_state_dict=True, cpu_offload=False))",
        ),
        (
            f"{PY_SITE}/torch/distributed/checkpoint/state_dict.py",
            1051,
            "get_model_state_dict",
            "model_state_dict = _get_model_state_dict(model, info)",
        ),
        (
            f"{PY_SITE}/torch/distributed/fsdp/_state_dict_utils.py",
            333,
            "_full_post_state_dict_hook",
            "return _common_unshard_post_state_dict_hook(",
        ),
        (
            f"{PY_SITE}/torch/distributed/fsdp/_unshard_param_utils.py",
            236,
            "_unshard_fsdp_state_params",
            "_unshard(state, handles, computation_stream, pre_unshard_stream)",
        ),
        (
            f"{PY_SITE}/torch/distributed/fsdp/_flat_param.py",
            1338,
            "alloc_padded_unsharded_flat_param",
            "_alloc_storage(unsharded_flat_param, flat_param._padded_unsharded_size)",
        ),
        (
            f"{PY_SITE}/torch/distributed/utils.py",
            186,
            "_alloc_storage",
            "tensor._typed_storage()._resize_(size.numel())",
        ),
    ]
    ctx.out(
        rank,
        t_fail - timedelta(seconds=2),
        ctx.pylog(
            rank,
            t_fail - timedelta(seconds=2),
            "INFO",
            "checkpoint",
            "gathering full state dict on rank 0",
        ),
    )
    death = py_exception(ctx, rank, t_fail, frames, [oom_text(ctx, local)])
    return death


def _oom_nccl_cuda_oom(ctx: Ctx, rank: int, t_fail: datetime) -> Death:
    pre = ctx.nccl_prefix(rank)
    ctx.out(
        rank,
        t_fail - timedelta(milliseconds=4),
        [
            f"{pre} include/alloc.h:124 NCCL WARN Cuda failure 2 'out of memory'",
            f"{pre} NCCL INFO include/alloc.h:132 -> 1",
            f"{pre} NCCL INFO transport/p2p.cc:216 -> 1",
        ],
    )
    frames = train_frames(ctx, "forward") + [
        (
            f"{PY_SITE}/torch/distributed/fsdp/_flat_param.py",
            1464,
            "_all_gather_flat_param",
            "dist.all_gather_into_tensor(",
        ),
        (
            f"{PY_SITE}/torch/distributed/c10d_logger.py",
            83,
            "wrapper",
            "return func(*args, **kwargs)",
        ),
        (
            f"{PY_SITE}/torch/distributed/distributed_c10d.py",
            3713,
            "all_gather_into_tensor",
            "work = group._allgather_base(output_tensor, input_tensor, opts)",
        ),
    ]
    death = py_exception(
        ctx,
        rank,
        t_fail,
        frames,
        nccl_cuda_failure(ctx, "2 'out of memory'"),
    )
    return death


def sc_gpu_oom(ctx: Ctx) -> Outcome:
    v = ctx.spec.variant
    ni, node, local, rank = _culprit(ctx)
    pre_decoys(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail, checkpoint_every=1000 if v == "rank0-checkpoint-gather" else 0)
    if v == "forward-long-seq":
        death = _oom_forward_long_seq(ctx, rank, t_fail, local)
    elif v == "rank0-checkpoint-gather":
        death = _oom_rank0_checkpoint_gather(ctx, rank, t_fail, local)
    elif v == "k8s-worker-oom":
        death = py_exception(
            ctx, rank, t_fail, train_frames(ctx, "backward"), [oom_text(ctx, local)]
        )
    elif v == "nccl-cuda-oom":
        death = _oom_nccl_cuda_oom(ctx, rank, t_fail)
    elif v == "legacy-srun-l":
        death = py_exception(
            ctx, rank, t_fail, train_frames(ctx, "forward"), [oom_text(ctx, local, True)]
        )
    else:
        raise ValueError(v)
    return _finish_crash(ctx, run, t_fail, rank, death)


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "gpu_oom",
        "forward-long-seq",
        kill=True,
        culprit="not_master",
        notes="CUDA OOM on rank {rank} in attention; srun --kill-on-bad-exit stops the others "
        "quietly",
    ),
    Recipe(
        "gpu_oom",
        "rank0-checkpoint-gather",
        misleading=True,
        culprit="master",
        layouts=AGENT_LAYOUTS,
        torch=("2.5", "2.6"),
        notes="rank 0 OOMs gathering a full state dict for a checkpoint; the others wait in the "
        "next "
        "collective and time out loudly; the early 'barrier ... potentially cause a hang' warning "
        "is benign",
    ),
    Recipe(
        "gpu_oom",
        "k8s-worker-oom",
        platform="k8s",
        misleading=True,
        notes="CUDA OOM in backward on rank {rank} ({node}); the other pods' ranks time out loudly",
    ),
    Recipe(
        "gpu_oom",
        "nccl-cuda-oom",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="NCCL 'Cuda failure 2 out of memory' surfaces as a DistBackendError (looks like a "
        "comm "
        "error) on rank {rank}; memory was exhausted",
    ),
    Recipe(
        "gpu_oom",
        "legacy-srun-l",
        kill=True,
        culprit="not_master",
        layouts=("srun_l",),
        torch=("2.1",),
        notes="legacy 'RuntimeError: CUDA out of memory' wording in a combined srun -l log, rank "
        "{rank}",
    ),
)
