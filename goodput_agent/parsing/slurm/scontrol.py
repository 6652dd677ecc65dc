"""scontrol show job / show node: KEY=value records, one per job or node."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from goodput_agent.core.events import Clock
from goodput_agent.parsing.base import ParseContext, ParseResult
from goodput_agent.parsing.head_words import holds
from goodput_agent.parsing.lines import iter_lines
from goodput_agent.parsing.slurm.outcomes import (
    build_result,
)
from goodput_agent.parsing.slurm.records import (
    JobRecord,
    NodeRecord,
    has_program_output,
    head_lines,
    mostly_slurm,
    nodes_of,
    none_if_empty,
    parse_duration,
    parse_exit_code,
    parse_local_time,
    row_excerpt,
)
from goodput_agent.parsing.slurm.sinfo import parse_node_states

_KEY = re.compile(r"(?<![^\s*`>])([A-Za-z][\w:/.\-]*)=")
_REASON_BY = re.compile(r"^(?P<text>.*?)\s*\[(?P<user>[^@\]\s]+)@(?P<time>[^\]]+)\]\s*$")


def _tokens(line: str) -> list[tuple[str, str]]:
    keys = list(_KEY.finditer(line))
    out = []
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(line)
        out.append((m.group(1), line[m.end():end].strip().strip("*").strip()))
    return out


@dataclass(slots=True)
class _KvRecord:
    fields: dict[str, tuple[str, int, str]] = field(default_factory=dict)  # key -> value, line
    first_line: int = 0
    last_line: int = 0

    def add(self, n: int, line: str, tokens: list[tuple[str, str]]) -> None:
        if not self.fields:
            self.first_line = n
        self.last_line = n
        for key, value in tokens:
            self.fields.setdefault(key, (value, n, line))

    def get(self, key: str) -> str | None:
        hit = self.fields.get(key)
        return hit[0] if hit else None

    def line_of(self, key: str) -> tuple[int, str] | None:
        hit = self.fields.get(key)
        return (hit[1], hit[2]) if hit else None


_RECORD_START = ("JobId", "NodeName", "StepId")


def _kv_records(path: Path, counter: list[int]) -> Iterator[_KvRecord]:
    """key=value records: a record starts at JobId=/NodeName=/StepId= or after a blank line;
    lines without tokens (prose, prompts) are skipped. counter[0] ends as the lines read."""
    current = _KvRecord()
    for n, line in iter_lines(path):
        counter[0] = n
        tokens = _tokens(line)
        if not tokens:
            if not line.strip() and current.fields:
                yield current
                current = _KvRecord()
            continue
        if tokens[0][0] in _RECORD_START and current.fields:
            yield current
            current = _KvRecord()
        current.add(n, line, tokens)
    if current.fields:
        yield current


def _scontrol_job(rec: _KvRecord, ctx: ParseContext) -> JobRecord | None:
    state_key = "JobState" if rec.get("JobState") is not None else "State"
    if rec.get(state_key) is None or (state_key == "State" and rec.get("StepId") is None):
        return None
    where = rec.line_of(state_key) or (rec.first_line, "")
    code, sig = parse_exit_code(rec.get("ExitCode"))
    start, start_clock = parse_local_time(rec.get("StartTime"), ctx)
    end, end_clock = parse_local_time(rec.get("EndTime"), ctx)
    restarts = rec.get("Restarts")
    job_id = rec.get("JobId") or rec.get("StepId")
    array_id, task_id = rec.get("ArrayJobId"), rec.get("ArrayTaskId")
    return JobRecord(
        job_id=job_id, state_raw=rec.get(state_key) or "", line_start=where[0],
        line_end=where[0], excerpt=row_excerpt(where[1]), name=rec.get("JobName"), exit_code=code,
        signal=sig, derived_exit_code=rec.get("DerivedExitCode"),
        reason=none_if_empty(rec.get("Reason")),
        nodes=nodes_of(rec.get("NodeList") or rec.get("Nodes")), start=start,
        start_clock=start_clock, end=end, end_clock=end_clock,
        elapsed_s=parse_duration(rec.get("RunTime")),
        time_limit_s=parse_duration(rec.get("TimeLimit")),
        std_out=none_if_empty(rec.get("StdOut")), std_err=none_if_empty(rec.get("StdErr")),
        batch_host=none_if_empty(rec.get("BatchHost")),
        restarts=int(restarts) if restarts and restarts.isdigit() else None,
        step=rec.get("StepId") is not None and rec.get("JobId") is None,
        extra={"record_lines": [rec.first_line, rec.last_line],
               **({"array_job": f"{array_id}_{task_id}"} if array_id and task_id else {})})


def split_reason(reason: str | None, ctx: ParseContext) -> tuple[str | None, str | None,
                                                                 datetime | None, Clock]:
    """"Not responding [slurm@2024-05-01T10:00:00]" -> text, user, time, clock."""
    if not reason:
        return None, None, None, Clock.none
    m = _REASON_BY.match(reason)
    if not m:
        return none_if_empty(reason), None, None, Clock.none
    ts, clock = parse_local_time(m.group("time"), ctx)
    return none_if_empty(m.group("text")), m.group("user"), ts, clock


def _scontrol_node(rec: _KvRecord, ctx: ParseContext) -> NodeRecord | None:
    name, state = rec.get("NodeName"), rec.get("State")
    if not name or state is None:
        return None
    state_at = rec.line_of("State") or (rec.first_line, "")
    reason_at = rec.line_of("Reason")
    text, user, ts, clock = split_reason(rec.get("Reason"), ctx)
    lines = [state_at] + ([reason_at] if reason_at and reason_at[0] != state_at[0] else [])
    return NodeRecord(
        names=[name], states=parse_node_states(state), line_start=min(ln for ln, _ in lines),
        line_end=max(ln for ln, _ in lines),
        excerpt=row_excerpt(" | ".join(t.strip() for _, t in lines)), reason=text, reason_user=user,
        reason_time=ts, reason_clock=clock,
        extra={k: v for k, v in (("partitions", rec.get("Partitions")),
                                 ("gres", rec.get("Gres"))) if v and v != "(null)"})


class _ScontrolParser:
    format = "scontrol"

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        jobs: list[JobRecord] = []
        nodes: list[NodeRecord] = []
        counter = [0]
        for rec in _kv_records(path, counter):
            if rec.get("NodeName") is not None:
                node = _scontrol_node(rec, ctx)
                if node:
                    nodes.append(node)
                continue
            job = _scontrol_job(rec, ctx)
            if job:
                jobs.append(job)
        return build_result(self.format, ctx, jobs, nodes, counter[0])


def line_starts_with(head: str, keys: tuple[str, ...]) -> bool:
    lines = head_lines(head)
    if has_program_output(head):
        return False
    starts = re.compile(r"^[\s*`>]*(?:" + "|".join(keys) + r")=")
    if not any(starts.match(line) for line in lines[:400]):
        return False
    return mostly_slurm(lines, sum(1 for line in lines if _KEY.search(line)))


class ScontrolJobParser(_ScontrolParser):
    format = "scontrol_job"

    def sniff(self, head: str, name: str) -> bool:
        return (holds(head, "JobState=") and (holds(head, "JobId=") or holds(head, "ExitCode="))
                and line_starts_with(head, ("JobId", "JobState", "UserId")))


class ScontrolNodeParser(_ScontrolParser):
    format = "scontrol_node"

    def sniff(self, head: str, name: str) -> bool:
        return holds(head, "State=") and line_starts_with(head, ("NodeName",))
