"""How the other ranks die once one has: torchelastic's failure summary, srun's exit lines,
the collateral watchdog timeouts and SIGTERMs."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from goodput_agent.evals.cluster.context import Ctx, NodeRT, _slurm_time
from goodput_agent.evals.cluster.formats import _hex
from goodput_agent.evals.cluster.spec import PY_SITE
from goodput_agent.evals.cluster.training import SIGNALS, Death, traceback_lines

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


def _agent_sigterm_lines(
    ctx: Ctx,
    lines_at: list[tuple[datetime, str]],
    sigterm_at: datetime,
    node: NodeRT,
    node_idx: int,
) -> None:
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


def _agent_failure_lines(
    ctx: Ctx,
    lines_at: list[tuple[datetime, str]],
    t_root: datetime,
    node: NodeRT,
    root: int,
    deaths: dict[int, Death],
    node_idx: int,
) -> None:
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


def _agent_sigterm_summary(ctx: Ctx, node: NodeRT, t_sum: datetime, node_idx: int) -> datetime:
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
        _agent_sigterm_lines(ctx, lines_at, sigterm_at, node, node_idx)
    else:
        _agent_failure_lines(ctx, lines_at, t_root, node, root, deaths, node_idx)
    t_sum = max(d.t for d in deaths.values()) + timedelta(milliseconds=700 + (node_idx * 131) % 600)
    for tt, line in lines_at:
        ctx.agent(node, tt, line)
    if sigterm_at is not None:
        return _agent_sigterm_summary(ctx, node, t_sum, node_idx)
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


def srun_cancel_lines(ctx: Ctx, kill_at: datetime) -> list[str]:
    """srun and slurmstepd when the step is cancelled at `kill_at` (srun --kill-on-bad-exit)."""
    batch = sorted(n.name for n in ctx.nodes)[0]
    return [
        f"srun: Terminating StepId={ctx.spec.job_id}.0",
        f"slurmstepd: error: *** STEP {ctx.spec.job_id}.0 ON {batch} CANCELLED AT "
        f"{_slurm_time(ctx, kill_at)} ***",
    ]


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
