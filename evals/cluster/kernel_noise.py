"""Harmless kernel-log lines every node prints (they make the culprit's lines harder to spot)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from goodput_agent.evals.cluster.context import Ctx, NodeRT
from goodput_agent.evals.cluster.spec import HCA_BUS, JOURNAL_STYLES

BENIGN_KERNEL = (
    "perf: interrupt took too long (2517 > 2500), lowering kernel.perf_event_max_sample_rate to "
    "79250",
    "hrtimer: interrupt took 31542 ns",
    "kauditd_printk_skb: 14 callbacks suppressed",
    'audit: type=1400 audit({epoch}.412:3391): apparmor="DENIED" operation="open" class="file" '
    'profile="snap.lxd.lxc" name="/proc/sys/kernel/osrelease" pid=3321 comm="lxc" '
    'requested_mask="r" '
    'denied_mask="r" fsuid=0 ouid=0',
    "Lustre: lustre-OST0007-osc-ffff8a0b9a82c000: Connection restored to 10.16.0.27@o2ib "
    "(at 10.16.0.27@o2ib)",
    "NVRM: GPU at PCI:{bus}: {uuid}",
    "nvidia-nvswitch2: open (major=508)",
)


SYSTEMD_NOISE = (
    ("systemd[1]", "Started session-{n}.scope - Session {n} of User mlops."),
    ("systemd-logind[1874]", "New session {n} of user mlops."),
    ("systemd[1]", "sysstat-collect.service: Deactivated successfully."),
    ("systemd[1]", "Finished sysstat-collect.service - system activity accounting tool."),
    ("CRON[98231]", "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)"),
)


def kernel_noise(ctx: Ctx, node: NodeRT, t0: datetime, t1: datetime, count: int) -> None:
    if node.kstyle is None:
        return
    rng = random.Random(f"knoise:{ctx.spec.case_id}:{node.name}")
    span = (t1 - t0).total_seconds()
    for _ in range(count):
        t = t0 + timedelta(seconds=rng.uniform(0, span))
        k = rng.randrange(len(node.hcas))
        msg = rng.choice(BENIGN_KERNEL).format(
            epoch=int(t.timestamp()),
            hca=HCA_BUS[k],
            k=k,
            bus=ctx.bus[k % ctx.gpn],
            uuid=node.uuids[k % ctx.gpn],
        )
        ctx.kern(node, t, msg)
    k = rng.randrange(len(node.hcas))
    ctx.kern(
        node,
        node.boot + timedelta(seconds=rng.uniform(20, 40)),
        f"mlx5_core 0000:{HCA_BUS[k]}:00.0: mlx5_port_module_event:1151:(pid 0): Port module "
        f"event: module {k}, Cable plugged",
    )
    if node.kstyle in JOURNAL_STYLES:
        for _ in range(rng.randint(2, 5)):
            ident, msg = rng.choice(SYSTEMD_NOISE)
            ctx.kern(
                node,
                t0 + timedelta(seconds=rng.uniform(0, span)),
                msg.format(n=rng.randint(1000, 9999)),
                ident=ident,
            )


def edac_ce(ctx: Ctx, node: NodeRT, t: datetime) -> None:
    """A corrected DIMM error: loud word 'error', harmless."""
    ctx.kern(
        node,
        t,
        "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#1_Chan#0_DIMM#0 "
        "(channel:0 slot:0 page:0x5a2f31 offset:0x0 grain:32 syndrome:0x0 - "
        "err_code:0x0000:0x009f socket:0 imc:1 rank:1 bg:2 ba:1 row:0x1b4c col:0x2e8)",
    )
