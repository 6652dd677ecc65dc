"""How the other ranks die once one has: watchdog timeouts, remote errors, kills at a deadline,
their launchers' reports."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Literal

from goodput_agent.evals.cluster.context import Ctx
from goodput_agent.evals.cluster.nccl import remote_error_lines, store_reset_lines, watchdog_lines
from goodput_agent.evals.cluster.torchelastic import agent_report, srun_report
from goodput_agent.evals.cluster.training import Death, Run

# candidate deaths: rank -> (time, exitcode, lines to print and when)
Candidates = dict[int, tuple[datetime, int, list[tuple[datetime, list[str]]]]]


def _launcher_reports(
    ctx: Ctx,
    t_fail: datetime,
    lost: Iterable[int],
    sigterm_nodes: dict[int, datetime] | None,
    kill_at: datetime | None,
    deadline: datetime | None,
    deaths: dict[int, Death],
    mode: Literal["watchdog", "kill"],
    dead: dict[int, Death],
) -> datetime:
    """Each node's launcher reports its dead ranks; returns when the last one is done."""
    t_end = t_fail
    for node_idx in range(len(ctx.nodes)):
        node_deaths = {r: d for r, d in deaths.items() if ctx.node_idx(r) == node_idx}
        if node_idx in lost or not node_deaths:
            continue
        if ctx.has_agent:
            own = any(r in dead or d.exitcode != -15 for r, d in node_deaths.items())
            sig = None if own else (kill_at if mode == "kill" else deadline)
            if sigterm_nodes and node_idx in sigterm_nodes:
                sig = sigterm_nodes[node_idx]
            t_node = agent_report(ctx, node_idx, node_deaths, sigterm_at=sig)
        else:
            t_node = max(d.t for d in node_deaths.values())
            ctx.node_end[node_idx], ctx.node_exit[node_idx] = t_node, 1
        t_end = max(t_end, t_node)
    return t_end


def _agent_teardown(ctx: Ctx, cand: Candidates, dead: dict[int, Death], rng: random.Random) -> None:
    """A local agent tears down the siblings of the first worker that dies on its node."""
    if ctx.has_agent:
        for node_idx in range(len(ctx.nodes)):
            on = [r for r in ctx.ranks_on(node_idx) if r in cand or r in dead]
            if not on:
                continue
            first = min(dead[r].t if r in dead else cand[r][0] for r in on)
            for r in on:
                if r in cand and cand[r][0] > first + timedelta(milliseconds=900):
                    killed = first + timedelta(milliseconds=rng.randint(350, 850))
                    if not (cand[r][1] == -15 and cand[r][0] < killed):
                        cand[r] = (killed, -15, [])


def _candidate_deaths(
    ctx: Ctx,
    run: Run,
    mode: Literal["watchdog", "kill"],
    t_coll: datetime,
    skip: set[int],
    seq_for: Callable[[int], int] | None,
    seq: int,
    enq_for: Callable[[int], int] | None,
    cand: Candidates,
    dead: dict[int, Death],
    lost: Iterable[int],
    remote: dict[int, tuple[datetime, str, list[str]]] | None,
    kill_at: datetime | None,
    t_fail: datetime,
    node_jitter: dict[int, int],
    rng: random.Random,
) -> None:
    """How each surviving rank would die: killed, a remote error, or its NCCL watchdog."""
    for r in range(ctx.world):
        if r in dead or ctx.node_idx(r) in lost:
            continue
        if mode == "kill":
            cand[r] = (
                (kill_at or t_fail) + timedelta(milliseconds=rng.randint(100, 1900)),
                -15,
                [],
            )
            continue
        t_to = t_coll + timedelta(
            milliseconds=ctx.spec.timeout_ms + node_jitter[ctx.node_idx(r)] + rng.randint(0, 350)
        )
        if r in remote and remote[r][0] < t_to:
            t_err, last_error, warn = remote[r]
            t_abort = t_err + timedelta(milliseconds=rng.randint(30, 900))
            cand[r] = (
                t_abort + timedelta(milliseconds=rng.randint(50, 400)),
                -6,
                [(t_err, warn), (t_abort, remote_error_lines(ctx, r, t_abort, last_error))],
            )
            continue
        if r in skip:
            cand[r] = (datetime.max.replace(tzinfo=UTC), -15, [])
            continue
        ran = int((t_to - t_coll).total_seconds() * 1000)
        s = seq_for(r) if seq_for else seq
        enq = enq_for(r) if enq_for else s + (1 if run.coll_per_step > 2 else 0)
        cand[r] = (
            t_to + timedelta(milliseconds=rng.randint(80, 600)),
            -6,
            [(t_to, watchdog_lines(ctx, r, t_to, run, s, ran, enq, s - 1, run.frames))],
        )


def _aftermath(
    ctx: Ctx,
    cand: Candidates,
    deaths: dict[int, Death],
    lost: set[int],
    rng: random.Random,
    peermem: bool,
) -> None:
    """Survivors complain when rank 0's TCPStore goes; killed GPU processes leave kernel lines."""
    if ctx.spec.torch != "2.1" and 0 in deaths and ctx.node_idx(0) not in lost:
        t0 = deaths[0].t
        for r in cand:
            if (
                deaths[r].t > t0 + timedelta(milliseconds=600)
                and r % 3 != 1
                and ctx.node_idx(r) != ctx.node_idx(0)
            ):
                tt = t0 + timedelta(milliseconds=rng.randint(200, 500))
                ctx.out(r, tt, store_reset_lines(ctx, r, tt))
    # kernel side effects of killed GPU processes (harmless)
    for node_idx, node in enumerate(ctx.nodes):
        times = [d.t for r, d in deaths.items() if ctx.node_idx(r) == node_idx]
        if node_idx not in lost and peermem and times and rng.random() < 0.5:
            ctx.kern(
                node,
                min(times) + timedelta(milliseconds=80),
                "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, "
                "skipping further processing",
            )


def collateral(
    ctx: Ctx,
    run: Run,
    *,
    t_fail: datetime,
    dead: dict[int, Death],
    lost: Iterable[int] = (),
    mode: Literal["watchdog", "kill"] = "watchdog",
    kill_at: datetime | None = None,
    deadline: datetime | None = None,
    remote: dict[int, tuple[datetime, str, list[str]]] | None = None,
    skip_watchdog: Iterable[int] = (),
    seq_for: Callable[[int], int] | None = None,
    enq_for: Callable[[int], int] | None = None,
    peermem: bool = True,
    sigterm_nodes: dict[int, datetime] | None = None,
) -> datetime:
    """Everything that happens to the other ranks after the primary failure; returns the job end.

    dead: ranks that failed on their own (already printed). lost: node indexes that vanished.
    mode "watchdog": the others block until their NCCL watchdog fires (or a remote error, or the
    `deadline` when the scheduler kills the job first). mode "kill": the others are terminated at
    `kill_at` (srun --kill-on-bad-exit, a Kubernetes failure policy, a cancel).
    """
    rng = random.Random(f"collateral:{ctx.spec.case_id}")
    lost = set(lost)
    seq = run.seq_at(t_fail)
    t_coll = t_fail - timedelta(seconds=rng.uniform(0.05, min(run.step_s, 2.0)))
    remote = remote or {}
    skip = set(skip_watchdog)
    # nodes time out at slightly different moments; rank 0's node (the TCPStore host) first
    node_jitter = {i: rng.randint(650, 2600) for i in range(len(ctx.nodes))}
    node_jitter[ctx.order[0]] = rng.randint(5, 120)
    # candidate deaths: (time, exitcode, lines to print at `time` or None)
    cand: Candidates = {}
    _candidate_deaths(
        ctx,
        run,
        mode,
        t_coll,
        skip,
        seq_for,
        seq,
        enq_for,
        cand,
        dead,
        lost,
        remote,
        kill_at,
        t_fail,
        node_jitter,
        rng,
    )
    # the scheduler may end it all first
    if deadline is not None:
        for r, (t, _code, _lines) in list(cand.items()):
            if t > deadline:
                cand[r] = (deadline + timedelta(milliseconds=rng.randint(100, 1500)), -15, [])
    # a local agent tears down the siblings of the first worker that dies on its node
    _agent_teardown(ctx, cand, dead, rng)
    deaths: dict[int, Death] = dict(dead)
    for r, (t, code, lines) in cand.items():
        for tt, block in lines:
            ctx.out(r, tt, block, step_us=200)
        deaths[r] = Death(t, code)
    # rank 0 hosted the TCPStore: survivors complain when it goes
    _aftermath(ctx, cand, deaths, lost, rng, peermem)
    # launchers report
    t_end = _launcher_reports(
        ctx, t_fail, lost, sigterm_nodes, kill_at, deadline, deaths, mode, dead
    )
    srun_report(ctx, deaths, lost)
    return max([t_end, *ctx.node_end.values()]) + timedelta(seconds=rng.uniform(1.0, 3.0))
