"""`scontrol release JOB`: let a held job be scheduled again.
Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.actions.slurm_args import JobId, ScontrolTool, job_reason
from goodput_agent.toolkit import ActionTarget, ToolContext


class JobInput(BaseModel):
    job: JobId


class SlurmReleaseJob(ScontrolTool[JobInput]):
    name = "slurm_release_job"
    input_model = JobInput

    def argv(self, args: JobInput) -> list[str]:
        return ["scontrol", "release", args.job]

    def target(self, args: JobInput) -> ActionTarget:
        return ActionTarget(job=args.job)

    def reconcile(self, ctx: ToolContext, args: JobInput) -> bool | None:
        reason = job_reason(ctx, args.job)
        return None if reason is None else "JobHeld" not in reason


TOOL = SlurmReleaseJob()
