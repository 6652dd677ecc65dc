"""Each rank's own account: exceptions, CUDA OOMs, NCCL errors and timeouts, torchelastic
error files and Flight Recorder dumps, with the rank-to-host map they reveal."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.analysis.failure.observations import BUNDLE_FACTS
from goodput_agent.parsing.failure_words import FREE_TEXT_FORMATS
from goodput_agent.parsing.registry import FAILURE_FORMATS, JOB_LOG_FORMATS, METRICS_FORMATS
from goodput_agent.toolkit import EventsOutput, Tool, ToolContext, read_events


class JobLogInput(BaseModel):
    rank: int | None = None
    node: str | None = None


class JobLogEventsTool(Tool[JobLogInput, EventsOutput]):
    name = "job_log_events"
    input_model = JobLogInput
    output_model = EventsOutput

    def run(self, ctx: ToolContext, args: JobLogInput) -> EventsOutput:
        out = read_events(ctx, JOB_LOG_FORMATS, node=args.node, rank=args.rank)
        inv = ctx.bundle.inventory if ctx.bundle else None
        if inv is not None:  # how much of the bundle could be read at all (analysis weighs it)
            out.facts[BUNDLE_FACTS] = {
                "bundle_files": len(inv.files) + len(inv.unread),
                "bundle_unread": sorted(u.path for u in inv.unread),
                # how many files' lines were scanned for a failure's words, and the files no
                # failure tool reads (a serving log, a trace): an `unknown` weighs both
                "free_text_files": sum(f.format in FREE_TEXT_FORMATS for f in inv.files),
                "not_read_for_failure": sorted(f.rel_path for f in inv.files if f.format
                                               not in FAILURE_FORMATS | METRICS_FORMATS)[:5]}
        return out


TOOL = JobLogEventsTool()
