"""How a job ends once its culprit is chosen: decoys, the failed outcome, the crash's collateral,
the cancellation (time limit, preemption)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from goodput_agent.evals.cluster.collateral import collateral
from goodput_agent.evals.cluster.context import Ctx, NodeRT, Outcome, _slurm_time
from goodput_agent.evals.cluster.deaths import xid_line
from goodput_agent.evals.cluster.k8s_objects import default_k8s_events, job_failed_event
from goodput_agent.evals.cluster.kernel_noise import edac_ce
from goodput_agent.evals.cluster.nccl import remote_error_lines
from goodput_agent.evals.cluster.spec import JOURNAL_STYLES
from goodput_agent.evals.cluster.torchelastic import srun_cancel_lines
from goodput_agent.evals.cluster.training import Death, Run, progress, prologue


def decoy_node(ctx: Ctx, *avoid: int) -> int:
    choices = [i for i in range(len(ctx.nodes)) if i not in avoid and ctx.nodes[i].kstyle]
    choices = choices or [i for i in range(len(ctx.nodes)) if i not in avoid]
    return random.Random(f"decoy:{ctx.spec.case_id}").choice(choices)


def pre_decoys(ctx: Ctx) -> None:
    """Decoys that must exist before anything else is printed (they move a node's boot time)."""
    if "old_xid" not in ctx.spec.decoys:
        return
    ni = decoy_node(ctx, *(x for x in (ctx.spec.culprit_node,) if x is not None))
    node = ctx.nodes[ni]
    if node.kstyle not in JOURNAL_STYLES:
        node.kstyle = "short"
    t_old = ctx.spec.start - timedelta(
        hours=ctx.rng.randint(20, 40),
        minutes=ctx.rng.randint(0, 59),
        microseconds=ctx.rng.randint(0, 999999),
    )
    old_boot = t_old - timedelta(
        days=6, seconds=ctx.rng.randint(0, 80000), microseconds=ctx.rng.randint(0, 999999)
    )
    local = ctx.rng.randrange(ctx.gpn)
    bus = ctx.bus[local]
    for i, msg in enumerate(
        (
            f"NVRM: GPU at PCI:{bus}: {node.uuids[local]}",
            xid_line(ctx, local, 79, "GPU has fallen off the bus.", ctx.rng.randint(3000, 9000)),
            f"NVRM: GPU {bus}.0: GPU has fallen off the bus.",
        )
    ):
        ctx.kern(node, t_old + timedelta(microseconds=i * 80), msg, boot=old_boot)
    node.boot = t_old + timedelta(minutes=ctx.rng.randint(30, 90))
    for i, msg in enumerate(
        (
            "Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007) (gcc (Ubuntu "
            "11.4.0-1ubuntu1~22.04) "
            "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #115-Ubuntu SMP Mon Apr 15 09:52:04 "
            "UTC 2024",
            "Command line: BOOT_IMAGE=/vmlinuz-5.15.0-105-generic "
            "root=UUID=3f1c2a9e-7d44-4b1f-9a0e-"
            "2c5d8e1f6a70 ro pci=realloc=off iommu=pt",
            "nvidia: loading out-of-tree module taints kernel.",
            f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {ctx.driver}  Release Build  "
            "(dvs-builder@U16-I3-B03-4-3)  Tue Jun  4 09:44:28 UTC 2024",
        )
    ):
        ctx.kern(
            node,
            node.boot + timedelta(seconds=0.4 + i * 3.1, microseconds=ctx.rng.randint(0, 99999)),
            msg,
        )
    ctx.kern(
        node,
        node.boot + timedelta(minutes=5, microseconds=ctx.rng.randint(0, 999999)),
        "New session 1 of user root.",
        ident="systemd-logind[1874]",
    )


def post_decoys(ctx: Ctx, t_fail: datetime) -> None:
    spec = ctx.spec
    avoid = tuple(x for x in (spec.culprit_node,) if x is not None)
    if "xid45" in spec.decoys:
        ni = decoy_node(ctx, *avoid)
        node = ctx.nodes[ni]
        t = ctx.node_end.get(ni, t_fail + timedelta(seconds=30)) - timedelta(milliseconds=300)
        for local in sorted(ctx.rng.sample(range(ctx.gpn), k=min(3, ctx.gpn))):
            rank = ctx.rank_at(ni, local)
            ctx.kern(
                node,
                t + timedelta(microseconds=local * 211),
                xid_line(ctx, local, 45, f"Ch 000000{8 + local:02x}", ctx.pid(rank)),
            )
        if "xid43" in spec.decoys:
            rank = ctx.rank_at(ni, 0)
            ctx.kern(
                node,
                t + timedelta(milliseconds=5),
                xid_line(ctx, 0, 43, "Ch 00000010", ctx.pid(rank)),
            )
    if "edac" in spec.decoys:
        edac_ce(
            ctx,
            ctx.nodes[decoy_node(ctx, *avoid)],
            t_fail - timedelta(seconds=ctx.rng.randint(60, 400)),
        )


def outcome_failed(ctx: Ctx, t_end: datetime, *, step_exit: str = "1:0") -> Outcome:
    return Outcome(t_end=t_end, step_exit=step_exit)


def k8s_failed(ctx: Ctx, oc: Outcome, failed: int = 1) -> None:
    default_k8s_events(ctx, oc)
    ends = sorted(t for t in ctx.node_end.values())
    if ends:
        job_failed_event(ctx, oc, ends[0] + timedelta(seconds=2), failed)


def _culprit(ctx: Ctx) -> tuple[int, NodeRT, int, int]:
    ni, local = ctx.spec.culprit_node, ctx.spec.culprit_local or 0
    assert ni is not None
    return ni, ctx.nodes[ni], local, ctx.rank_at(ni, local)


def _finish_crash(
    ctx: Ctx, run: Run, t_fail: datetime, rank: int, death: Death, **kw: Any
) -> Outcome:
    """One rank died on its own; the rest is collateral (watchdog timeouts, or killed)."""
    spec = ctx.spec
    if spec.kill_on_bad_exit or kw.pop("kill", False):
        delay = 0.3 if not ctx.has_agent else 2.0
        kill_at = death.t + timedelta(seconds=delay + ctx.rng.uniform(0, 1.5))
        if spec.platform == "slurm":
            ctx.jobout(kill_at - timedelta(milliseconds=50), srun_cancel_lines(ctx, kill_at))
        t_end = collateral(
            ctx, run, t_fail=t_fail, dead={rank: death}, mode="kill", kill_at=kill_at, **kw
        )
    else:
        t_end = collateral(ctx, run, t_fail=t_fail, dead={rank: death}, **kw)
    post_decoys(ctx, t_fail)
    step_exit = f"0:{-death.exitcode}" if death.exitcode < 0 and not ctx.has_agent else "1:0"
    oc = outcome_failed(ctx, t_end, step_exit=step_exit)
    if spec.platform == "k8s":
        k8s_failed(ctx, oc)
    return oc


def _cancel(ctx: Ctx, why: str) -> Outcome:
    """The scheduler ends a healthy job (time limit, preemption): SIGTERM everywhere."""
    spec, rng = ctx.spec, ctx.rng
    pre_decoys(ctx)
    run = prologue(ctx)
    t_kill = spec.start + timedelta(seconds=spec.fail_after_s + rng.uniform(0, 40))
    if why == "TIME LIMIT":
        ctx.time_limit = timedelta(seconds=spec.fail_after_s)
        t_kill = spec.start + ctx.time_limit + timedelta(seconds=rng.uniform(1, 50))
    progress(ctx, run, t_kill, checkpoint_every=rng.choice((500, 1000, 2000)))
    batch = sorted(n.name for n in ctx.nodes)[0]
    ctx.jobout(
        t_kill,
        [
            f"slurmstepd: error: *** JOB {spec.job_id} ON {batch} CANCELLED AT "
            f"{_slurm_time(ctx, t_kill)} DUE TO {why} ***",
            f"slurmstepd: error: *** STEP {spec.job_id}.0 ON {batch} CANCELLED AT "
            f"{_slurm_time(ctx, t_kill)} "
            f"DUE TO {why} ***",
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        ],
    )
    if "noisy_shutdown" in spec.decoys:
        noisy = rng.sample(range(ctx.world), k=min(6, ctx.world))
        for r in noisy:
            tt = t_kill + timedelta(milliseconds=rng.randint(40, 90))
            peer = ctx.nodes[(ctx.node_idx(r) + 1) % len(ctx.nodes)]
            ctx.out(
                r,
                tt,
                remote_error_lines(
                    ctx,
                    r,
                    tt,
                    f"socketProgressOpt: Call to recv from {peer.ip}"
                    f"<{40000 + r * 13}> failed : Connection reset by peer",
                ),
            )
    t_end = collateral(ctx, run, t_fail=t_kill, dead={}, mode="kill", kill_at=t_kill)
    if spec.platform == "slurm":
        ctx.jobout(
            t_end - timedelta(milliseconds=500), f"srun: Force Terminated StepId={spec.job_id}.0"
        )
    post_decoys(ctx, t_kill)
    state = "TIMEOUT" if why == "TIME LIMIT" else "PREEMPTED"
    return Outcome(
        t_end=t_end,
        job_state=state,
        job_exit="0:0",
        step_state="CANCELLED",
        step_exit="0:15",
        batch_state="CANCELLED",
        batch_exit="0:15",
        reason="TimeLimit" if why == "TIME LIMIT" else "Preempted",
        exp_rank=None,
        exp_gpu=None,
    )
