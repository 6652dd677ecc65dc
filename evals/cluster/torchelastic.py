"""How the other ranks die once one has: torchelastic's failure summary, srun's exit lines,
the collateral watchdog timeouts and SIGTERMs."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Literal

from goodput_agent.evals.cluster.context import Ctx, NodeRT
from goodput_agent.evals.cluster.formats import _hex
from goodput_agent.evals.cluster.nccl import remote_error_lines, store_reset_lines, watchdog_lines
from goodput_agent.evals.cluster.spec import PY_SITE
from goodput_agent.evals.cluster.training import SIGNALS, Death, Run, traceback_lines

ELASTIC_TB = (
    ("/usr/local/bin/torchrun", 8, "<module>", "sys.exit(main())"),
    (
        f"{PY_SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py",
        355,
        "wrapper",
        "return f(*args, **kwargs)",
    ),
    (f"{PY_SITE}/torch/distributed/run.py", 919, "main", "run(args)"),
    (f"{PY_SITE}/torch/distributed/run.py", 910, "run", "elastic_launch("),
    (
        f"{PY_SITE}/torch/distributed/launcher/api.py",
        138,
        "__call__",
        "return launch_agent(self._config, self._entrypoint, list(args))",
    ),
    (
        f"{PY_SITE}/torch/distributed/launcher/api.py",
        269,
        "launch_agent",
        "raise ChildFailedError(",
    ),
)


def _failure_entry(ctx: Ctx, idx: int, node: NodeRT, rank: int, death: Death) -> list[str]:
    when = ctx.lt(node, death.t).strftime("%Y-%m-%d_%H:%M:%S")
    pid = ctx.pid(rank)
    if death.exitcode < 0:
        sig = SIGNALS.get(death.exitcode, "SIGABRT")
        tb = [f"  traceback : Signal {-death.exitcode} ({sig}) received by PID {pid}"]
    elif death.error_file and death.tb:
        tb = ["  traceback : " + death.tb[0], *(f"    {x}" for x in death.tb[1:])]
    else:
        tb = [
            "  traceback : To enable traceback see: "
            "https://pytorch.org/docs/stable/elastic/errors.html"
        ]
    efile = (
        f"/tmp/torchelastic_{_hex(random.Random(node.name), 8)}/{ctx.spec.job_id}_"
        f"{_hex(random.Random(rank), 6)}/attempt_0/{ctx.local(rank)}/error.json"
        if death.error_file
        else "<N/A>"
    )
    return [
        f"[{idx}]:",
        f"  time      : {when}",
        f"  host      : {node.host}",
        f"  rank      : {rank} (local_rank: {ctx.local(rank)})",
        f"  exitcode  : {death.exitcode} (pid: {pid})",
        f"  error_file: {efile}",
        *tb,
    ]


def agent_report(
    ctx: Ctx, node_idx: int, deaths: dict[int, Death], *, sigterm_at: datetime | None = None
) -> datetime:
    """torchelastic on one node: reports the first failed worker, kills the rest, summarizes."""
    node = ctx.nodes[node_idx]
    ranks = sorted(deaths, key=lambda r: (deaths[r].t, r))
    root = ranks[0]
    t_root = deaths[root].t + timedelta(milliseconds=300 + (root * 37) % 500)
    lines_at: list[tuple[datetime, str]] = []
    if sigterm_at is not None:
        lines_at.append(
            (
                sigterm_at,
                ctx.elog(
                    node,
                    sigterm_at,
                    "W",
                    "agent/server/api.py",
                    704,
                    "Received Signals.SIGTERM death signal, shutting down workers",
                ),
            )
        )
        for r in ctx.ranks_on(node_idx):
            lines_at.append(
                (
                    sigterm_at,
                    ctx.elog(
                        node,
                        sigterm_at,
                        "W",
                        "multiprocessing/api.py",
                        897,
                        f"Sending process {ctx.pid(r)} closing signal SIGTERM",
                    ),
                )
            )
    else:
        lines_at.append(
            (
                t_root,
                ctx.elog(
                    node,
                    t_root,
                    "E",
                    "multiprocessing/api.py",
                    869,
                    f"failed (exitcode: {deaths[root].exitcode}) local_rank: "
                    f"{ctx.local(root)} (pid: {ctx.pid(root)}) of binary: "
                    "/usr/bin/python3",
                ),
            )
        )
        for r in ctx.ranks_on(node_idx):
            if r != root and deaths[r].t > deaths[root].t:
                lines_at.append(
                    (
                        t_root,
                        ctx.elog(
                            node,
                            t_root,
                            "W",
                            "multiprocessing/api.py",
                            897,
                            f"Sending process {ctx.pid(r)} closing signal SIGTERM",
                        ),
                    )
                )
    t_sum = max(d.t for d in deaths.values()) + timedelta(milliseconds=700 + (node_idx * 131) % 600)
    for tt, line in lines_at:
        ctx.agent(node, tt, line)
    if sigterm_at is not None:
        block = traceback_lines(
            ELASTIC_TB[:5]
            + (
                (
                    f"{PY_SITE}/torch/distributed/elastic/multiprocessing/api.py",
                    84,
                    "_terminate_process_handler",
                    'raise SignalException(f"Process {os.getpid()} got signal: {sigval}", '
                    "sigval=sigval)",
                ),
            ),
            [
                "torch.distributed.elastic.multiprocessing.api.SignalException: Process "
                f"{node.agent_pid} "
                "got signal: 15"
            ],
        )
        ctx.agent(node, t_sum, block)
        ctx.node_end[node_idx], ctx.node_exit[node_idx] = t_sum + timedelta(milliseconds=200), 1
        return t_sum
    others = ranks[1:]
    block = traceback_lines(
        ELASTIC_TB,
        [
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "=" * 60,
            f"{'/opt/megatron-lm/pretrain_gpt.py' if ctx.spec.seed % 2 == 0 else 'train.py'} "
            "FAILED",
            "-" * 60,
            "Failures:",
        ],
    )
    if not others:
        block.append("  <NO_OTHER_FAILURES>")
    for i, r in enumerate(others, 1):
        block += _failure_entry(ctx, i, node, r, deaths[r])
    block += [
        "-" * 60,
        "Root Cause (first observed failure):",
        *_failure_entry(ctx, 0, node, root, deaths[root]),
        "=" * 60,
    ]
    ctx.agent(node, t_sum, block)
    ctx.node_end[node_idx], ctx.node_exit[node_idx] = t_sum + timedelta(milliseconds=250), 1
    return t_sum


def _task_ranges(ranks: list[int]) -> str:
    """srun's task list: 'task 5' or 'tasks 8-15,17'."""
    if len(ranks) == 1:
        return f"task {ranks[0]}"
    spans: list[str] = []
    nums = sorted(ranks)
    lo = prev = nums[0]
    for n in [*nums[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        spans.append(str(lo) if lo == prev else f"{lo}-{prev}")
        if n is not None:
            lo = prev = n
    return f"tasks {','.join(spans)}"


def srun_exit_line(ctx: Ctx, node_idx: int, ranks: list[int], exitcode: int) -> str:
    node = ctx.nodes[node_idx]
    if ctx.has_agent:
        task = sorted(n.name for n in ctx.nodes).index(node.name)
        what = "Exited with exit code 1" if exitcode >= 0 else "Terminated"
        return f"srun: error: {node.name}: task {task}: {what}"
    what = {-6: "Aborted (core dumped)", -9: "Out Of Memory", -15: "Terminated"}.get(
        exitcode, f"Exited with exit code {exitcode}"
    )
    return f"srun: error: {node.name}: {_task_ranges(ranks)}: {what}"


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
    cand: dict[int, tuple[datetime, int, list[tuple[datetime, list[str]]]]] = {}
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
    # the scheduler may end it all first
    if deadline is not None:
        for r, (t, _code, _lines) in list(cand.items()):
            if t > deadline:
                cand[r] = (deadline + timedelta(milliseconds=rng.randint(100, 1500)), -15, [])
    # a local agent tears down the siblings of the first worker that dies on its node
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
    deaths: dict[int, Death] = dict(dead)
    for r, (t, code, lines) in cand.items():
        for tt, block in lines:
            ctx.out(r, tt, block, step_us=200)
        deaths[r] = Death(t, code)
    # rank 0 hosted the TCPStore: survivors complain when it goes
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
    # launchers report
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
    srun_report(ctx, deaths, lost)
    return max([t_end, *ctx.node_end.values()]) + timedelta(seconds=rng.uniform(1.0, 3.0))


def srun_report(ctx: Ctx, deaths: dict[int, Death], lost: set[int]) -> None:
    if ctx.spec.platform != "slurm":
        return
    rows: list[tuple[datetime, str]] = []
    for node_idx in range(len(ctx.nodes)):
        if node_idx in lost or node_idx not in ctx.node_end:
            continue
        ranks = sorted(r for r in deaths if ctx.node_idx(r) == node_idx)
        if ctx.has_agent:
            rows.append((ctx.node_end[node_idx], srun_exit_line(ctx, node_idx, ranks, 1)))
            continue
        by_code: dict[int, list[int]] = {}
        for r in ranks:
            by_code.setdefault(deaths[r].exitcode, []).append(r)
        for code, rs in by_code.items():
            rows.append(
                (
                    max(deaths[r].t for r in rs) + timedelta(milliseconds=150),
                    srun_exit_line(ctx, node_idx, rs, code),
                )
            )
    for t, line in sorted(rows):
        ctx.jobout(t, line)
