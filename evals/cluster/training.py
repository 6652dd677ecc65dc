"""A healthy training run: NCCL init on every rank, benign warnings, rank 0's progress log."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from goodput_agent.evals.cluster.context import Ctx
from goodput_agent.evals.cluster.formats import _hex, _hms_frac
from goodput_agent.evals.cluster.kernel_noise import kernel_noise
from goodput_agent.evals.cluster.spec import PY_SITE


@dataclass
class Run:
    t_init: datetime
    step_s: float
    coll_per_step: int
    seq0: int
    step0: int
    op: str
    numel_in: int
    numel_out: int
    frames: bool

    def step_at(self, t: datetime) -> int:
        return self.step0 + int(max(0.0, (t - self.t_init).total_seconds()) / self.step_s)

    def seq_at(self, t: datetime) -> int:
        return self.seq0 + (self.step_at(t) - self.step0) * self.coll_per_step


@dataclass
class Death:
    t: datetime
    exitcode: int
    error_file: bool = False
    tb: list[str] | None = None  # traceback text for the torchelastic summary


SIGNALS = {-6: "SIGABRT", -9: "SIGKILL", -11: "SIGSEGV", -15: "SIGTERM"}


CPP_FRAMES_TIMEOUT = (
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x{a}f86 in "
    "{site}/torch/lib/libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration"
    "<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x{b}a8d2 in {site}/torch/lib/libtorch_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x{b}21333 in "
    "{site}/torch/lib/libtorch_cuda.so)",
    "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c (0x{b}236fc in "
    "{site}/torch/lib/libtorch_cuda.so)",
    "frame #4: <unknown function> + 0xdc253 (0x{c}dc253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    "frame #5: <unknown function> + 0x94ac3 (0x{d}94ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
    "frame #6: <unknown function> + 0x126850 (0x{d}126850 in /lib/x86_64-linux-gnu/libc.so.6)",
)


OPS = (
    ("ALLREDUCE", 1, 1),
    ("_ALLGATHER_BASE", 1, 0),
    ("_REDUCE_SCATTER_BASE", 0, 1),
    ("BROADCAST", 1, 1),
)


def _frames(ctx: Ctx, rank: int) -> list[str]:
    r = random.Random(f"frames:{ctx.spec.case_id}:{ctx.node_idx(rank)}")
    a, b, c, d = (f"7f{_hex(r, 6)}" for _ in range(4))
    return [f.format(a=a[:9], b=b[:7], c=c[:7], d=d[:7], site=PY_SITE) for f in CPP_FRAMES_TIMEOUT]


def traceback_lines(frames: Iterable[tuple[str, int, str, str]], exc: Iterable[str]) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out.append(f'  File "{path}", line {line}, in {func}')
        if code:
            out.append(f"    {code}")
    out.extend(exc)
    return out


def train_frames(ctx: Ctx, tail: str = "forward") -> list[tuple[str, int, str, str]]:
    """The outer frames of a training step for the case's code base."""
    if ctx.spec.seed % 2 == 0 or "megatron" in ctx.spec.job_name:
        base = [
            ("/opt/megatron-lm/pretrain_gpt.py", 246, "<module>", "pretrain("),
            (
                "/opt/megatron-lm/megatron/training/training.py",
                358,
                "pretrain",
                "iteration, num_floating_point_operations_so_far = train(",
            ),
            (
                "/opt/megatron-lm/megatron/training/training.py",
                1287,
                "train",
                "train_step(forward_step_func,",
            ),
            (
                "/opt/megatron-lm/megatron/training/training.py",
                742,
                "train_step",
                "losses_reduced = forward_backward_func(",
            ),
        ]
    else:
        base = [
            ("/workspace/train.py", 412, "<module>", "main()"),
            ("/workspace/train.py", 398, "main", "trainer.fit(model, datamodule)"),
            ("/workspace/llm/trainer.py", 233, "fit", "metrics = self.train_step(batch)"),
        ]
    if tail == "backward":
        base += [
            ("/workspace/llm/trainer.py", 176, "train_step", "self.scaler.scale(loss).backward()"),
            (f"{PY_SITE}/torch/_tensor.py", 581, "backward", "torch.autograd.backward("),
            (f"{PY_SITE}/torch/autograd/__init__.py", 347, "backward", "_engine_run_backward("),
            (
                f"{PY_SITE}/torch/autograd/graph.py",
                825,
                "_engine_run_backward",
                "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to "
                "run the backward pass",
            ),
        ]
    elif tail == "forward":
        base += [
            ("/workspace/llm/trainer.py", 171, "train_step", "loss = self.model(**batch).loss"),
            (
                f"{PY_SITE}/torch/nn/modules/module.py",
                1736,
                "_wrapped_call_impl",
                "return self._call_impl(*args, **kwargs)",
            ),
            (
                f"{PY_SITE}/torch/nn/modules/module.py",
                1747,
                "_call_impl",
                "return forward_call(*args, **kwargs)",
            ),
        ]
    return base


def prologue(ctx: Ctx, *, benign: bool = True, init: bool = True) -> Run:
    """Start of the job: kernel noise, NCCL init on every rank, early benign warnings."""
    rng, spec = ctx.rng, ctx.spec
    t_init = spec.start + timedelta(
        seconds=rng.randint(25, 80), microseconds=rng.randint(0, 999999)
    )
    op, fin, fout = OPS[rng.randrange(3)]
    base = rng.choice((262144, 1048576, 4194304, 16777216, 25165824))
    numel_in = base * (ctx.world if fin == 0 else 1)
    numel_out = base * (ctx.world if fout == 0 else 1)
    run = Run(
        t_init=t_init,
        step_s=round(rng.uniform(0.7, 4.5), 3),
        coll_per_step=rng.choice((2, 4, 6)),
        seq0=rng.randint(3, 40),
        step0=rng.choice((0, 0, 1000, 12000, 48000)),
        op=op,
        numel_in=numel_in,
        numel_out=numel_out,
        frames=ctx.world <= 48 and rng.random() < 0.5,
    )
    if "frames" in spec.extras or "no_frames" in spec.extras:
        run.frames = "frames" in spec.extras
    t_end_hint = spec.start + timedelta(seconds=spec.fail_after_s + spec.timeout_ms / 1000 + 300)
    for node in ctx.nodes:
        kernel_noise(
            ctx,
            node,
            spec.start - timedelta(minutes=rng.randint(20, 90)),
            t_end_hint,
            rng.randint(4, 9),
        )
    if init:
        nccl_init(ctx, t_init)
    if benign:
        benign_warnings(ctx, t_init)
    ctx.out(
        0,
        t_init - timedelta(seconds=6),
        ctx.pylog(
            0,
            t_init - timedelta(seconds=6),
            "INFO",
            "trainer",
            f"world_size={ctx.world} nodes={len(ctx.order)} model={spec.job_name} "
            f"global_batch={ctx.world * rng.choice((4, 8, 16))} "
            f"seq_len={rng.choice((2048, 4096, 8192))}",
        ),
    )
    return run


def nccl_init(ctx: Ctx, t: datetime) -> None:
    rng = ctx.rng
    comm = f"0x{_hex(rng, 16)}"
    cuda = {"2.18.6": "12.2", "2.20.5": "12.4", "2.21.5": "12.4", "2.23.4": "12.6"}[ctx.nccl]
    new = ctx.nccl >= "2.20"
    transport = "RoCE" if ctx.spec.platform == "k8s" else "IB"
    for rank in range(ctx.world):
        node, local = ctx.node_of(rank), ctx.local(rank)
        tt = t + timedelta(milliseconds=rng.randint(0, 1800))
        pre, pre_t = ctx.nccl_prefix(rank), ctx.nccl_prefix(rank, 64 + local)
        nics = " ".join(f"[{k}]{h}:1/{transport}" for k, h in enumerate(node.hcas))
        lines = []
        if rank == 0:
            lines.append(f"{pre} NCCL INFO NCCL version {ctx.nccl}+cuda{cuda}")
        lines.append(f"{pre} NCCL INFO Bootstrap : Using {ctx.netif()}:{node.ip}<0>")
        if ctx.socket_net:
            lines.append(f"{pre_t} NCCL INFO NET/Socket : Using [0]bond0:{node.ip}<0>")
            lines.append(f"{pre_t} NCCL INFO Using network Socket")
        else:
            lines.append(
                f"{pre_t} NCCL INFO NET/IB : Using {nics} [RO]; OOB {ctx.netif()}:{node.ip}<0>"
            )
        cdev = 0 if ctx.one_gpu_per_task else local
        dev = (
            f"cudaDev {cdev} nvmlDev {local} busId {ctx.bus_id(local)}"
            if new
            else f"cudaDev {cdev} busId {ctx.bus_id(local)}"
        )
        tail = f" commId {comm} - Init COMPLETE" if new else " - Init COMPLETE"
        lines.append(
            f"{pre_t} NCCL INFO comm 0x{_hex(rng, 12)} rank {rank} nranks {ctx.world} {dev}{tail}"
        )
        ctx.out(rank, tt, lines, step_us=900)


def benign_warnings(ctx: Ctx, t_init: datetime) -> None:
    rng = ctx.rng
    kinds = rng.sample(("socket", "dataloader", "barrier", "gradscaler"), k=2)
    if "socket" in kinds and ctx.spec.torch != "2.1":
        # early rendezvous retries: one per node, before the master's store is up
        for node in ctx.nodes:
            if node is ctx.master:
                continue
            rank = ctx.rank_at(ctx.nodes.index(node), 0)
            tt = ctx.spec.start + timedelta(seconds=rng.uniform(3, 12))
            lt = ctx.lt(node, tt)
            ctx.out(
                rank,
                tt,
                f"[W{lt:%m%d} {_hms_frac(lt, 9)} socket.cpp:697] [c10d] The client socket "
                f"has failed to connect to [{ctx.master.host}]:29500 (errno: 111 - "
                "Connection refused).",
            )
    if "dataloader" in kinds:
        for node_idx in range(len(ctx.nodes)):
            rank = ctx.rank_at(node_idx, 0)
            ctx.out(
                rank,
                t_init + timedelta(seconds=rng.uniform(2, 5)),
                [
                    f"{PY_SITE}/torch/utils/data/dataloader.py:617: UserWarning: This DataLoader "
                    "will "
                    "create 12 worker processes in total. Our suggested max number of worker in "
                    "current "
                    "system is 10, which is smaller than what this DataLoader is going to create. "
                    "Please "
                    "be aware that excessive worker creation might get DataLoader running slow or "
                    "even "
                    "freeze, lower the worker number to avoid potential slowness/freeze if "
                    "necessary.",
                    "  warnings.warn(_create_warning_msg(",
                ],
            )
    if "barrier" in kinds and ctx.spec.torch in ("2.5", "2.6"):
        tt = t_init - timedelta(seconds=2)
        ctx.out(
            0,
            tt,
            ctx.c10(
                0,
                tt,
                "W",
                "ProcessGroupNCCL.cpp:4561",
                f"{ctx.pg(0)} using GPU 0 "
                "to perform barrier as devices used by this process are currently unknown. This "
                "can "
                "potentially cause a hang if this rank to GPU mapping is incorrect. Specify "
                "device_ids "
                "in barrier() to force use of a particular device, or call init_process_group() "
                "with "
                "a device_id.",
            ),
        )
    if "gradscaler" in kinds:
        ctx.out(
            0,
            t_init + timedelta(seconds=3),
            [
                "/workspace/llm/trainer.py:88: FutureWarning: "
                "`torch.cuda.amp.GradScaler(args...)` is "
                "deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.",
                "  self.scaler = torch.cuda.amp.GradScaler(enabled=cfg.fp16)",
            ],
        )


def progress(ctx: Ctx, run: Run, t_until: datetime, *, checkpoint_every: int = 0) -> int:
    """Rank 0's training log from init until `t_until`; returns the last step printed."""
    rng = random.Random(f"progress:{ctx.spec.case_id}")
    dur = (t_until - run.t_init).total_seconds()
    every = max(10, int(dur / run.step_s / 36) // 10 * 10 or 10)
    total = run.step0 + int(dur / run.step_s) + rng.randint(2000, 90000)
    step, last = run.step0 + every, run.step0
    loss = rng.uniform(2.2, 3.4) if run.step0 else rng.uniform(6.0, 9.0)
    lr = rng.choice((1.5e-4, 3.0e-4, 6.0e-4))
    while True:
        t = run.t_init + timedelta(seconds=(step - run.step0) * run.step_s + rng.uniform(0, 0.3))
        if t >= t_until:
            break
        loss = max(1.2, loss * rng.uniform(0.985, 1.002))
        tflops = rng.uniform(380, 460) if ctx.gpn == 8 else rng.uniform(160, 210)
        msg = (
            f"step {step}/{total} | loss {loss:.4f} | lr {lr:.3e} | grad_norm "
            f"{rng.uniform(0.3, 1.4):.3f} | {run.step_s * rng.uniform(0.97, 1.04):.3f} s/it | "
            f"{tflops:.1f} TFLOP/s/GPU"
        )
        ctx.out(0, t, ctx.pylog(0, t, "INFO", "trainer", msg))
        if checkpoint_every and step % checkpoint_every == 0:
            ctx.out(
                0,
                t + timedelta(seconds=1),
                ctx.pylog(
                    0,
                    t + timedelta(seconds=1),
                    "INFO",
                    "checkpoint",
                    f"saved checkpoint to /checkpoints/{ctx.spec.job_name}/step_{step:08d}",
                ),
            )
        last = step
        step += every
    return last
