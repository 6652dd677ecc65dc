"""GPU Xids, OOM kills, NIC link faults and panics from each node's kernel log."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.toolkit import EventsOutput, Tool, ToolContext, read_events


class KernelLogInput(BaseModel):
    node: str | None = None


class KernelLogEventsTool(Tool[KernelLogInput, EventsOutput]):
    name = "kernel_log_events"
    input_model = KernelLogInput
    output_model = EventsOutput

    def run(self, ctx: ToolContext, args: KernelLogInput) -> EventsOutput:
        return read_events(ctx, ("kernel_log",), node=args.node)


TOOL = KernelLogEventsTool()
