"""When each log starts and stops: the last sign of life of every rank and node.

A node that is lost, or a rank that hangs, shows up as a log that stops early; this tool reads
only the head and tail of each file, so it costs the same for a 10 MB and a 10 GB log. In a job
log it also finds the last line that shows training progress (a step, an iteration, a loss):
the job was still working then, whatever happened before it. A compressed log is read through
once: its end cannot be reached otherwise.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.parsing.lines import read_head, read_tail
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any
from goodput_agent.toolkit import Tool, ToolContext, ToolUnavailable

TAIL_BYTES = 64 * 1024
EDGE_BYTES = 4 * 1024  # read first for a log's first and last time
PROGRESS_SCAN_BYTES = 1024 * 1024  # how far back from the end to look for a progress line
PROGRESS = re.compile(r"\b(?:global[_ ]step|step|iter(?:ation)?|epoch)\b\s*[:=#]?\s*(\d+)"
                      r"|\bloss\b\s*[:=]?\s*-?\d", re.IGNORECASE)
NOT_PROGRESS = re.compile(r"error|exception|traceback|timed? ?out|fail|fatal|abort|kill|signal",
                          re.IGNORECASE)


class ActivityInput(BaseModel):
    pass


class FileActivity(BaseModel):
    path: str
    format: str
    node: str | None
    rank: int | None
    first: datetime | None
    last: datetime | None
    last_progress: datetime | None = None  # the last step/iteration/loss line (job logs)
    last_step: int | None = None
    # the progress line before the last: two after an event mean a whole step finished after it
    prior_progress: datetime | None = None


class ActivityOutput(BaseModel):
    files: list[FileActivity] = Field(default_factory=list)


def _first_time(lines: list[str], policy: ClockPolicy) -> datetime | None:
    for line in lines:
        hit = parse_any(line, policy)
        if hit:
            return hit[0]
    return None


def _edges(path: Path, policy: ClockPolicy) -> tuple[datetime | None, datetime | None]:
    # the first few KB nearly always hold a timestamped line: read 64 KB only when they do not
    # (a .gz tail is read through the whole stream: once is enough)
    tries = (TAIL_BYTES,) if path.suffix == ".gz" else (EDGE_BYTES, TAIL_BYTES)
    return _head_time(path, policy, tries), _tail_time(path, policy, tries)


def _head_time(path: Path, policy: ClockPolicy, tries: tuple[int, ...]) -> datetime | None:
    for limit in tries:
        raw = read_head(path, limit)
        lines = raw.decode("utf-8", errors="replace").splitlines()
        whole = limit == TAIL_BYTES or len(raw) < limit
        found = _first_time(lines if whole else lines[:-1], policy)  # the last line may be cut
        if found or whole:
            return found
    return None


def _tail_time(path: Path, policy: ClockPolicy, tries: tuple[int, ...]) -> datetime | None:
    for limit in tries:
        raw, cut = read_tail(path, limit)
        tail = raw.decode("utf-8", errors="replace").splitlines()
        if cut and tail:
            tail = tail[1:]  # the first tail line may be cut
        found = _first_time(list(reversed(tail)), policy)
        if found or limit == TAIL_BYTES or not cut:
            return found
    return None


def last_progress(path: Path, policy: ClockPolicy) -> tuple[datetime | None, int | None]:
    """The newest timestamped line that reports training progress."""
    found = progress_lines(path, policy, 1)
    return found[0] if found else (None, None)


def progress_lines(path: Path, policy: ClockPolicy,
                   count: int) -> list[tuple[datetime, int | None]]:
    """The newest `count` progress lines (time, step), newest first, read backwards in chunks
    within PROGRESS_SCAN_BYTES of the end."""
    if path.suffix == ".gz":
        return _progress_in_tail(path, policy, count)
    out: list[tuple[datetime, int | None]] = []
    with path.open("rb") as fh:
        end = fh.seek(0, 2)
        scanned, carry = 0, b""
        while end > 0 and scanned < PROGRESS_SCAN_BYTES:
            start = max(0, end - TAIL_BYTES)
            fh.seek(start)
            chunk = fh.read(end - start) + carry
            lines = chunk.split(b"\n")
            carry = lines[0] if start > 0 else b""  # a line cut by the chunk's edge
            for raw in reversed(lines[1:] if start > 0 else lines):
                found = _progress_line(raw.decode("utf-8", errors="replace"), policy)
                if found:
                    out.append(found)
                    if len(out) >= count:
                        return out
            scanned += end - start
            end = start
    return out


def _progress_in_tail(path: Path, policy: ClockPolicy,
                      count: int) -> list[tuple[datetime, int | None]]:
    raw, cut = read_tail(path, PROGRESS_SCAN_BYTES)
    lines = raw.split(b"\n")[1 if cut else 0:]
    out: list[tuple[datetime, int | None]] = []
    for line in reversed(lines):
        found = _progress_line(line.decode("utf-8", errors="replace"), policy)
        if found:
            out.append(found)
            if len(out) >= count:
                break
    return out


def _progress_line(line: str, policy: ClockPolicy) -> tuple[datetime, int | None] | None:
    hit = PROGRESS.search(line)
    if not hit or NOT_PROGRESS.search(line):
        return None
    when = parse_any(line, policy)
    if not when:
        return None
    return when[0], int(hit.group(1)) if hit.group(1) else None


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
            path = ctx.bundle.root / f.rel_path
            first, last = _edges(path, policy)
            found = progress_lines(path, policy, 2) if f.format == "job_log" else []
            out.files.append(FileActivity(
                path=f.rel_path, format=f.format or "", node=f.node_hint, rank=f.rank_hint,
                first=first, last=last, last_progress=found[0][0] if found else None,
                last_step=found[0][1] if found else None,
                prior_progress=found[1][0] if len(found) > 1 else None))
        return out


TOOL = LogActivityTool()
