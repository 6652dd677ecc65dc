"""GPU health from metrics files in the bundle: DCGM exporter's Xid gauge, per GPU and node."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.parsing.registry import METRICS_FORMATS
from goodput_agent.toolkit import EventsOutput, Tool, ToolContext, read_events


class GpuMetricsInput(BaseModel):
    node: str | None = None


class GpuMetricsEventsTool(Tool[GpuMetricsInput, EventsOutput]):
    name = "gpu_metrics_events"
    input_model = GpuMetricsInput
    output_model = EventsOutput

    def run(self, ctx: ToolContext, args: GpuMetricsInput) -> EventsOutput:
        return read_events(ctx, METRICS_FORMATS, node=args.node)


TOOL = GpuMetricsEventsTool()
