"""The Slurm records of a case: sacct (text or JSON), scontrol show job/node, sinfo -R."""

from __future__ import annotations

from datetime import datetime, timedelta

from goodput_agent.evals.cluster.context import Ctx, Outcome, _sizes, _slurm_time
from goodput_agent.evals.cluster.formats import _elapsed, compress_hostlist
from goodput_agent.evals.cluster.slurm_sacct_json import write_sacct_json
from goodput_agent.evals.cluster.slurm_sacct_text import write_sacct_txt


def write_scontrol_job(ctx: Ctx, oc: Outcome) -> None:
    spec = ctx.spec
    n = len(ctx.nodes)
    cpn, mem = _sizes(ctx)
    names = sorted(node.name for node in ctx.nodes)
    st = lambda t: _slurm_time(ctx, t)  # noqa: E731
    state, reason, restarts = oc.job_state, oc.reason, 0
    if spec.variant == "requeued":
        state, reason, restarts = "PENDING", "BeginTime", 1
    tl = ctx.time_limit
    tl_txt = (
        _elapsed(tl.total_seconds())
        if tl < timedelta(days=1)
        else f"{tl.days}-{_elapsed(tl.total_seconds() % 86400)}"
    )
    tres = f"cpu={cpn * n},mem={mem * n}G,node={n},billing={cpn * n},gres/gpu={ctx.gpn * n}"
    lines = [
        f"JobId={spec.job_id} JobName={spec.job_name}",
        f"   UserId={spec.user}(1001) GroupId={spec.user}(1001) MCS_label=N/A",
        "   Priority=11207 Nice=0 Account=ml-research QOS=normal",
        f"   JobState={state} Reason={reason} Dependency=(null)",
        f"   Requeue=1 Restarts={restarts} BatchFlag=1 Reboot=0 ExitCode={oc.job_exit}",
        f"   RunTime={_elapsed((oc.t_end - spec.start).total_seconds())} TimeLimit={tl_txt} "
        "TimeMin=N/A",
        f"   SubmitTime={st(spec.start - timedelta(seconds=95))} "
        f"EligibleTime={st(spec.start - timedelta(seconds=95))}",
        f"   AccrueTime={st(spec.start - timedelta(seconds=95))}",
        f"   StartTime={st(spec.start)} EndTime={st(oc.t_end)} Deadline=N/A",
        f"   SuspendTime=None SecsPreSuspend=0 LastSchedEval={st(spec.start)} Scheduler=Main",
        f"   Partition={spec.partition} AllocNode:Sid=login-01:2212",
        "   ReqNodeList=(null) ExcNodeList=(null)",
        f"   NodeList={compress_hostlist(names)}",
        f"   BatchHost={names[0]}",
        f"   NumNodes={n} NumCPUs={cpn * n} NumTasks={n} CPUs/Task={cpn} ReqB:S:C:T=0:0:*:*",
        f"   ReqTRES={tres}",
        f"   AllocTRES={tres}",
        "   Socks/Node=* NtasksPerN:B:S:C=1:0:*:* CoreSpec=*",
        f"   MinCPUsNode={cpn} MinMemoryNode={mem}G MinTmpDiskNode=0",
        "   Features=h100 DelayBoot=00:00:00",
        "   OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null)",
        f"   Command=/home/{spec.user}/jobs/pretrain.sbatch",
        f"   WorkDir=/home/{spec.user}/jobs",
        f"   StdErr=/home/{spec.user}/jobs/logs/slurm-{spec.job_id}.out",
        "   StdIn=/dev/null",
        f"   StdOut=/home/{spec.user}/jobs/logs/slurm-{spec.job_id}.out",
        f"   TresPerNode=gres/gpu:{ctx.gpn}",
    ]
    ctx.sink("slurm/scontrol_job.txt").raw = "\n".join(lines) + "\n\n"


def write_sinfo(ctx: Ctx, oc: Outcome) -> None:
    rows = ["REASON               USER      TIMESTAMP           NODELIST"]
    for reason, user, t, node in sorted(oc.sinfo, key=lambda x: x[2]):
        rows.append(f"{reason:<20} {user:<9} {_slurm_time(ctx, t)} {node}")
    ctx.sink("slurm/sinfo_R.txt").raw = "\n".join(rows) + "\n"


def write_scontrol_node(ctx: Ctx, name: str, state: str, reason: str, t: datetime) -> None:
    node = next(x for x in ctx.nodes if x.name == name)
    cpn, mem = _sizes(ctx)
    lines = [
        f"NodeName={name} Arch=x86_64 CoresPerSocket={cpn // 4}",
        f"   CPUAlloc=0 CPUEfctv={cpn} CPUTot={cpn} CPULoad=N/A",
        "   AvailableFeatures=h100,ib",
        "   ActiveFeatures=h100,ib",
        f"   Gres=gpu:h100:{ctx.gpn}(S:0-1)",
        f"   NodeAddr={name} NodeHostName={name} Version=23.11.4",
        "   OS=Linux 5.15.0-105-generic #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024",
        f"   RealMemory={mem * 1024} AllocMem=0 FreeMem=N/A Sockets=2 Boards=1",
        f"   State={state} ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
        f"   Partitions={ctx.spec.partition}",
        f"   BootTime={_slurm_time(ctx, node.boot)} "
        f"SlurmdStartTime={_slurm_time(ctx, node.boot + timedelta(seconds=95))}",
        f"   LastBusyTime={_slurm_time(ctx, t)} ResumeAfterTime=None",
        f"   CfgTRES=cpu={cpn},mem={mem * 1024}M,billing={cpn},gres/gpu={ctx.gpn}",
        "   AllocTRES=",
        "   CapWatts=n/a",
        "   CurrentWatts=0 AveWatts=0",
        "   ExtSensorsJoules=n/a ExtSensorsWatts=0 ExtSensorsTemp=n/a",
        f"   Reason={reason} [slurm@{_slurm_time(ctx, t)}]",
    ]
    ctx.sink(f"slurm/scontrol_node_{name}.txt").raw = "\n".join(lines) + "\n\n"


def write_slurm(ctx: Ctx, oc: Outcome) -> None:
    if ctx.spec.sched == "sacct_json":
        write_sacct_json(ctx, oc)
    else:
        write_sacct_txt(ctx, oc)
    if "scontrol_job" in ctx.spec.extras:
        write_scontrol_job(ctx, oc)
    if oc.sinfo or "sinfo_R" in ctx.spec.extras:
        write_sinfo(ctx, oc)
    for name, (state, reason, t) in oc.node_state.items():
        write_scontrol_node(ctx, name, state, reason, t)
