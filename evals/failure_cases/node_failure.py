"""A node dies or stops answering: Slurm NOT_RESPONDING, Kubernetes NotReady, MCE then silence."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from goodput_agent.evals.cluster.collateral import collateral
from goodput_agent.evals.cluster.context import Ctx, NodeRT, Outcome, _slurm_time
from goodput_agent.evals.cluster.deaths import _t_fail
from goodput_agent.evals.cluster.endings import post_decoys, pre_decoys
from goodput_agent.evals.cluster.formats import _hex
from goodput_agent.evals.cluster.k8s_objects import (
    _kt,
    default_k8s_events,
    job_failed_event,
    k8s_event,
    node_ref,
    pod_ref,
)
from goodput_agent.evals.cluster.nccl import ib_completion_lines
from goodput_agent.evals.cluster.spec import CaseSpec
from goodput_agent.evals.cluster.training import Run, progress, prologue
from goodput_agent.evals.failure_cases.recipe import AGENT_LAYOUTS, Recipe


def _node_slurm(
    ctx: Ctx,
    run: Run,
    t_fail: datetime,
    rng: random.Random,
    node: NodeRT,
    spec: CaseSpec,
    remote: dict[int, tuple[datetime, str, list[str]]],
    ni: int,
) -> Outcome:
    t_nf = t_fail + timedelta(seconds=300 + rng.uniform(2, 40))
    batch = sorted(n.name for n in ctx.nodes)[0]
    ctx.jobout(
        t_nf,
        [
            f"srun: error: Node failure on {node.name}",
            f"slurmstepd: error: *** JOB {spec.job_id} ON {batch} CANCELLED AT "
            f"{_slurm_time(ctx, t_nf)} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
        ],
    )
    t_end = collateral(ctx, run, t_fail=t_fail, dead={}, lost=[ni], remote=remote, deadline=t_nf)
    t_end = max(t_end, t_nf + timedelta(seconds=rng.uniform(1, 3)))
    ctx.truncate_node(ni, t_fail)
    post_decoys(ctx, t_fail)
    oc = Outcome(
        t_end=t_end,
        job_state="NODE_FAIL",
        job_exit="0:0",
        step_state="NODE_FAIL",
        step_exit="0:0",
        batch_state="CANCELLED",
        batch_exit="0:15",
        reason="NodeDown",
        failed_node=node.name,
        exp_rank=None,
    )
    oc.sinfo.append(("Not responding", "slurm", t_nf, node.name))
    oc.node_state[node.name] = ("DOWN+NOT_RESPONDING", "Not responding", t_nf)
    return oc


def _node_k8s(
    ctx: Ctx,
    run: Run,
    t_fail: datetime,
    rng: random.Random,
    remote: dict[int, tuple[datetime, str, list[str]]],
    ni: int,
    node: NodeRT,
) -> Outcome:
    """Kubernetes: the node stops posting status, goes NotReady, its pod is evicted."""
    t_nr = t_fail + timedelta(seconds=40 + rng.uniform(0, 5))
    t_end = collateral(ctx, run, t_fail=t_fail, dead={}, lost=[ni], remote=remote)
    ctx.truncate_node(ni, t_fail)
    post_decoys(ctx, t_fail)
    oc = Outcome(t_end=t_end, exp_rank=None)
    oc.pods[ni] = {"state": "running", "not_ready": True, "ready_changed": t_nr, "phase": "Running"}
    unknown = {
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": _kt(t_fail - timedelta(seconds=3)),
        "lastTransitionTime": _kt(t_nr),
    }
    oc.k8s_nodes[node.name] = {
        "heartbeat": t_fail - timedelta(seconds=3),
        "ready": unknown,
        **{k: dict(unknown) for k in ("MemoryPressure", "DiskPressure", "PIDPressure")},
        "taints": [
            {
                "effect": "NoSchedule",
                "key": "node.kubernetes.io/unreachable",
                "timeAdded": _kt(t_nr),
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/unreachable",
                "timeAdded": _kt(t_nr),
            },
        ],
    }
    default_k8s_events(ctx, oc)
    k8s_event(
        ctx,
        oc,
        t_nr,
        node_ref(node.name),
        "NodeNotReady",
        f"Node {node.name} status is now: NodeNotReady",
        component="node-controller",
    )
    k8s_event(
        ctx,
        oc,
        t_nr,
        pod_ref(ctx, node),
        "NodeNotReady",
        "Node is not ready",
        warning=True,
        component="node-controller",
    )
    k8s_event(
        ctx,
        oc,
        t_nr + timedelta(seconds=300),
        pod_ref(ctx, node),
        "TaintManagerEviction",
        f"Marking for deletion Pod ml-train/{node.pod}",
        component="taint-eviction-controller",
    )
    ends = sorted(t for i, t in ctx.node_end.items() if i != ni)
    job_failed_event(ctx, oc, ends[0] + timedelta(seconds=2), len(ctx.nodes) - 1)
    return oc


def sc_node_failure(ctx: Ctx) -> Outcome:
    spec, rng, v = ctx.spec, ctx.rng, ctx.spec.variant
    ni = spec.culprit_node
    assert ni is not None
    node = ctx.nodes[ni]
    pre_decoys(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    if v == "mce-then-silence":
        ctx.kern_block(
            node,
            t_fail - timedelta(seconds=1.2),
            [
                "mce: [Hardware Error]: Machine check events logged",
                f"mce: [Hardware Error]: CPU {rng.randint(0, 191)}: Machine Check Exception: 5 "
                "Bank 12: "
                "be20000000800400",
                "mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff9a2c3e80> {intel_idle+0x70/0xb0}",
                f"mce: [Hardware Error]: TSC 1f3a{_hex(rng, 8)} ADDR 3fff{_hex(rng, 8)} MISC 86 ",
                f"mce: [Hardware Error]: PROCESSOR 0:806f8 TIME {int(t_fail.timestamp())} SOCKET "
                "1 APIC 54 "
                "microcode 2b000590",
            ],
            step_us=400,
        )
    remote: dict[int, tuple[datetime, str, list[str]]] = {}
    for other in range(len(ctx.nodes)):
        if other == ni:
            continue
        for local in rng.sample(range(ctx.gpn), k=min(2, ctx.gpn)):
            r = ctx.rank_at(other, local)
            warn = ib_completion_lines(ctx, r, node)
            remote[r] = (
                t_fail + timedelta(seconds=rng.uniform(8, 30)),
                warn[0].split("NCCL WARN ", 1)[1],
                warn,
            )
    if spec.platform == "slurm":
        return _node_slurm(ctx, run, t_fail, rng, node, spec, remote, ni)
    return _node_k8s(ctx, run, t_fail, rng, remote, ni, node)


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "node_failure",
        "slurm-not-responding",
        misleading=True,
        retry=True,
        culprit="not_master",
        extras=("sinfo_R",),
        layouts=AGENT_LAYOUTS,
        notes="{node} dies silently: its logs just stop; peers show NET/IB retry-exceeded errors "
        "naming "
        "its IP (looks like a network fault); sacct NODE_FAIL and sinfo -R 'Not responding' decide",
    ),
    Recipe(
        "node_failure",
        "k8s-notready",
        platform="k8s",
        misleading=True,
        retry=True,
        culprit="not_master",
        notes="node {node} goes NotReady/Unknown with unreachable taints; its pod never "
        "terminates and its "
        "logs stop; the other pods fail with NET/IB errors and watchdog timeouts",
    ),
    Recipe(
        "node_failure",
        "mce-then-silence",
        misleading=True,
        retry=True,
        culprit="not_master",
        extras=("sinfo_R",),
        layouts=AGENT_LAYOUTS,
        notes="{node} logs a machine check and then nothing; NODE_FAIL + sinfo 'Not responding'",
    ),
    Recipe(
        "node_failure",
        "k8s-lost-xid45-decoy",
        platform="k8s",
        misleading=True,
        retry=True,
        culprit="not_master",
        decoys=("xid45",),
        notes="node {node} is lost (NotReady); an Xid 45 on another node after its processes were "
        "killed "
        "is a symptom",
    ),
    Recipe(
        "node_failure",
        "sacct-json-failed-node",
        misleading=True,
        retry=True,
        sched="sacct_json",
        culprit="not_master",
        decoys=("old_xid",),
        layouts=AGENT_LAYOUTS,
        notes="NODE_FAIL with failed_node in sacct --json; an old Xid on another node predates "
        "the window",
    ),
)
