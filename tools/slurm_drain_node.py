"""Take Slurm nodes out of scheduling with a reason: `scontrol update NodeName=… State=DRAIN`.
A host list is expanded before any check, and the command names every host it drains.
Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.actions.slurm_args import (
    NodeName,
    Reason,
    ScontrolTool,
    hosts,
    node_states,
    partitions_of,
    slurm_hostnames,
)
from goodput_agent.toolkit import ActionTarget, ToolContext


class DrainInput(BaseModel):
    node: NodeName
    reason: Reason


class SlurmDrainNode(ScontrolTool[DrainInput]):
    name = "slurm_drain_node"
    input_model = DrainInput
    notes = ("running jobs finish; no new job starts on the node",)

    def partitions(self, ctx: ToolContext, args: DrainInput):  # noqa: ANN201 - see gate
        return partitions_of(ctx, hosts(args.node))

    def argv(self, args: DrainInput) -> list[str]:
        return ["scontrol", "update", f"NodeName={','.join(hosts(args.node))}", "State=DRAIN",
                f"Reason={args.reason}"]

    def target(self, args: DrainInput) -> ActionTarget:
        return ActionTarget(nodes=hosts(args.node), isolates=True)

    def live_check(self, ctx: ToolContext, args: DrainInput) -> list[str]:
        return slurm_hostnames(ctx, [args.node])

    def reconcile(self, ctx: ToolContext, args: DrainInput) -> bool | None:
        states = node_states(ctx, hosts(args.node))
        return None if states is None else all(s.startswith("drain") or s.startswith("drng")
                                                for s in states.values())


TOOL = SlurmDrainNode()
