"""When each log starts and stops: the last sign of life of every rank and node.

A node that is lost, or a rank that hangs, shows up as a log that stops early; this tool reads
only the head and tail of each file, so it costs the same for a 10 MB and a 10 GB log
(a compressed log is read through once: its end cannot be reached otherwise).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.parsing.lines import read_head, read_tail
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any
from goodput_agent.toolkit import Tool, ToolContext, ToolUnavailable

TAIL_BYTES = 64 * 1024


class ActivityInput(BaseModel):
    pass


class FileActivity(BaseModel):
    path: str
    format: str
    node: str | None
    rank: int | None
    first: datetime | None
    last: datetime | None


class ActivityOutput(BaseModel):
    files: list[FileActivity] = Field(default_factory=list)


def _first_time(lines: list[str], policy: ClockPolicy) -> datetime | None:
    for line in lines:
        hit = parse_any(line, policy)
        if hit:
            return hit[0]
    return None


def _edges(path: Path, policy: ClockPolicy) -> tuple[datetime | None, datetime | None]:
    head = read_head(path, TAIL_BYTES).decode("utf-8", errors="replace").splitlines()
    raw, cut = read_tail(path, TAIL_BYTES)
    tail = raw.decode("utf-8", errors="replace").splitlines()
    if cut and tail:
        tail = tail[1:]  # the first tail line may be cut
    return _first_time(head, policy), _first_time(list(reversed(tail)), policy)


class LogActivityTool(Tool[ActivityInput, ActivityOutput]):
    name = "log_activity"
    input_model = ActivityInput
    output_model = ActivityOutput

    def run(self, ctx: ToolContext, args: ActivityInput) -> ActivityOutput:
        if ctx.bundle is None:
            raise ToolUnavailable("no incident bundle is open")
        out = ActivityOutput()
        policy = ctx.bundle.inventory.clock
        for f in ctx.bundle.inventory.of_format("job_log", "kernel_log"):
            first, last = _edges(ctx.bundle.root / f.rel_path, policy)
            out.files.append(FileActivity(path=f.rel_path, format=f.format or "", node=f.node_hint,
                                          rank=f.rank_hint, first=first, last=last))
        return out


TOOL = LogActivityTool()
