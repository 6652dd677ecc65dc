"""The job reaches its time limit: Slurm cancels it, the ranks die of SIGTERM."""

from __future__ import annotations

from goodput_agent.evals.cluster.context import Ctx, Outcome
from goodput_agent.evals.cluster.endings import _cancel
from goodput_agent.evals.failure_cases.recipe import Recipe


def sc_time_limit(ctx: Ctx) -> Outcome:
    return _cancel(ctx, "TIME LIMIT")


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "time_limit",
        "sigterm-collateral",
        misleading=True,
        decoys=("noisy_shutdown",),
        extras=("scontrol_job",),
        notes="TIMEOUT: slurmstepd cancels at the limit; the NCCL 'Connection reset by peer' "
        "errors during "
        "shutdown are consequences of the SIGTERM",
    ),
    Recipe(
        "time_limit",
        "xid45-after-kill",
        misleading=True,
        decoys=("xid45",),
        notes="TIMEOUT; Xid 45 (preemptive cleanup) appears after the SIGTERM killed processes "
        "with work "
        "in flight: a consequence, not a GPU fault",
    ),
    Recipe(
        "time_limit",
        "sacct-json",
        sched="sacct_json",
        notes="TIMEOUT in sacct --json; training was healthy up to the limit",
    ),
    Recipe(
        "time_limit",
        "scontrol-runtime",
        extras=("scontrol_job",),
        notes="TIMEOUT; scontrol show job RunTime reaches TimeLimit",
    ),
)
