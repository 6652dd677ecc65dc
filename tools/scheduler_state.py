"""Job, step and node states from the scheduler's own outputs (Slurm, Kubernetes)."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.parsing.registry import SCHEDULER_FORMATS
from goodput_agent.toolkit import EventsOutput, Tool, ToolContext, read_events


class SchedulerInput(BaseModel):
    node: str | None = None


class SchedulerStateTool(Tool[SchedulerInput, EventsOutput]):
    name = "scheduler_state"
    input_model = SchedulerInput
    output_model = EventsOutput

    def run(self, ctx: ToolContext, args: SchedulerInput) -> EventsOutput:
        return read_events(ctx, SCHEDULER_FORMATS, node=args.node)


TOOL = SchedulerStateTool()
