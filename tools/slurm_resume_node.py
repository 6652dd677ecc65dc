"""Return a drained Slurm node to service: `scontrol update NodeName=… State=RESUME`.
Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.approval.slurm_args import NodeName, ScontrolTool
from goodput_agent.toolkit import ActionTarget


class ResumeInput(BaseModel):
    node: NodeName


class SlurmResumeNode(ScontrolTool[ResumeInput]):
    name = "slurm_resume_node"
    input_model = ResumeInput

    def argv(self, args: ResumeInput) -> list[str]:
        return ["scontrol", "update", f"NodeName={args.node}", "State=RESUME"]

    def target(self, args: ResumeInput) -> ActionTarget:
        return ActionTarget(nodes=[args.node])


TOOL = SlurmResumeNode()
