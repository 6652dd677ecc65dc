"""`scontrol release JOB`: let a held job be scheduled again.
Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.approval.runner import ActionOutput, command_line, run_all
from goodput_agent.approval.slurm_args import JobId
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class JobInput(BaseModel):
    job: JobId


class SlurmReleaseJob(MutatingTool[JobInput, ActionOutput]):
    name = "slurm_release_job"
    input_model = JobInput
    output_model = ActionOutput
    requires = ("slurm",)
    timeout_s = 60.0

    def preview(self, ctx: ToolContext, args: JobInput) -> ToolPreview:
        return ToolPreview(command=command_line(["scontrol", "release", args.job]))

    def target(self, args: JobInput) -> ActionTarget:
        return ActionTarget(job=args.job)

    def run(self, ctx: ToolContext, args: JobInput) -> ActionOutput:
        return run_all(ctx, ["scontrol", "release", args.job])


TOOL = SlurmReleaseJob()
