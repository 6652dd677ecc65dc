"""Take a Slurm node out of scheduling with a reason: `scontrol update NodeName=… State=DRAIN`.
Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.approval.slurm_args import NodeName, Reason, ScontrolTool, partitions_of
from goodput_agent.toolkit import ActionTarget, ToolContext


class DrainInput(BaseModel):
    node: NodeName
    reason: Reason


class SlurmDrainNode(ScontrolTool[DrainInput]):
    name = "slurm_drain_node"
    input_model = DrainInput
    notes = ("running jobs finish; no new job starts on the node",)

    def partitions(self, ctx: ToolContext, args: DrainInput):  # noqa: ANN201 - see gate
        return partitions_of(ctx, [args.node])

    def argv(self, args: DrainInput) -> list[str]:
        return ["scontrol", "update", f"NodeName={args.node}", "State=DRAIN",
                f"Reason={args.reason}"]

    def target(self, args: DrainInput) -> ActionTarget:
        return ActionTarget(nodes=[args.node], isolates=True)


TOOL = SlurmDrainNode()
