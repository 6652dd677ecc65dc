"""The fabric fails: IB/RoCE link down, flapping links, hot modules, a bond losing its slave."""

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
from goodput_agent.evals.cluster.nccl import ib_completion_lines
from goodput_agent.evals.cluster.spec import HCA_BUS
from goodput_agent.evals.cluster.training import progress, prologue
from goodput_agent.evals.failure_cases.recipe import AGENT_LAYOUTS, Recipe


def _net_ib_link_down(
    ctx: Ctx, pci: str, hca: str, v: str, k: int, node: NodeRT, t_fail: datetime, rng: random.Random
) -> None:
    kmsgs = [f"mlx5_core {pci} {hca}: Port: 1 Link DOWN"]
    if v == "k8s-roce-port-down":
        kmsgs.insert(0, f"mlx5_core {pci} eth{k + 1}: Link down")
    ctx.kern_block(node, t_fail, kmsgs)
    if v == "link-flap-recovered":
        ctx.kern(
            node,
            t_fail + timedelta(seconds=rng.uniform(6, 14)),
            f"mlx5_core {pci} {hca}: Port: 1 Link ACTIVE",
        )


def _net_module_high_temp(
    ctx: Ctx, node: NodeRT, t_fail: datetime, pci: str, k: int, rng: random.Random, hca: str
) -> None:
    ctx.kern(
        node,
        t_fail - timedelta(seconds=rng.uniform(1, 3)),
        f"mlx5_core {pci}: mlx5_port_module_event:1147:(pid 0): Port module event[error]: "
        f"module {k}, "
        "Cable error, High Temperature",
    )
    ctx.kern(node, t_fail, f"mlx5_core {pci} {hca}: Port: 1 Link DOWN")


def _net_bond_eth_down(ctx: Ctx, node: NodeRT, t_fail: datetime) -> None:
    ctx.kern_block(
        node,
        t_fail,
        [
            "mlx5_core 0000:3b:00.0 ens1f0np0: Link down",
            "bond0: (slave ens1f0np0): link status definitely down, disabling slave",
            "mlx5_core 0000:3b:00.1 ens1f1np1: Link down",
            "bond0: (slave ens1f1np1): link status definitely down, disabling slave",
            "bond0: now running without any active interface!",
        ],
    )


def sc_network_fault(ctx: Ctx) -> Outcome:
    spec, rng, v = ctx.spec, ctx.rng, ctx.spec.variant
    ni, node, k, rank = _culprit(ctx)
    ctx.socket_net = v == "bond-eth-down"
    pre_decoys(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    hca, pci = node.hcas[k], f"0000:{HCA_BUS[k]}:00.0"
    if v in ("ib-link-down", "link-flap-recovered", "k8s-roce-port-down"):
        _net_ib_link_down(ctx, pci, hca, v, k, node, t_fail, rng)
    elif v == "module-high-temp":
        _net_module_high_temp(ctx, node, t_fail, pci, k, rng, hca)
    elif v == "bond-eth-down":
        _net_bond_eth_down(ctx, node, t_fail)
    elif v != "peer-ip-only":
        raise ValueError(v)
    # who notices: the peers on the same rail, then the culprit's own rank about its neighbour
    remote: dict[int, tuple[datetime, str, list[str]]] = {}
    others = [i for i in ctx.order if i != ni]
    neighbour = ctx.nodes[others[0]]
    for r in range(ctx.world):
        on = ctx.node_idx(r)
        if ctx.local(r) != k:
            continue
        t_err = t_fail + timedelta(seconds=rng.uniform(7, 24))
        peer = neighbour if on == ni else node
        if ctx.socket_net:
            warn = []
            for ch in range(1 if on == ni else rng.randint(2, 3)):
                port = 40000 + (r * 7919 + ch * 131) % 20000
                err = (
                    f"socketProgressOpt: Call to recv from {peer.ip}<{port}> failed : "
                    "Connection timed out"
                )
                warn += [
                    f"{ctx.nccl_prefix(r, 91)} misc/socket.cc:49 NCCL WARN {err}",
                    f"{ctx.nccl_prefix(r, 91)} NCCL INFO misc/socket.cc:778 -> 6",
                ]
        else:
            warn = []
            chans = 1 if on == ni else rng.randint(2, 3)
            for ch in range(chans):
                warn += ib_completion_lines(ctx, r, peer, channel=ch)
            err = warn[0].split("NCCL WARN ", 1)[1]
            if on == ni and v == "peer-ip-only":
                warn.insert(
                    0,
                    f"{ctx.nccl_prefix(r, 88)} NCCL WARN NET/IB : {hca}:1 Got async event : port "
                    "error",
                )
        remote[r] = (t_err, err, warn)
    t_end = collateral(ctx, run, t_fail=t_fail, dead={}, remote=remote)
    post_decoys(ctx, t_fail)
    oc = outcome_failed(ctx, t_end, step_exit="1:0" if ctx.has_agent else "0:6")
    oc.exp_rank = None
    if spec.platform == "k8s":
        k8s_failed(ctx, oc, failed=len(ctx.nodes))
    return oc


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "network_fault",
        "ib-link-down",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="{hca} on {node} goes Link DOWN; peers on the same rail report NET/IB status=12 "
        "naming "
        "{node}'s IP, so the errors are printed on the victims, not on the culprit",
    ),
    Recipe(
        "network_fault",
        "link-flap-recovered",
        misleading=True,
        retry=True,
        sched="sacct_json",
        layouts=AGENT_LAYOUTS,
        notes="{hca} on {node} flaps (DOWN, ACTIVE ~10 s later); NCCL had already failed on that "
        "rail; "
        "transient, so a retry is useful",
    ),
    Recipe(
        "network_fault",
        "k8s-roce-port-down",
        platform="k8s",
        misleading=True,
        notes="RoCE port {hca} on {node} goes down; errors are printed by the peers naming its IP",
    ),
    Recipe(
        "network_fault",
        "module-high-temp",
        misleading=True,
        tz="local",
        layouts=AGENT_LAYOUTS,
        notes="transceiver on {hca} of {node} reports High Temperature then Link DOWN; times are "
        "local",
    ),
    Recipe(
        "network_fault",
        "peer-ip-only",
        misleading=True,
        culprit_kernel=None,
        layouts=AGENT_LAYOUTS,
        notes="{node}'s kernel log is missing; only the peers' NET/IB errors (all naming its IP) "
        "and its "
        "own 'port error' async event identify it",
    ),
    Recipe(
        "network_fault",
        "bond-eth-down",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="both bond0 slaves on {node} go down; NCCL over sockets times out naming its IP",
    ),
)
