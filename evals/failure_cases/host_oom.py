"""Host memory exhausted: cgroup and global OOM killer, Kubernetes OOMKilled."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from goodput_agent.evals.cluster.collateral import collateral
from goodput_agent.evals.cluster.context import Ctx, NodeRT, Outcome
from goodput_agent.evals.cluster.deaths import _t_fail
from goodput_agent.evals.cluster.endings import (
    _culprit,
    _finish_crash,
    k8s_failed,
    post_decoys,
    pre_decoys,
)
from goodput_agent.evals.cluster.formats import _hex
from goodput_agent.evals.cluster.k8s_objects import k8s_event, node_ref
from goodput_agent.evals.cluster.spec import PY_SITE
from goodput_agent.evals.cluster.torchelastic import srun_cancel_lines
from goodput_agent.evals.cluster.training import (
    Death,
    Run,
    progress,
    prologue,
    traceback_lines,
    train_frames,
)
from goodput_agent.evals.failure_cases.recipe import AGENT_LAYOUTS, Recipe


def oom_kill_block(
    ctx: Ctx,
    node: NodeRT,
    *,
    victim_pid: int,
    victim: str,
    invoker: str,
    memcg: str | None,
    rss_gb: float,
) -> list[str]:
    rng = ctx.rng
    rss = int(rss_gb * 1024 * 1024)
    task_cg = memcg or f"/system.slice/slurmstepd.scope/job_{ctx.spec.job_id}/step_0/user/task_0"
    lines = [
        f"{invoker} invoked oom-killer: "
        "gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), "
        "order=0, oom_score_adj=0",
        f"CPU: {rng.randint(0, 191)} PID: {victim_pid + rng.randint(1, 40)} Comm: {invoker} "
        "Tainted: P"
        "           OE      5.15.0-105-generic #115-Ubuntu",
        "Hardware name: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 01/12/2024",
        "Call Trace:",
        " <TASK>",
        " dump_stack_lvl+0x4a/0x63",
        " dump_header+0x4a/0x211",
        " oom_kill_process.cold+0xb/0x10",
        " out_of_memory+0x106/0x2e0",
    ]
    if memcg:
        lines += [
            " mem_cgroup_out_of_memory+0x13f/0x160",
            " try_charge_memcg+0x687/0x740",
            " </TASK>",
            f"memory: usage {rss + 9_000_000}kB, limit {rss + 9_000_000}kB, failcnt "
            f"{rng.randint(10, 900)}",
        ]
        head = (
            f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,"
            f"oom_memcg={memcg},task_memcg={task_cg},task={victim},pid={victim_pid},uid=1001"
        )
        kill = "Memory cgroup out of memory"
    else:
        lines += [
            " __alloc_pages_slowpath.constprop.0+0xd0a/0xe30",
            " __alloc_pages+0x311/0x330",
            " </TASK>",
        ]
        head = (
            f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,"
            f"global_oom,task_memcg={task_cg},task={victim},pid={victim_pid},uid=1001"
        )
        kill = "Out of memory"
    lines += [
        head,
        f"{kill}: Killed process {victim_pid} ({victim}) "
        f"total-vm:{rss + rng.randint(10**7, 9 * 10**7)}kB, "
        f"anon-rss:{rss}kB, file-rss:{rng.randint(10**4, 10**6)}kB, "
        f"shmem-rss:{rng.randint(0, 10**5)}kB, "
        f"UID:1001 pgtables:{rss // 500}kB oom_score_adj:0",
        f"oom_reaper: reaped process {victim_pid} ({victim}), now anon-rss:0kB, file-rss:0kB, "
        "shmem-rss:0kB",
    ]
    return lines


def sc_host_oom(ctx: Ctx) -> Outcome:
    handlers: dict[str, Callable[[Ctx, Run], Outcome]] = {
        "slurm-memcg": _oom_slurm_memcg,
        "dataloader-global-oom": _oom_dataloader_worker,
        "k8s-oomkilled": _oom_k8s_container,
        "k8s-silent-oomkill": _oom_k8s_container,
        "checkpoint-load-oom": _oom_checkpoint_load,
    }
    handler = handlers[ctx.spec.variant]
    pre_decoys(ctx)
    return handler(ctx, prologue(ctx))


def _oom_slurm_memcg(ctx: Ctx, run: Run) -> Outcome:
    """The job's cgroup on one node hits its limit; the kernel kills one rank (SIGKILL)."""
    spec, rng = ctx.spec, ctx.rng
    ni, node, local, rank = _culprit(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    block = oom_kill_block(
        ctx,
        node,
        victim_pid=ctx.pid(rank),
        victim="python",
        invoker="python",
        memcg=f"/system.slice/slurmstepd.scope/job_{spec.job_id}",
        rss_gb=rng.uniform(180, 240),
    )
    ctx.kern_block(node, t_fail, block)
    ctx.jobout(
        t_fail + timedelta(seconds=1),
        f"slurmstepd: error: Detected 1 oom_kill event in StepId={spec.job_id}.0. Some of the "
        "step tasks have been OOM Killed.",
    )
    oc = _finish_crash(ctx, run, t_fail, rank, Death(t_fail + timedelta(milliseconds=40), -9))
    oc.step_state, oc.step_exit = "OUT_OF_MEMORY", "0:125"
    return oc


def _oom_dataloader_worker(ctx: Ctx, run: Run) -> Outcome:
    """The global OOM killer takes a DataLoader worker; its rank raises (a primary of its own)."""
    rng = ctx.rng
    ni, node, local, rank = _culprit(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    wpid = ctx.pid(rank) + rng.randint(300, 900)
    ctx.kern_block(
        node,
        t_fail,
        oom_kill_block(
            ctx,
            node,
            victim_pid=wpid,
            victim="pt_data_worker",
            invoker="pt_data_worker",
            memcg=None,
            rss_gb=rng.uniform(300, 900),
        ),
    )
    dl = f"{PY_SITE}/torch/utils/data/dataloader.py"
    first = traceback_lines(
        [
            (dl, 1243, "_try_get_data", "data = self._data_queue.get(timeout=timeout)"),
            (
                "/usr/lib/python3.10/multiprocessing/queues.py",
                113,
                "get",
                "if not self._poll(timeout):",
            ),
            (
                f"{PY_SITE}/torch/utils/data/_utils/signal_handling.py",
                73,
                "handler",
                "_error_if_any_worker_fails()",
            ),
        ],
        [
            f"RuntimeError: DataLoader worker (pid {wpid}) is killed by signal: Killed. ",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
        ],
    )
    frames = train_frames(ctx, "none") + [
        ("/workspace/llm/trainer.py", 229, "fit", "batch = next(self.train_iter)"),
        (dl, 701, "__next__", "data = self._next_data()"),
        (dl, 1448, "_next_data", "idx, data = self._get_data()"),
        (dl, 1412, "_get_data", "success, data = self._try_get_data()"),
        (
            dl,
            1256,
            "_try_get_data",
            'raise RuntimeError(f"DataLoader worker (pid(s) {pids_str}) exited unexpectedly") '
            "from e",
        ),
    ]
    tb = first + traceback_lines(
        frames, [f"RuntimeError: DataLoader worker (pid(s) {wpid}) exited unexpectedly"]
    )
    t_exc = t_fail + timedelta(seconds=1)
    ctx.out(rank, t_exc, [ctx.tb_prefix(rank) + x for x in tb])
    # memory.events counts every kill inside the step's cgroup, global OOM included
    ctx.jobout(
        t_fail + timedelta(seconds=1.5),
        f"slurmstepd: error: Detected 1 oom_kill event in StepId={ctx.spec.job_id}.0. Some "
        "of the step tasks have been OOM Killed.",
    )
    oc = _finish_crash(ctx, run, t_fail, rank, Death(t_exc + timedelta(milliseconds=600), 1))
    if ctx.spec.platform == "slurm":
        oc.step_state, oc.step_exit = "OUT_OF_MEMORY", "0:125"
    return oc


def _oom_k8s_container(ctx: Ctx, run: Run) -> Outcome:
    """A pod's memory limit: the cgroup OOM killer takes a worker, then the launcher (exit 137)."""
    rng, v = ctx.rng, ctx.spec.variant
    ni, node, local, rank = _culprit(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    pid = ctx.pid(rank)
    cgroup = (
        f"/kubepods.slice/kubepods-pod{_hex(rng, 8)}_{_hex(rng, 4)}.slice/"
        f"cri-containerd-{_hex(rng, 64)}.scope"
    )
    block = oom_kill_block(
        ctx,
        node,
        victim_pid=pid,
        victim="python",
        invoker="python",
        memcg=cgroup,
        rss_gb=rng.uniform(200, 260),
    )
    ctx.kern_block(node, t_fail, block)
    if v == "k8s-oomkilled":
        t = t_fail + timedelta(milliseconds=500)
        ctx.agent(
            node,
            t,
            ctx.elog(
                node,
                t,
                "E",
                "multiprocessing/api.py",
                869,
                f"failed (exitcode: -9) local_rank: {local} (pid: {pid}) of "
                "binary: /usr/bin/python3",
            ),
        )
    t_gone = t_fail + timedelta(milliseconds=rng.randint(700, 1500))
    dead = {r: Death(t_gone, -9) for r in ctx.ranks_on(ni)}
    dead[rank] = Death(t_fail + timedelta(milliseconds=40), -9)
    t_end = collateral(ctx, run, t_fail=t_fail, dead=dead, lost=[ni])  # no summary from it
    ctx.node_end[ni], ctx.node_exit[ni] = t_gone, 137
    post_decoys(ctx, t_fail)
    # without the kernel's record nothing in the bundle says which of the pod's ranks the
    # cgroup killed: the pod's log just stops for all of them
    oc = Outcome(t_end=t_end, exp_rank=None if v == "k8s-silent-oomkill" else "auto")
    oc.pods[ni] = {"exit": 137, "reason": "OOMKilled", "finished": t_gone}
    if v == "k8s-oomkilled":
        killed = next(x for x in block if "Killed process" in x)
        k8s_event(
            ctx,
            oc,
            t_fail + timedelta(seconds=2),
            node_ref(node.name),
            "OOMKilling",
            killed,
            warning=True,
            component="kernel-monitor",
            host=node.name,
        )
    k8s_failed(ctx, oc)
    return oc


def _oom_checkpoint_load(ctx: Ctx, run: Run) -> Outcome:
    """Every rank of one node loads a checkpoint into host RAM; the OOM killer takes two."""
    spec, rng = ctx.spec, ctx.rng
    ni, node, local, rank = _culprit(ctx)
    t_fail = run.t_init + timedelta(seconds=rng.uniform(40, 90))
    for r in range(ctx.world):
        t = run.t_init + timedelta(seconds=2 + r % 5)
        ctx.out(
            r,
            t,
            ctx.pylog(
                r,
                t,
                "INFO",
                "checkpoint",
                f"loading checkpoint /checkpoints/{spec.job_name}/"
                f"step_{run.step0:08d} (map_location=cpu)",
            ),
        )
    killed = [rank, ctx.rank_at(ni, (local + 3) % ctx.gpn)]
    for i, r in enumerate(killed):
        ctx.kern_block(
            node,
            t_fail + timedelta(milliseconds=i * 380),
            oom_kill_block(
                ctx,
                node,
                victim_pid=ctx.pid(r),
                victim="python",
                invoker="python",
                memcg=None,
                rss_gb=rng.uniform(140, 170),
            ),
        )
    ctx.jobout(
        t_fail + timedelta(milliseconds=900),
        f"slurmstepd: error: Detected {len(killed)} oom_kill events in StepId={spec.job_id}.0. "
        "Some of the step tasks have been OOM Killed.",
    )
    dead = {
        r: Death(t_fail + timedelta(milliseconds=i * 380 + 40), -9) for i, r in enumerate(killed)
    }
    kill_at = t_fail + timedelta(seconds=1.2)
    ctx.jobout(kill_at, srun_cancel_lines(ctx, kill_at))
    t_end = collateral(
        ctx, run, t_fail=t_fail, dead=dead, mode="kill", kill_at=kill_at, peermem=False
    )
    post_decoys(ctx, t_fail)
    return Outcome(t_end=t_end, step_state="OUT_OF_MEMORY", step_exit="0:125", exp_rank=None)


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "host_oom",
        "slurm-memcg",
        kill=True,
        culprit="not_master",
        layouts=AGENT_LAYOUTS,
        notes="cgroup OOM killer SIGKILLs rank {rank} on {node}; the rank prints nothing itself: "
        "the kernel "
        "log, slurmstepd's oom_kill line and torchelastic's exitcode -9 carry it; step "
        "OUT_OF_MEMORY",
    ),
    Recipe(
        "host_oom",
        "k8s-oomkilled",
        platform="k8s",
        misleading=True,
        notes="container memory limit: kernel memcg OOM on {node}, pod OOMKilled exit 137, no "
        "torchelastic "
        "summary from it; the other pods print watchdog timeouts",
    ),
    Recipe(
        "host_oom",
        "dataloader-global-oom",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="global OOM killer kills a DataLoader worker (pt_data_worker) on {node}; rank "
        "{rank} raises "
        "'DataLoader worker ... is killed by signal: Killed'; victims louder",
    ),
    Recipe(
        "host_oom",
        "k8s-silent-oomkill",
        platform="k8s",
        misleading=True,
        culprit_kernel=None,
        notes="pod on {node} OOMKilled (exit 137) with no kernel log and a pod log that just "
        "stops; only "
        "pods.json says OOMKilled",
    ),
    Recipe(
        "host_oom",
        "checkpoint-load-oom",
        layouts=("srun_per_rank",),
        extras=("no_frames",),
        notes="all ranks of {node} load a checkpoint into host RAM; the OOM killer kills two of "
        "them "
        "(srun 'Out Of Memory'); a node-level problem, so no single rank",
    ),
)
