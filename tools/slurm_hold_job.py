"""`scontrol hold JOB`: keep a pending job from starting. Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.actions.slurm_args import JobId, ScontrolTool, job_reason
from goodput_agent.toolkit import ActionTarget, ToolContext


class JobInput(BaseModel):
    job: JobId


class SlurmHoldJob(ScontrolTool[JobInput]):
    name = "slurm_hold_job"
    input_model = JobInput

    def argv(self, args: JobInput) -> list[str]:
        return ["scontrol", "hold", args.job]

    def target(self, args: JobInput) -> ActionTarget:
        return ActionTarget(job=args.job)

    def reconcile(self, ctx: ToolContext, args: JobInput) -> bool | None:
        reason = job_reason(ctx, args.job)
        return None if reason is None else "JobHeld" in reason


TOOL = SlurmHoldJob()
