"""Return drained Slurm nodes to service: `scontrol update NodeName=… State=RESUME`.
Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.actions.slurm_args import (
    NodeName,
    ScontrolTool,
    hosts,
    node_states,
    slurm_hostnames,
)
from goodput_agent.toolkit import ActionTarget, ToolContext


class ResumeInput(BaseModel):
    node: NodeName


class SlurmResumeNode(ScontrolTool[ResumeInput]):
    name = "slurm_resume_node"
    input_model = ResumeInput

    def argv(self, args: ResumeInput) -> list[str]:
        return ["scontrol", "update", f"NodeName={','.join(hosts(args.node))}", "State=RESUME"]

    def target(self, args: ResumeInput) -> ActionTarget:
        return ActionTarget(nodes=hosts(args.node))

    def live_check(self, ctx: ToolContext, args: ResumeInput) -> list[str]:
        return slurm_hostnames(ctx, [args.node])

    def reconcile(self, ctx: ToolContext, args: ResumeInput) -> bool | None:
        states = node_states(ctx, hosts(args.node))
        return None if states is None else not any(
            s.startswith(("drain", "drng")) for s in states.values())


TOOL = SlurmResumeNode()
