"""`sacct -P` text as Slurm prints it for the job, its batch step and its srun step."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from goodput_agent.evals.cluster.context import Ctx, Outcome, _sizes, _slurm_time
from goodput_agent.evals.cluster.formats import _elapsed, compress_hostlist


def _sacct_rows(ctx: Ctx, oc: Outcome) -> list[dict[str, Any]]:
    """The job, its batch, extern and srun step, in sacct's order."""
    spec = ctx.spec
    n = len(ctx.nodes)
    cpn, mem = _sizes(ctx)
    names = sorted(node.name for node in ctx.nodes)
    allnodes = compress_hostlist(names)
    t0, t_step = spec.start, spec.start + timedelta(seconds=2)
    step_name = "torchrun" if ctx.has_agent else "python"
    tres_all = f"cpu={cpn * n},gres/gpu={ctx.gpn * n},mem={mem * n}G,node={n}"
    rows = [
        dict(
            JobID=spec.job_id,
            JobName=spec.job_name,
            Partition=spec.partition,
            Account="ml-research",
            AllocTRES=f"billing={cpn * n},{tres_all}",
            State=oc.job_state,
            ExitCode=oc.job_exit,
            DerivedExitCode=oc.job_exit if oc.job_state == "FAILED" else "0:0",
            start=t0,
            end=oc.t_end,
            NodeList=allnodes,
            User=spec.user,
            NNodes=str(n),
            Reason="None",
        ),
        dict(
            JobID=f"{spec.job_id}.batch",
            JobName="batch",
            Partition="",
            Account="ml-research",
            AllocTRES=f"cpu={cpn},gres/gpu={ctx.gpn},mem={mem}G,node=1",
            State=oc.batch_state,
            ExitCode=oc.batch_exit,
            DerivedExitCode="",
            start=t0,
            end=oc.t_end,
            NodeList=names[0],
            User="",
            NNodes="1",
            Reason="",
        ),
        dict(
            JobID=f"{spec.job_id}.extern",
            JobName="extern",
            Partition="",
            Account="ml-research",
            AllocTRES=tres_all,
            State="COMPLETED",
            ExitCode="0:0",
            DerivedExitCode="",
            start=t0,
            end=oc.t_end + timedelta(seconds=1),
            NodeList=allnodes,
            User="",
            NNodes=str(n),
            Reason="",
        ),
        dict(
            JobID=f"{spec.job_id}.0",
            JobName=step_name,
            Partition="",
            Account="ml-research",
            AllocTRES=tres_all,
            State=oc.step_state,
            ExitCode=oc.step_exit,
            DerivedExitCode="",
            start=t_step,
            end=oc.t_end,
            NodeList=allnodes,
            User="",
            NNodes=str(n),
            Reason="",
        ),
    ]
    return rows


def _pending_row(ctx: Ctx) -> dict[str, Any]:
    """The requeued job's pending record, waiting for its begin time."""
    spec = ctx.spec
    n = len(ctx.nodes)
    return dict(
        JobID=spec.job_id,
        JobName=spec.job_name,
        Partition=spec.partition,
        Account="ml-research",
        AllocTRES="",
        State="PENDING",
        ExitCode="0:0",
        DerivedExitCode="0:0",
        start=None,
        end=None,
        NodeList="None assigned",
        User=spec.user,
        NNodes=str(n),
        Reason="BeginTime",
    )


def _sacct_values(ctx: Ctx, row: dict[str, Any]) -> list[str]:
    """One row's values in the case's sacct columns."""
    vals = []
    for col in ctx.spec.sacct_columns:
        if col in ("Start", "End"):
            t = row["start" if col == "Start" else "end"]
            vals.append(_slurm_time(ctx, t) if t else "Unknown")
        elif col == "Elapsed":
            vals.append(
                _elapsed((row["end"] - row["start"]).total_seconds())
                if row["start"] and row["end"]
                else "00:00:00"
            )
        elif col == "JobIDRaw":
            vals.append(row["JobID"])
        else:
            vals.append(str(row[col]))
    return vals


def write_sacct_txt(ctx: Ctx, oc: Outcome) -> None:
    spec = ctx.spec
    rows = _sacct_rows(ctx, oc)
    if spec.variant == "requeued":
        rows.append(_pending_row(ctx))
    out = ["|".join(spec.sacct_columns)]
    for row in rows:
        out.append("|".join(_sacct_values(ctx, row)))
    ctx.sink("slurm/sacct.txt").raw = "\n".join(out) + "\n"
