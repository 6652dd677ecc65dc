"""The scheduler preempts the job (Slurm preemption, requeue; Kubernetes eviction)."""

from __future__ import annotations

from datetime import timedelta

from goodput_agent.evals.cluster.collateral import collateral
from goodput_agent.evals.cluster.context import Ctx, Outcome
from goodput_agent.evals.cluster.deaths import _t_fail
from goodput_agent.evals.cluster.endings import _cancel, post_decoys, pre_decoys
from goodput_agent.evals.cluster.formats import _uuid
from goodput_agent.evals.cluster.k8s_objects import (
    default_k8s_events,
    job_failed_event,
    k8s_event,
    pod_ref,
)
from goodput_agent.evals.cluster.training import Death, progress, prologue
from goodput_agent.evals.failure_cases.recipe import Recipe


def sc_preempted(ctx: Ctx) -> Outcome:
    if ctx.spec.platform == "slurm":
        return _cancel(ctx, "PREEMPTION")
    spec, rng = ctx.spec, ctx.rng
    ni = spec.culprit_node if spec.culprit_node is not None else 1
    node = ctx.nodes[ni]
    pre_decoys(ctx)
    run = prologue(ctx)
    t_pre = _t_fail(ctx)
    progress(ctx, run, t_pre)
    dead = {
        r: Death(t_pre + timedelta(milliseconds=rng.randint(300, 1200)), -15)
        for r in ctx.ranks_on(ni)
    }
    remote = {}
    for r in range(ctx.world):
        if ctx.node_idx(r) != ni and ctx.local(r) in (0, ctx.gpn // 2):
            port = 40000 + (r * 7919) % 20000
            err = (
                f"socketProgressOpt: Call to recv from {node.ip}<{port}> failed : "
                "Connection reset by peer"
            )
            remote[r] = (
                t_pre + timedelta(seconds=rng.uniform(1.5, 6)),
                err,
                [f"{ctx.nccl_prefix(r, 91)} misc/socket.cc:49 NCCL WARN {err}"],
            )
    t_end = collateral(ctx, run, t_fail=t_pre, dead=dead, remote=remote, sigterm_nodes={ni: t_pre})
    post_decoys(ctx, t_pre)
    oc = Outcome(t_end=t_end, exp_rank=None, exp_gpu=None)
    oc.pods[ni] = {"exit": 143, "reason": "Error", "finished": ctx.node_end[ni]}
    default_k8s_events(ctx, oc)
    k8s_event(
        ctx,
        oc,
        t_pre - timedelta(milliseconds=400),
        pod_ref(ctx, node),
        "Preempted",
        f"Preempted by pod {_uuid(rng)} on node {node.name}",
        component="default-scheduler",
    )
    k8s_event(
        ctx,
        oc,
        t_pre - timedelta(milliseconds=200),
        pod_ref(ctx, node),
        "Killing",
        "Stopping container pytorch",
        host=node.name,
    )
    job_failed_event(ctx, oc, ctx.node_end[ni] + timedelta(seconds=1))
    return oc


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "preempted",
        "slurm-preemption",
        retry=True,
        notes="PREEMPTED: slurmstepd 'DUE TO PREEMPTION'; a healthy run was stopped",
    ),
    Recipe(
        "preempted",
        "k8s-preempted",
        platform="k8s",
        misleading=True,
        retry=True,
        notes="the scheduler preempts one worker pod (event Preempted, exit 143); the other pods "
        "then "
        "fail with NCCL connection resets, which are consequences",
    ),
    Recipe(
        "preempted",
        "requeued",
        retry=True,
        extras=("scontrol_job",),
        sched="sacct_txt",
        notes="PREEMPTED and requeued: sacct shows the preempted run and a PENDING requeue; "
        "scontrol "
        "Restarts=1",
    ),
    Recipe(
        "preempted",
        "sacct-json",
        misleading=True,
        retry=True,
        sched="sacct_json",
        decoys=("xid45",),
        notes="PREEMPTED in sacct --json; an Xid 45 after the SIGTERM is a consequence",
    ),
)
