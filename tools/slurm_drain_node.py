"""Take a Slurm node out of scheduling with a reason: `scontrol update NodeName=… State=DRAIN`.
Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.approval.runner import ActionOutput, command_line, run_all
from goodput_agent.approval.slurm_args import NodeName, Reason, partitions_of
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class DrainInput(BaseModel):
    node: NodeName
    reason: Reason


def argv(args: DrainInput) -> list[str]:
    return ["scontrol", "update", f"NodeName={args.node}", "State=DRAIN",
            f"Reason={args.reason}"]


class SlurmDrainNode(MutatingTool[DrainInput, ActionOutput]):
    name = "slurm_drain_node"
    input_model = DrainInput
    output_model = ActionOutput
    requires = ("slurm",)
    timeout_s = 60.0

    def preview(self, ctx: ToolContext, args: DrainInput) -> ToolPreview:
        return ToolPreview(command=command_line(argv(args)),
                           notes=["running jobs finish; no new job starts on the node"])

    def target(self, args: DrainInput) -> ActionTarget:
        return ActionTarget(nodes=[args.node], isolates=True)

    def partitions(self, ctx: ToolContext, args: DrainInput):  # noqa: ANN201 - see gate
        return partitions_of(ctx, [args.node])

    def run(self, ctx: ToolContext, args: DrainInput) -> ActionOutput:
        return run_all(ctx, argv(args))


TOOL = SlurmDrainNode()
