"""Return a drained Slurm node to service: `scontrol update NodeName=… State=RESUME`.
Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.approval.runner import ActionOutput, command_line, run_all
from goodput_agent.approval.slurm_args import NodeName
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class ResumeInput(BaseModel):
    node: NodeName


def argv(args: ResumeInput) -> list[str]:
    return ["scontrol", "update", f"NodeName={args.node}", "State=RESUME"]


class SlurmResumeNode(MutatingTool[ResumeInput, ActionOutput]):
    name = "slurm_resume_node"
    input_model = ResumeInput
    output_model = ActionOutput
    requires = ("slurm",)
    timeout_s = 60.0

    def preview(self, ctx: ToolContext, args: ResumeInput) -> ToolPreview:
        return ToolPreview(command=command_line(argv(args)))

    def target(self, args: ResumeInput) -> ActionTarget:
        return ActionTarget(nodes=[args.node])

    def run(self, ctx: ToolContext, args: ResumeInput) -> ActionOutput:
        return run_all(ctx, argv(args))


TOOL = SlurmResumeNode()
