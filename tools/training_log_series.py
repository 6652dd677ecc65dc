"""A training log's own per-iteration series and Megatron's timers, for a slowdown question
whose bundle has no profiler trace: the slowdown verdict they support (at most 0.6, saying a
trace would confirm it). With a trace in the bundle it reads nothing: the traces answer."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.analysis.slowdown.from_logs import LogPoint, LogSeries, TimerBlock, log_verdict
from goodput_agent.analysis.slowdown.model import SlowdownVerdict
from goodput_agent.parsing.job_log.state import line_excerpt
from goodput_agent.parsing.lines import iter_lines
from goodput_agent.parsing.registry import JOB_LOG_FORMATS
from goodput_agent.toolkit import Tool, ToolContext, ToolUnavailable


class LogSeriesInput(BaseModel):
    pass


class LogSeriesOutput(BaseModel):
    files_read: list[str] = Field(default_factory=list)
    points: int = 0
    timer_blocks: int = 0
    verdict: SlowdownVerdict | None = None
    skipped: str | None = None  # why nothing was read

    def summary(self) -> dict[str, object]:
        return {"points": self.points, "timer_blocks": self.timer_blocks,
                "verdict": self.verdict.category if self.verdict else None}


class TrainingLogSeriesTool(Tool[LogSeriesInput, LogSeriesOutput]):
    name = "training_log_series"
    input_model = LogSeriesInput
    output_model = LogSeriesOutput

    def run(self, ctx: ToolContext, args: LogSeriesInput) -> LogSeriesOutput:
        if ctx.bundle is None:
            raise ToolUnavailable("no incident bundle is open")
        inv = ctx.bundle.inventory
        if inv.of_format("kineto_trace"):
            return LogSeriesOutput(skipped="the bundle has profiler traces: they answer")
        out = LogSeriesOutput()
        series = LogSeries(unread_files=len(inv.unread))
        for f, result in ctx.bundle.parse_many(inv.of_format(*JOB_LOG_FORMATS), ctx.progress):
            out.files_read.append(f.rel_path)
            for r, h in result.rank_hosts.items():
                series.rank_hosts.setdefault(r, h)
            for step, ms, rank, *line in result.facts.get("iterations") or []:
                series.points.append(LogPoint(int(step), float(ms), rank, f.rel_path,
                                              int(line[0]) if line else 0))
            for step, name, ms, rank, line in result.facts.get("iteration_parts") or []:
                series.parts.setdefault(name, []).append(
                    LogPoint(int(step), float(ms), rank, f.rel_path, int(line)))
            series.timers += [TimerBlock(f.rel_path, b["line"], b["times"], b.get("lines", {}))
                              for b in result.facts.get("timers") or []]
        out.points, out.timer_blocks = len(series.points), len(series.timers)
        if not series.points and not series.timers:
            return out
        root = ctx.bundle.root
        out.verdict = log_verdict(series, lambda path, n: _line(root / path, n))
        return out


def _line(path: Path, n: int) -> str:
    """Line n (1-based) of the file, as an evidence excerpt; "" when it has none."""
    if n <= 0:
        return ""
    for i, text in iter_lines(path):
        if i == n:
            return line_excerpt(text)
        if i > n:
            break
    return ""


TOOL = TrainingLogSeriesTool()
