"""Each rank's own account: exceptions, CUDA OOMs, NCCL errors and timeouts, torchelastic
error files and Flight Recorder dumps, with the rank-to-host map they reveal."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from goodput_agent.analysis.failure.observations import BUNDLE_FACTS
from goodput_agent.bundle import Inventory
from goodput_agent.core.events import Event
from goodput_agent.kinds import asked_instead_of_failure
from goodput_agent.parsing.base import ParseContext, ParseError
from goodput_agent.parsing.failure_words import FREE_TEXT_FORMATS
from goodput_agent.parsing.registry import (
    DECISIVE_SCANNED,
    FAILURE_FORMATS,
    JOB_LOG_FORMATS,
    METRICS_FORMATS,
    decisive_lines,
)
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
            _scan_other_formats(inv, out, args)
            out.facts[BUNDLE_FACTS] = {
                "bundle_files": len(inv.files) + len(inv.unread),
                "bundle_unread": sorted(u.path for u in inv.unread),
                # how many files' lines were scanned for a failure's words, and the files no
                # failure tool reads (a serving log, a trace): an `unknown` weighs both
                "free_text_files": sum(f.format in FREE_TEXT_FORMATS | DECISIVE_SCANNED
                                       for f in inv.files),
                "not_read_for_failure": sorted(
                    f.rel_path for f in inv.files if f.format not in
                    FAILURE_FORMATS | METRICS_FORMATS | DECISIVE_SCANNED)[:5],
                # metrics files: the failure question reads them by their numbers, as events;
                # a question that does not read them has not read every file
                "metrics_files": sorted(f.rel_path for f in inv.files
                                        if f.format in METRICS_FORMATS)[:5],
                # the question asks about another kind: the failure report stands in for it
                "other_questions": asked_instead_of_failure(inv.incident)}
        return out


def _scan_other_formats(inv: Inventory, out: EventsOutput, args: JobLogInput) -> None:
    """The decisive lines of the files no failure tool reads (registry.DECISIVE_SCANNED)."""
    for f in inv.of_format(*DECISIVE_SCANNED):
        pctx = ParseContext(rel_path=f.rel_path, node_hint=f.node_hint, rank_hint=f.rank_hint,
                            clock=inv.clock)
        try:
            res = decisive_lines(Path(inv.root) / f.rel_path, pctx)
        except (OSError, ParseError) as exc:
            out.warnings.append(f"{f.rel_path}: not scanned for a failure: {exc}")
            continue
        out.files_read.append(f.rel_path)
        out.events.extend(e for e in res.events if (args.node is None or e.node == args.node)
                          and (args.rank is None or e.rank == args.rank))
        out.facts.setdefault(f.rel_path, {}).update(res.facts)
    out.events.sort(key=Event.sort_key)


TOOL = JobLogEventsTool()
