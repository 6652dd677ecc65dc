"""`scontrol hold JOB`: keep a pending job from starting. Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.approval.slurm_args import JobId, ScontrolTool
from goodput_agent.toolkit import ActionTarget


class JobInput(BaseModel):
    job: JobId


class SlurmHoldJob(ScontrolTool[JobInput]):
    name = "slurm_hold_job"
    input_model = JobInput

    def argv(self, args: JobInput) -> list[str]:
        return ["scontrol", "hold", args.job]

    def target(self, args: JobInput) -> ActionTarget:
        return ActionTarget(job=args.job)


TOOL = SlurmHoldJob()
