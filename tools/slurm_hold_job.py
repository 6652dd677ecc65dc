"""`scontrol hold JOB`: keep a pending job from starting. Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.approval.runner import ActionOutput, command_line, run_all
from goodput_agent.approval.slurm_args import JobId
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class JobInput(BaseModel):
    job: JobId


class SlurmHoldJob(MutatingTool[JobInput, ActionOutput]):
    name = "slurm_hold_job"
    input_model = JobInput
    output_model = ActionOutput
    requires = ("slurm",)
    timeout_s = 60.0

    def preview(self, ctx: ToolContext, args: JobInput) -> ToolPreview:
        return ToolPreview(command=command_line(["scontrol", "hold", args.job]))

    def target(self, args: JobInput) -> ActionTarget:
        return ActionTarget(job=args.job)

    def run(self, ctx: ToolContext, args: JobInput) -> ActionOutput:
        return run_all(ctx, ["scontrol", "hold", args.job])


TOOL = SlurmHoldJob()
