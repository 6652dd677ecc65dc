"""A collective never completes: stalled data loaders, a rank-0-only barrier, a stuck filesystem."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from goodput_agent.evals.cluster.collateral import collateral
from goodput_agent.evals.cluster.context import Ctx, NodeRT, Outcome
from goodput_agent.evals.cluster.deaths import _t_fail
from goodput_agent.evals.cluster.endings import (
    _culprit,
    k8s_failed,
    outcome_failed,
    post_decoys,
    pre_decoys,
)
from goodput_agent.evals.cluster.nccl import flight_recorder, watchdog_lines
from goodput_agent.evals.cluster.spec import CaseSpec
from goodput_agent.evals.cluster.torchelastic import (
    ELASTIC_TB,
    _failure_entry,
    srun_exit_line,
)
from goodput_agent.evals.cluster.training import Death, Run, progress, prologue, traceback_lines
from goodput_agent.evals.failure_cases.recipe import AGENT_LAYOUTS, Recipe


def _hang_dataloader_stall(ctx: Ctx, rng: random.Random, stuck: int, t_stuck: datetime) -> None:
    shard = rng.randint(0, 4095)
    ctx.out(
        stuck,
        t_stuck - timedelta(seconds=0.4),
        ctx.pylog(
            stuck,
            t_stuck - timedelta(seconds=0.4),
            "INFO",
            "data",
            f"rank {stuck}: opening shard {shard:05d} (/lustre/datasets/fineweb-edu/tokenized/"
            f"shard-{shard:05d}.bin)",
        ),
    )


def _hang_nfs_checkpoint_stall(
    ctx: Ctx,
    run: Run,
    stuck: int,
    t_stuck: datetime,
    spec: CaseSpec,
    node: NodeRT,
    rng: random.Random,
) -> None:
    ctx.out(
        stuck,
        t_stuck - timedelta(seconds=0.2),
        ctx.pylog(
            stuck,
            t_stuck - timedelta(seconds=0.2),
            "INFO",
            "checkpoint",
            f"rank {stuck}: writing shard to "
            f"/nfs/checkpoints/{spec.job_name}/step_{run.step_at(t_stuck):08d}/"
            f"__{stuck}_0.distcp",
        ),
    )
    pid = ctx.pid(stuck)
    ctx.kern(
        node,
        t_stuck + timedelta(seconds=rng.uniform(4, 9)),
        "nfs: server nfs01 not responding, still trying",
    )
    t_hung = t_stuck + timedelta(seconds=123 + rng.uniform(0, 2))
    ctx.kern_block(
        node,
        t_hung,
        [
            f"INFO: task python:{pid} blocked for more than 120 seconds.",
            "      Tainted: P           OE     5.15.0-105-generic #115-Ubuntu",
            '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
            f"task:python          state:D stack:    0 pid:{pid} ppid:{node.agent_pid} "
            "flags:0x00004002",
            "Call Trace:",
            " <TASK>",
            " __schedule+0x2cd/0x890",
            " schedule+0x69/0x110",
            " rpc_wait_bit_killable+0x11/0x70 [sunrpc]",
            " __wait_on_bit+0x36/0xa0",
            " nfs_wait_on_request+0x39/0x50 [nfs]",
            " </TASK>",
        ],
        step_us=30,
    )


def sc_hang(ctx: Ctx) -> Outcome:
    spec, rng, v = ctx.spec, ctx.rng, ctx.spec.variant
    ni, node, local, stuck = _culprit(ctx)
    pre_decoys(ctx)
    run = prologue(ctx)
    t_stuck = _t_fail(ctx)
    if v == "rank0-only-barrier":
        return _rank0_barrier(ctx, run, t_stuck)
    progress(ctx, run, t_stuck)
    seq = run.seq_at(t_stuck)
    if v in ("dataloader-stall", "k8s-stuck-worker"):
        _hang_dataloader_stall(ctx, rng, stuck, t_stuck)
    elif v == "nfs-checkpoint-stall":
        _hang_nfs_checkpoint_stall(ctx, run, stuck, t_stuck, spec, node, rng)
    enq_for = (lambda r: seq + 2) if v == "seqnum-behind" else None  # noqa: E731
    t_end = collateral(ctx, run, t_fail=t_stuck, dead={}, skip_watchdog=[stuck], enq_for=enq_for)
    post_decoys(ctx, t_stuck)
    if "flight_recorder" in spec.extras:
        dump_ranks = sorted(
            {
                stuck,
                0,
                *ctx.ranks_on(ni)[:3],
                *(ctx.rank_at(i, local) for i in range(len(ctx.nodes))),
            }
        )
        t0 = run.t_init

        def t_of(s: int) -> datetime:
            return t0 + timedelta(seconds=(s - run.seq0) / run.coll_per_step * run.step_s)

        for r in dump_ranks:
            if r == stuck:
                flight_recorder(ctx, run, r, seq - 1, {}, t_of, (seq - 1, seq - 1, seq - 1))
            else:
                flight_recorder(
                    ctx,
                    run,
                    r,
                    seq + 2,
                    {seq: "started", seq + 1: "scheduled", seq + 2: "scheduled"},
                    t_of,
                    (seq + 2, seq, seq - 1),
                )
    oc = outcome_failed(ctx, t_end)
    if spec.platform == "k8s":
        k8s_failed(ctx, oc, failed=len(ctx.nodes))
    return oc


def _barrier_case0(ctx: Ctx, t_to: datetime, master: int, deaths: dict[int, Death]) -> None:
    t_sum = t_to + timedelta(seconds=1.1)
    m = ctx.nodes[master]
    ctx.agent(
        m,
        t_to + timedelta(milliseconds=700),
        ctx.elog(
            m,
            t_to + timedelta(milliseconds=700),
            "E",
            "multiprocessing/api.py",
            869,
            f"failed (exitcode: -6) local_rank: 0 (pid: {ctx.pid(0)}) of binary: /usr/bin/python3",
        ),
    )
    ctx.agent(
        m,
        t_sum,
        traceback_lines(
            ELASTIC_TB,
            [
                "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                "=" * 60,
                "train.py FAILED",
                "-" * 60,
                "Failures:",
                "  <NO_OTHER_FAILURES>",
                "-" * 60,
                "Root Cause (first observed failure):",
                *_failure_entry(ctx, 0, m, 0, deaths[0]),
                "=" * 60,
            ],
        ),
    )
    ctx.node_end[master], ctx.node_exit[master] = t_sum + timedelta(milliseconds=250), 1


def _barrier_waiters(ctx: Ctx, master: int, t_done: datetime, rng: random.Random) -> None:
    """The other ranks wait in the barrier until their watchdogs time out."""
    for i, node in enumerate(ctx.nodes):
        if i == master:
            continue
        t = t_done + timedelta(seconds=rng.uniform(4, 6))
        ctx.agent(
            node,
            t,
            [
                ctx.elog(
                    node,
                    t,
                    "I",
                    "agent/server/api.py",
                    879,
                    "[default] worker group successfully finished. "
                    "Waiting 300 seconds for other agents to finish.",
                ),
                ctx.elog(
                    node,
                    t,
                    "I",
                    "agent/server/api.py",
                    932,
                    "Local worker group finished "
                    "(WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
                ),
            ],
        )
        t2 = t + timedelta(seconds=300.4)
        ctx.agent(
            node,
            t2,
            ctx.elog(
                node,
                t2,
                "I",
                "agent/server/api.py",
                946,
                f"Done waiting for other agents. Elapsed: {300.4 + rng.random():.4f} seconds",
            ),
        )
        ctx.node_end[i], ctx.node_exit[i] = t2 + timedelta(milliseconds=300), 0


def _rank0_barrier(ctx: Ctx, run: Run, t_done: datetime) -> Outcome:
    """Only rank 0 enters a barrier (inside `if rank == 0:`); everyone else has finished."""
    spec, rng = ctx.spec, ctx.rng
    last = progress(ctx, run, t_done)
    seq = run.seq_at(t_done) + 1
    for r in range(ctx.world):
        t = t_done + timedelta(seconds=rng.uniform(0.5, 3))
        if r == 0:
            ctx.out(
                0,
                t,
                ctx.pylog(
                    0,
                    t,
                    "INFO",
                    "trainer",
                    f"training finished at step {last}; saving final checkpoint on rank 0",
                ),
            )
            continue
        if r % ctx.gpn == 0:
            ctx.out(r, t, ctx.pylog(r, t, "INFO", "trainer", "training finished, exiting"))
    timeout = timedelta(milliseconds=spec.timeout_ms)
    t_to = t_done + timedelta(seconds=4) + timeout + timedelta(milliseconds=rng.randint(20, 900))
    run0 = Run(**{**run.__dict__, "op": "ALLREDUCE", "numel_in": 1, "numel_out": 1})
    ctx.out(
        0,
        t_to,
        watchdog_lines(
            ctx, 0, t_to, run0, seq, spec.timeout_ms + rng.randint(10, 90), seq, seq - 1, run.frames
        ),
    )
    master = ctx.order[0]
    _barrier_waiters(ctx, master, t_done, rng)
    deaths = {0: Death(t_to + timedelta(milliseconds=300), -6)}
    for r in ctx.ranks_on(master):
        if r:
            deaths[r] = Death(t_done + timedelta(seconds=rng.uniform(3, 4)), 0)
    if ctx.has_agent:
        _barrier_case0(ctx, t_to, master, deaths)
    else:
        ctx.node_end[master], ctx.node_exit[master] = deaths[0].t, 1
    if spec.platform == "slurm":
        ctx.jobout(
            ctx.node_end[master], srun_exit_line(ctx, master, [0], 1 if ctx.has_agent else -6)
        )
    t_end = max(ctx.node_end.values()) + timedelta(seconds=1.5)
    post_decoys(ctx, t_to)
    oc = outcome_failed(ctx, t_end)
    if spec.platform == "k8s":
        for i in ctx.node_end:
            if ctx.node_exit[i] == 0:
                oc.pods[i] = {"exit": 0, "reason": "Completed"}
        k8s_failed(ctx, oc)
    return oc


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "hang",
        "dataloader-stall",
        misleading=True,
        retry=None,
        layouts=AGENT_LAYOUTS,
        torch=("2.3", "2.5", "2.6"),
        extras=("flight_recorder",),
        notes="rank {rank} stops in a data read and never enqueues collective N: it prints no "
        "watchdog "
        "line while all others time out on SeqNum N; torchelastic's 'first observed failure' names "
        "a different rank (a decoy); flight recorder shows rank {rank} last completed N-1",
    ),
    Recipe(
        "hang",
        "rank0-only-barrier",
        culprit="master",
        torch=("2.3", "2.5", "2.6"),
        layouts=AGENT_LAYOUTS,
        notes="a barrier inside `if rank == 0`: everyone else finished and exited 0; only rank 0 "
        "times "
        "out, on a 1-element ALLREDUCE",
    ),
    Recipe(
        "hang",
        "nfs-checkpoint-stall",
        misleading=True,
        retry=True,
        layouts=AGENT_LAYOUTS,
        notes="rank {rank} blocks in an NFS write (kernel: 'nfs: server not responding', hung "
        "task); "
        "it never joins the next collective; the others time out",
    ),
    Recipe(
        "hang",
        "k8s-stuck-worker",
        platform="k8s",
        misleading=True,
        retry=None,
        torch=("2.3", "2.5", "2.6"),
        extras=("flight_recorder",),
        notes="rank {rank} in pod on {node} stalls in data loading; no watchdog line from it; "
        "flight "
        "recorder and the missing line point at it",
    ),
    Recipe(
        "hang",
        "seqnum-behind",
        misleading=True,
        retry=None,
        layouts=AGENT_LAYOUTS,
        torch=("2.5", "2.6"),
        extras=("flight_recorder",),
        notes="no log line explains it: the others time out on SeqNum N (last enqueued N+2), rank "
        "{rank} never fires a watchdog; only the collective bookkeeping (flight recorder: last "
        "enqueued N-1) shows it is behind",
    ),
)
