"""Slurm scheduler artifacts: sacct (pipe, table, JSON), scontrol show job/node, sinfo.

Every format becomes the same two records, jobs (and steps) and nodes, and the same events:
one job_state / step_state event per job or step row, one node event per node in trouble.
What a state means is decided once, in `classify_job_state` and `classify_node`.

Times: sacct and scontrol print local wall-clock time without a zone (ctx.clock's zone is
assumed, Clock.local); slurmrestd/slurmdbd JSON carries epoch seconds (Clock.absolute).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from goodput_agent.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.json_positions import (
    JsonPath,
    JsonPositions,
    json_path_text,
    load_json_document,
    locator_for,
)
from goodput_agent.parsing.lines import iter_lines
from goodput_agent.parsing.nodelist import expand_nodelist
from goodput_agent.parsing.timefmt import ClockPolicy, parse_iso

EXCERPT_CHARS = 500
MAX_EVENTS_PER_ROW = 64  # a failure row naming more nodes becomes one event listing them

KNOWN_JOB_STATES = (
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE", "FAILED",
    "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "REQUEUED", "REQUEUE_FED",
    "REQUEUE_HOLD", "RESIZING", "RESV_DEL_HOLD", "REVOKED", "RUNNING", "SIGNALING",
    "SPECIAL_EXIT", "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT",
)
_SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
                 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
                 14: "SIGALRM", 15: "SIGTERM"}
_EXTERNAL_SIGNALS = {1, 2, 9, 15}  # sent to the job by someone else (scheduler, user, agent)
_FAILURE_RANK = {"node_failure": 5, "host_oom": 4, "preempted": 3, "time_limit": 3,
                 "application_error": 1}
_NONE_VALUES = {"", "none", "unknown", "(null)", "n/a", "invalid"}


def _excerpt(text: str) -> str:
    return text.rstrip()[:EXCERPT_CHARS]


# A job's own log often echoes `scontrol show job` or `sinfo` at its top; such a file belongs to
# the job-log parser. The text sniffers claim a file only when Slurm output is a fair share of
# its head and no program output is in it.
_PROGRAM_OUTPUT = re.compile(
    r"Traceback \(most recent call last\)|torch\.distributed|NCCL (?:INFO|WARN|ERROR)"
    r"|CUDA out of memory|^\[?rank\d+\]?:|^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}[,.]\d+ ",
    re.MULTILINE)
MIN_SLURM_SHARE = 0.3


def _mostly_slurm(lines: list[str], ours: int) -> bool:
    """`ours` of the non-empty head `lines` are Slurm output: enough to claim the file?"""
    total = sum(1 for ln in lines if ln.strip())
    return total > 0 and ours / total >= MIN_SLURM_SHARE


def _table_share(lines: list[str], header_at: int, is_row: Callable[[str], bool]) -> int:
    """The header lines[header_at] and the rows right after it (an underline counts too)."""
    count = 1
    for line in lines[header_at + 1:]:
        if not (is_row(line) or _UNDERLINE.match(line)):
            break
        count += 1
    return count


# =============================================================================================
# Records
# =============================================================================================


@dataclass(slots=True)
class JobRecord:
    """One job or step row, whatever format it came from."""

    job_id: str | None
    state_raw: str
    line_start: int
    line_end: int
    excerpt: str
    name: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    derived_exit_code: str | None = None
    reason: str | None = None
    nodes: list[str] = field(default_factory=list)
    start: datetime | None = None
    start_clock: Clock = Clock.none
    end: datetime | None = None
    end_clock: Clock = Clock.none
    elapsed_s: float | None = None
    time_limit_s: float | None = None
    std_out: str | None = None
    std_err: str | None = None
    batch_host: str | None = None
    restarts: int | None = None
    failed_node: str | None = None
    step: bool | None = None  # None: decide from the job id
    json_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_step(self) -> bool:
        if self.step is not None:
            return self.step
        return bool(self.job_id and "." in self.job_id)

    @property
    def base_id(self) -> str | None:
        if not self.job_id:
            return None
        return self.job_id.split(".", 1)[0].rstrip("+")


@dataclass(slots=True)
class NodeRecord:
    """One node, or one sinfo row naming several nodes in the same state."""

    names: list[str]
    states: list[str]
    line_start: int
    line_end: int
    excerpt: str
    reason: str | None = None
    reason_user: str | None = None
    reason_time: datetime | None = None
    reason_clock: Clock = Clock.none
    json_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Outcome:
    role: Role
    category: str | None = None
    kind: EventKind | None = None  # None: job_state or step_state
    weight: str | None = None
    note: str | None = None


# =============================================================================================
# Values
# =============================================================================================


@lru_cache(maxsize=4096)
def normalize_state(raw: str | None) -> tuple[str, int | None]:
    """("CANCELLED", 0) from "CANCELLED by 0"; truncated table cells ("OUT_OF_ME+") completed."""
    text = (raw or "").strip().strip("*").upper()
    m = re.match(r"([A-Z_]+)\+?(?:\s+BY\s+(\d+))?", text)
    if not m:
        return (text or "UNKNOWN"), None
    base = m.group(1)
    by_uid = int(m.group(2)) if m.group(2) else None
    if base not in KNOWN_JOB_STATES and len(base) >= 4:
        matches = [s for s in KNOWN_JOB_STATES if s.startswith(base)]
        if len(matches) == 1:
            base = matches[0]
    return base, by_uid


def parse_exit_code(text: str | None) -> tuple[int | None, int | None]:
    """sacct/scontrol "code:signal" ("1:0", "0:15") -> (1, 0), (0, 15)."""
    if not text:
        return None, None
    m = re.match(r"\s*(-?\d+)(?::(\d+))?", text)
    if not m:
        return None, None
    return int(m.group(1)), (int(m.group(2)) if m.group(2) is not None else None)


_DURATION = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.(\d+))?$")


def parse_duration(text: str | None) -> float | None:
    """Slurm durations: "1-02:03:04", "02:03:04", "03:04", "00:00.004"; None when unlimited."""
    if not text:
        return None
    text = text.strip()
    if text.isdigit():
        return float(text)
    m = _DURATION.match(text)
    if not m:
        return None
    days, hours, minutes, seconds, frac = m.groups()
    if hours is None and days is not None:  # "1-02:03" is days-hours:minutes
        hours, minutes, seconds = minutes, seconds, "0"
    total = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds))
    return total + (float(f"0.{frac}") if frac else 0.0)


def parse_local_time(text: str | None, ctx: ParseContext) -> tuple[datetime | None, Clock]:
    if not text or text.strip().lower() in _NONE_VALUES:
        return None, Clock.none
    return _cached_time(text, ctx.clock.tz_name, ctx.clock.year)


@lru_cache(maxsize=65536)  # a sacct dump repeats the same start/end times many times
def _cached_time(text: str, tz_name: str, year: int) -> tuple[datetime | None, Clock]:
    hit = parse_iso(text, ClockPolicy(tz_name=tz_name, year=year))
    return (hit[0], hit[1]) if hit else (None, Clock.none)


@lru_cache(maxsize=16384)
def _cached_nodes(text: str | None) -> tuple[str, ...]:
    return tuple(expand_nodelist(text))


def nodes_of(text: str | None) -> list[str]:
    return list(_cached_nodes(text))


def _none_if_empty(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if value.lower() in _NONE_VALUES else value


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts else None


# =============================================================================================
# Classification
# =============================================================================================


def classify_job_state(state: str, by_uid: int | None, signal: int | None) -> Outcome:
    """What one job or step state means on its own."""
    if state == "OUT_OF_MEMORY":
        return Outcome(Role.primary, "host_oom")
    if state in ("TIMEOUT", "DEADLINE"):
        return Outcome(Role.primary, "time_limit", EventKind.time_limit)
    if state == "PREEMPTED":
        return Outcome(Role.primary, "preempted", EventKind.preempted)
    if state in ("NODE_FAIL", "BOOT_FAIL"):
        return Outcome(Role.primary, "node_failure", EventKind.node_fail)
    if state == "FAILED":
        if signal in _EXTERNAL_SIGNALS:
            return Outcome(Role.symptom, note=f"killed by {_SIGNAL_NAMES[signal]}")
        # the program itself failed; why is in its own log, so this weighs little
        return Outcome(Role.primary, "application_error", weight="low")
    if state == "CANCELLED" and by_uid == 0:
        return Outcome(Role.symptom, note="cancelled by root/slurm")
    return Outcome(Role.context)


def settle_outcomes(records: list[JobRecord]) -> list[Outcome]:
    """Per-row outcomes, where FAILED/CANCELLED rows of a job that has a more specific failure
    (a step OUT_OF_MEMORY, the job TIMEOUT or NODE_FAIL) become symptoms of that failure."""
    own: list[Outcome] = []
    strongest: dict[str, str] = {}
    for r in records:
        state, by_uid = normalize_state(r.state_raw)
        outcome = classify_job_state(state, by_uid, r.signal)
        own.append(outcome)
        cat = outcome.category
        if r.base_id and outcome.role == Role.primary and cat and cat != "application_error":
            best = strongest.get(r.base_id)
            if best is None or _FAILURE_RANK[cat] > _FAILURE_RANK[best]:
                strongest[r.base_id] = cat
    settled = []
    for r, outcome in zip(records, own, strict=True):
        state, _ = normalize_state(r.state_raw)
        best = strongest.get(r.base_id or "")
        if best and state in ("FAILED", "CANCELLED") and outcome.category != best:
            outcome = Outcome(Role.symptom, best, outcome.kind,
                              note=f"consequence of {best} in job {r.base_id}")
        settled.append(outcome)
    return settled


_NODE_FAIL_REASON = re.compile(
    r"not respond|kill task failed|node[_ ]fail|unexpectedly reboot|boot[_ ]fail|"
    r"unable to contact|lost contact|heartbeat", re.IGNORECASE)
_GPU_REASON = re.compile(
    r"\bgpus?\b|\bxid\b|fell off|nvlink|nvidia|\bdcgm|\bnvml|\bgres/gpu|\bhbm\b", re.IGNORECASE)
_PLANNED_REASON = re.compile(r"maint|upgrade|reboot (?:requested|issued)|power[ _]?sav|scheduled"
                             r"|reserved|testing|burn[- ]?in|decommission", re.IGNORECASE)
_DOWN_STATES = {"DOWN", "FAIL", "FAILING", "NOT_RESPONDING"}
_PLANNED_STATES = {"MAINT", "REBOOT_REQUESTED", "REBOOT_ISSUED", "PLANNED", "POWERED_DOWN",
                   "POWER_DOWN", "POWERING_DOWN", "POWERING_UP", "FUTURE", "CLOUD"}
_HEALTHY_STATES = {"IDLE", "ALLOCATED", "MIXED", "COMPLETING", "RESERVED", "RESV", "CLOUD",
                   "POWERED_DOWN", "POWERING_UP", "FUTURE", "PLANNED", "BLOCKED", "DYNAMIC_NORM"}


def classify_node(states: list[str], reason: str | None) -> Outcome:
    """A node's state flags and reason: node_failure when it went down, context otherwise.

    A reason naming a GPU ("gpu xid 79", "GPU fell off the bus") on a drained node stays
    context (the driver's own lines decide); on a node that went DOWN it is gpu_hardware.
    """
    reason = reason or ""
    flags = set(states)
    if flags & _PLANNED_STATES or (reason and _PLANNED_REASON.search(reason)):
        return Outcome(Role.context, note="planned state")
    down = bool(flags & _DOWN_STATES)
    if reason and _GPU_REASON.search(reason):
        if down:
            return Outcome(Role.primary, "gpu_hardware", EventKind.node_fail,
                           note="reason names a GPU")
        return Outcome(Role.context, note="reason names a GPU")
    if down or (reason and _NODE_FAIL_REASON.search(reason)):
        return Outcome(Role.primary, "node_failure", EventKind.node_fail)
    return Outcome(Role.context)


def _node_is_notable(record: NodeRecord) -> bool:
    return bool(record.reason) or not set(record.states) <= _HEALTHY_STATES


# =============================================================================================
# Events and facts
# =============================================================================================


def _job_summary(r: JobRecord, state: str) -> str:
    what = "step" if r.is_step else "job"
    parts = [f"Slurm {what} {r.job_id or '?'} {r.state_raw.strip() or state}"]
    if r.exit_code is not None or r.signal is not None:
        parts.append(f"exit {r.exit_code if r.exit_code is not None else '?'}:{r.signal or 0}")
    if r.signal in _SIGNAL_NAMES:
        parts.append(_SIGNAL_NAMES[r.signal])
    if r.reason:
        parts.append(f"reason {r.reason}")
    if r.nodes:
        shown = ",".join(r.nodes[:4]) + (f",+{len(r.nodes) - 4}" if len(r.nodes) > 4 else "")
        parts.append(f"on {shown}")
    return " ".join(parts)


def job_events(records: list[JobRecord], ctx: ParseContext) -> list[Event]:
    events = []
    for r, outcome in zip(records, settle_outcomes(records), strict=True):
        state, by_uid = normalize_state(r.state_raw)
        kind = outcome.kind or (EventKind.step_state if r.is_step else EventKind.job_state)
        ts, clock = (r.end, r.end_clock) if r.end else (r.start, r.start_clock)
        node = r.failed_node or (r.nodes[0] if len(r.nodes) == 1 else None)
        detail: dict[str, Any] = {
            "job_id": r.job_id, "step": r.is_step, "state": state, "exit_code": r.exit_code,
            "signal": r.signal, "signal_name": _SIGNAL_NAMES.get(r.signal or 0),
            "reason": r.reason, "nodes": r.nodes, "start": _iso(r.start), "end": _iso(r.end),
            "elapsed_s": r.elapsed_s, "name": r.name, "cancelled_by_uid": by_uid,
            "derived_exit_code": r.derived_exit_code, "time_limit_s": r.time_limit_s,
            "failed_node": r.failed_node, "json_path": r.json_path, "weight": outcome.weight,
            "note": outcome.note, **r.extra}
        events.append(Event(
            kind=kind, role=outcome.role, category=outcome.category, ts=ts, clock=clock,
            node=node, summary=_job_summary(r, state),
            locator=Locator(path=ctx.rel_path, line_start=r.line_start, line_end=r.line_end),
            excerpt=r.excerpt, detail={k: v for k, v in detail.items() if v not in (None, "")}))
    return events


def node_events(records: list[NodeRecord], ctx: ParseContext) -> list[Event]:
    events: list[Event] = []
    seen_failures: set[str] = set()
    for r in records:
        outcome = classify_node(r.states, r.reason)
        if outcome.role == Role.context and not _node_is_notable(r):
            continue
        state = "+".join(r.states)
        detail: dict[str, Any] = {"state": state, "reason": r.reason, "reason_user": r.reason_user,
                                  "reason_time": _iso(r.reason_time), "nodes": r.names,
                                  "json_path": r.json_path, "note": outcome.note,
                                  "node_record": True, **r.extra}
        if outcome.note == "reason names a GPU":
            detail["suggests"] = "gpu_hardware"
        detail = {k: v for k, v in detail.items() if v not in (None, "", [])}
        per_node = outcome.role == Role.primary and 1 < len(r.names) <= MAX_EVENTS_PER_ROW
        targets: list[str | None] = list(r.names) if per_node else \
            [r.names[0] if len(r.names) == 1 else None]
        for name in targets:
            if outcome.role == Role.primary and name:
                if name in seen_failures:
                    continue  # the same node listed again (another partition, another table)
                seen_failures.add(name)
            label = name or f"{len(r.names)} nodes"
            summary = " ".join(x for x in ("Slurm node", label, state) if x)
            events.append(Event(
                kind=outcome.kind or EventKind.other, role=outcome.role,
                category=outcome.category, ts=r.reason_time, clock=r.reason_clock, node=name,
                summary=summary + (f": {r.reason}" if r.reason else ""),
                locator=Locator(path=ctx.rel_path, line_start=r.line_start,
                                line_end=r.line_end),
                excerpt=r.excerpt, detail=detail))
    return events


def _job_fact(r: JobRecord) -> dict[str, Any]:
    state, _ = normalize_state(r.state_raw)
    return {"job_id": r.job_id, "state": state, "nodes": r.nodes, "start": _iso(r.start),
            "end": _iso(r.end), "exit_code": r.exit_code, "signal": r.signal,
            "reason": r.reason, "std_out": r.std_out, "std_err": r.std_err, "name": r.name,
            "elapsed_s": r.elapsed_s, "time_limit_s": r.time_limit_s,
            "batch_host": r.batch_host, "restarts": r.restarts}


def build_result(fmt: str, ctx: ParseContext, jobs: list[JobRecord], nodes: list[NodeRecord],
                 lines_read: int, warnings: list[str] | None = None) -> ParseResult:
    node_facts: dict[str, dict[str, Any]] = {}
    for r in nodes:
        for name in r.names:
            node_facts.setdefault(name, {"name": name, "state": "+".join(r.states),
                                         "reason": r.reason,
                                         "reason_time": _iso(r.reason_time)})
    facts: dict[str, Any] = {"jobs": [_job_fact(r) for r in jobs if not r.is_step],
                             "steps": [_job_fact(r) for r in jobs if r.is_step],
                             "nodes": list(node_facts.values())}
    events = job_events(jobs, ctx) + node_events(nodes, ctx)
    return ParseResult(format=fmt, events=events, facts=facts, lines_read=lines_read,
                       warnings=warnings or [])


# =============================================================================================
# sacct -P / --parsable2 / --parsable
# =============================================================================================

_ID_COLUMNS = ("jobid", "jobidraw")
_JOB_ID = re.compile(r"^\d+(?:[_+][\w\[\]\-,]*)*\+?(?:\.[\w\-]+)?\+?$")


def _row_to_job(row: dict[str, str], ctx: ParseContext, line_start: int, line_end: int,
                excerpt: str) -> JobRecord:
    """One sacct row (keys lower-cased column names) as a JobRecord."""
    def take(*names: str) -> str | None:
        for name in names:
            value = row.get(name)
            if value is not None and value.strip() != "":
                return value.strip()
        return None

    code, sig = parse_exit_code(take("exitcode"))
    start, start_clock = parse_local_time(take("start"), ctx)
    end, end_clock = parse_local_time(take("end"), ctx)
    limit = take("timelimitraw")
    known = {"jobid", "jobidraw", "jobname", "state", "exitcode", "derivedexitcode", "nodelist",
             "start", "end", "elapsed", "elapsedraw", "timelimit", "timelimitraw", "reason"}
    extra = {k: v.strip()[:200] for k, v in row.items() if k not in known and v.strip()}
    return JobRecord(
        job_id=take("jobid", "jobidraw"), state_raw=take("state") or "", line_start=line_start,
        line_end=line_end, excerpt=excerpt, name=take("jobname"), exit_code=code, signal=sig,
        derived_exit_code=take("derivedexitcode"), reason=_none_if_empty(take("reason")),
        nodes=nodes_of(take("nodelist")), start=start, start_clock=start_clock, end=end,
        end_clock=end_clock,
        elapsed_s=parse_duration(take("elapsedraw")) or parse_duration(take("elapsed")),
        time_limit_s=(float(limit) * 60 if limit and limit.isdigit()
                      else parse_duration(take("timelimit"))),
        extra={"fields": extra} if extra else {})


def _pipe_header(line: str) -> list[str] | None:
    low = line.lower()
    if "|" not in line or ("jobid" not in low and "state" not in low):
        return None
    cells = [c.strip().lower() for c in line.split("|")]
    if cells and cells[-1] == "":
        cells = cells[:-1]
    if any(c in ("jobid", "jobidraw", "state") for c in cells):
        return cells
    return None


class SacctPipeParser:
    format = "sacct_pipe"

    def sniff(self, head: str, name: str) -> bool:
        if _PROGRAM_OUTPUT.search(head):
            return False
        lines = head.splitlines()
        for line in [ln for ln in lines[:20] if ln.strip()][:5]:
            if "|" in line:
                return _pipe_header(line) is not None and \
                    _mostly_slurm(lines, sum(1 for ln in lines if "|" in ln))
        return False

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        header: list[str] | None = None
        jobs: list[JobRecord] = []
        skipped = 0
        n = 0
        for n, line in iter_lines(path):
            if "|" not in line:
                continue
            new_header = _pipe_header(line)
            if new_header is not None:  # no data cell reads "JobID" or "State"
                header = new_header
                continue
            if header is None:
                continue
            cells = line.split("|")
            if len(cells) == len(header) + 1 and cells[-1].strip() == "":
                cells = cells[:-1]  # --parsable ends every row with "|"
            if len(cells) != len(header):
                skipped += 1
                continue
            jobs.append(_row_to_job(dict(zip(header, cells, strict=True)), ctx, n, n,
                                    _excerpt(line)))
        if header is None:
            raise ParseError(f"{ctx.rel_path}: no sacct header line (JobID|State|...) found")
        warnings = [f"{skipped} rows with a wrong number of columns skipped"] if skipped else []
        return build_result(self.format, ctx, jobs, [], n, warnings)


# =============================================================================================
# sacct fixed-width table (header, ------ underline)
# =============================================================================================

_UNDERLINE = re.compile(r"^\s*-{2,}(?:\s+-{2,})*\s*$")


def _table_header_ok(line: str) -> bool:
    tokens = {t.lower() for t in line.split()}
    return bool(tokens & {"jobid", "jobidraw", "state"})


class SacctTableParser:
    format = "sacct_table"

    def sniff(self, head: str, name: str) -> bool:
        if _PROGRAM_OUTPUT.search(head):
            return False
        lines = head.splitlines()
        return any(_UNDERLINE.match(lines[i]) and _table_header_ok(lines[i - 1])
                   and _mostly_slurm(lines, _table_share(lines, i - 1, _looks_like_sacct_row))
                   for i in range(1, min(len(lines), 40)))

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        jobs: list[JobRecord] = []
        prev = ""
        spans: list[tuple[int, int | None]] | None = None
        names: list[str] = []
        n = 0
        for n, line in iter_lines(path):
            if _UNDERLINE.match(line) and _table_header_ok(prev):
                cuts = [m.start() for m in re.finditer(r"-+", line)]
                spans = [(c, cuts[i + 1] if i + 1 < len(cuts) else None)
                         for i, c in enumerate(cuts)]
                names = [prev[a:b].strip().lower() for a, b in spans]
                prev = line
                continue
            prev = line
            if spans is None:
                continue
            if not line.strip():
                spans = None  # the table ended
                continue
            cells = [line[a:b] if b is not None else line[a:] for a, b in spans]
            row = dict(zip(names, cells, strict=True))
            job_id = (row.get("jobid") or row.get("jobidraw") or "").strip()
            if not _JOB_ID.match(job_id):
                continue
            jobs.append(_row_to_job(row, ctx, n, n, _excerpt(line)))
        if not jobs and n == 0:
            raise ParseError(f"{ctx.rel_path}: empty sacct table")
        _mark_truncated_steps(jobs)
        return build_result(self.format, ctx, jobs, [], n)


def _looks_like_sacct_row(line: str) -> bool:
    tokens = line.split()
    return bool(tokens) and _JOB_ID.match(tokens[0]) is not None


def _mark_truncated_steps(jobs: list[JobRecord]) -> None:
    """A table cuts long ids with '+': "2681683_420+" after job "2681683_420" is its step."""
    seen: set[str] = set()
    for r in jobs:
        if r.job_id and r.job_id.endswith("+") and "." not in r.job_id:
            base = r.job_id.rstrip("+")
            if base in seen:
                r.step = True
                r.extra["id_truncated"] = True
        elif r.job_id and not r.is_step:
            seen.add(r.job_id)


# =============================================================================================
# scontrol show job / node (key=value records)
# =============================================================================================

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
        line_end=where[0], excerpt=_excerpt(where[1]), name=rec.get("JobName"), exit_code=code,
        signal=sig, derived_exit_code=rec.get("DerivedExitCode"),
        reason=_none_if_empty(rec.get("Reason")),
        nodes=nodes_of(rec.get("NodeList") or rec.get("Nodes")), start=start,
        start_clock=start_clock, end=end, end_clock=end_clock,
        elapsed_s=parse_duration(rec.get("RunTime")),
        time_limit_s=parse_duration(rec.get("TimeLimit")),
        std_out=_none_if_empty(rec.get("StdOut")), std_err=_none_if_empty(rec.get("StdErr")),
        batch_host=_none_if_empty(rec.get("BatchHost")),
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
        return _none_if_empty(reason), None, None, Clock.none
    ts, clock = parse_local_time(m.group("time"), ctx)
    return _none_if_empty(m.group("text")), m.group("user"), ts, clock


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
        excerpt=_excerpt(" | ".join(t.strip() for _, t in lines)), reason=text, reason_user=user,
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


def _line_starts_with(head: str, keys: tuple[str, ...]) -> bool:
    lines = head.splitlines()
    if _PROGRAM_OUTPUT.search(head):
        return False
    starts = re.compile(r"^[\s*`>]*(?:" + "|".join(keys) + r")=")
    if not any(starts.match(line) for line in lines[:400]):
        return False
    return _mostly_slurm(lines, sum(1 for line in lines if _KEY.search(line)))


class ScontrolJobParser(_ScontrolParser):
    format = "scontrol_job"

    def sniff(self, head: str, name: str) -> bool:
        return ("JobState=" in head and ("JobId=" in head or "ExitCode=" in head)
                and _line_starts_with(head, ("JobId", "JobState", "UserId")))


class ScontrolNodeParser(_ScontrolParser):
    format = "scontrol_node"

    def sniff(self, head: str, name: str) -> bool:
        return "State=" in head and _line_starts_with(head, ("NodeName",))


# =============================================================================================
# sinfo -R and sinfo
# =============================================================================================

_SINFO_SHORT = {
    "alloc": "ALLOCATED", "allocated": "ALLOCATED", "comp": "COMPLETING", "drain": "DRAINED",
    "drained": "DRAINED", "drng": "DRAINING", "draining": "DRAINING", "down": "DOWN",
    "fail": "FAIL", "failg": "FAILING", "failing": "FAILING", "futr": "FUTURE",
    "future": "FUTURE", "idle": "IDLE", "maint": "MAINT", "mix": "MIXED", "mixed": "MIXED",
    "npc": "PERFCTRS", "plnd": "PLANNED", "planned": "PLANNED", "pow_dn": "POWER_DOWN",
    "pow_up": "POWERING_UP", "resv": "RESERVED", "reserved": "RESERVED", "unk": "UNKNOWN",
    "unknown": "UNKNOWN", "inval": "INVAL", "boot": "REBOOT_ISSUED", "blocked": "BLOCKED",
}
_STATE_ALIASES = {"NO_RESPOND": "NOT_RESPONDING", "ALLOC": "ALLOCATED", "MIX": "MIXED",
                  "DRNG": "DRAINING", "COMP": "COMPLETING"}
_SINFO_SUFFIX = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP",
                 "%": "POWERING_DOWN", "!": "POWER_DOWN", "$": "MAINT", "@": "REBOOT_REQUESTED",
                 "^": "REBOOT_ISSUED", "-": "PLANNED"}


def parse_node_states(text: str | None) -> list[str]:
    """"DOWN+DRAIN+NOT_RESPONDING" or sinfo's "drng@" / "down*" -> upper-case state flags."""
    if not text:
        return []
    out: list[str] = []
    for part in re.split(r"[+\s]+", text.strip()):
        flags = []
        while part and part[-1] in _SINFO_SUFFIX:
            flags.append(_SINFO_SUFFIX[part[-1]])
            part = part[:-1]
        if not part:
            base = None
        elif part.isupper():  # scontrol / JSON spelling: "IDLE+DRAIN", "NO_RESPOND"
            base = _STATE_ALIASES.get(part, part)
        else:  # sinfo's short lower-case spelling: "drng", "alloc"
            base = _SINFO_SHORT.get(part.lower(), part.upper())
        for state in ([base] if base else []) + flags:
            if state not in out:
                out.append(state)
    return out


def _sinfo_clean(line: str) -> str:
    """sinfo lines as some CI logs print them: inside JSON quotes, with a trailing comma."""
    text = line.strip()
    if text.startswith('"'):
        text = text[1:]
        text = re.sub(r'",?\s*$', "", text)
    return text.rstrip(",").strip()


_HOSTLIST = re.compile(r"^[A-Za-z0-9][\w.\-\[\],]*$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")


def _sinfo_reason_header(text: str) -> list[str] | None:
    tokens = text.split()
    if tokens and tokens[0] == "REASON" and "NODELIST" in tokens:
        return tokens
    return None


class SinfoReasonsParser:
    format = "sinfo_reasons"

    def sniff(self, head: str, name: str) -> bool:
        if _PROGRAM_OUTPUT.search(head):
            return False
        lines = head.splitlines()
        for i in range(min(len(lines), 40)):
            header = _sinfo_reason_header(_sinfo_clean(lines[i]))
            if header and _mostly_slurm(lines, _table_share(
                    lines, i, lambda ln, h=header: self._row_fields(_sinfo_clean(ln), h)
                    is not None)):
                return True
        return False

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        header: list[str] | None = None
        nodes: list[NodeRecord] = []
        n = 0
        for n, line in iter_lines(path):
            text = _sinfo_clean(line)
            found = _sinfo_reason_header(text)
            if found:
                header = found
                continue
            if header is None or not text:
                continue
            record = self._row(text, header, n, line, ctx)
            if record:
                nodes.append(record)
        if header is None:
            raise ParseError(f"{ctx.rel_path}: no sinfo -R header (REASON ... NODELIST) found")
        return build_result(self.format, ctx, [], nodes, n)

    @staticmethod
    def _row_fields(text: str, header: list[str]) -> dict[str, str] | None:
        """The columns of one sinfo -R row (REASON may hold spaces); None when it is not one."""
        tokens = text.split()
        if len(tokens) < len(header):
            return None
        values: dict[str, str] = {}
        for col in reversed(header[1:]):
            values[col] = tokens.pop()
        values["REASON"] = " ".join(tokens)
        stamp = values.get("TIMESTAMP")
        if not values["REASON"] or not _HOSTLIST.match(values["NODELIST"]):
            return None
        if stamp is not None and not (_TIMESTAMP.match(stamp) or stamp in ("Unknown", "None")):
            return None  # a line of some other table
        return values

    def _row(self, text: str, header: list[str], n: int, line: str,
             ctx: ParseContext) -> NodeRecord | None:
        values = self._row_fields(text, header)
        if values is None:
            return None
        reason, stamp = values["REASON"], values.get("TIMESTAMP")
        names = nodes_of(values["NODELIST"])
        if not names:
            return None
        ts, clock = parse_local_time(stamp, ctx)
        return NodeRecord(names=names, states=parse_node_states(values.get("STATE")), line_start=n,
                          line_end=n, excerpt=_excerpt(line.strip()), reason=reason,
                          reason_user=values.get("USER"), reason_time=ts, reason_clock=clock)


def _sinfo_header(text: str) -> list[str] | None:
    tokens = text.split()
    upper = set(tokens)
    if "STATE" in upper and ("PARTITION" in upper or "NODELIST" in upper) and \
            ("NODELIST" in upper or "HOSTNAMES" in upper) and all(t.isupper() or "(" in t
                                                                 for t in tokens):
        return tokens
    return None


_KNOWN_NODE_WORDS = set(_SINFO_SHORT) | {"drain", "down", "idle", "maint", "reboot", "power_down",
                                       "powering_down", "powering_up", "powered_down"}


def _sinfo_row(text: str, header: list[str]) -> dict[str, str] | None:
    """One row of a plain sinfo table, checked: a known STATE and a host list."""
    tokens = text.split()
    if len(tokens) > len(header) and header[-1] == "REASON":
        tokens = tokens[:len(header) - 1] + [" ".join(tokens[len(header) - 1:])]
    if len(tokens) != len(header):
        return None
    row = dict(zip(header, tokens, strict=True))
    hostlist = row.get("NODELIST") or row.get("HOSTNAMES") or ""
    state = row.get("STATE", "").rstrip("".join(_SINFO_SUFFIX)).lower()
    if not _HOSTLIST.match(hostlist) or state not in _KNOWN_NODE_WORDS:
        return None
    return row


class SinfoParser:
    format = "sinfo"

    def sniff(self, head: str, name: str) -> bool:
        if _PROGRAM_OUTPUT.search(head):
            return False
        lines = head.splitlines()
        for i in range(min(len(lines), 60)):
            header = _sinfo_header(_sinfo_clean(lines[i]))
            if header and "PARTITION" in header and _mostly_slurm(lines, _table_share(
                    lines, i, lambda ln, h=header: _sinfo_row(_sinfo_clean(ln), h) is not None)):
                return True
        return False

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        header: list[str] | None = None
        nodes: list[NodeRecord] = []
        n = 0
        for n, line in iter_lines(path):
            text = _sinfo_clean(line)
            found = _sinfo_header(text)
            if found:
                header = found
                continue
            if header is None or not text:
                continue
            row = _sinfo_row(text, header)
            if row is None:
                continue
            names = nodes_of(row.get("NODELIST") or row.get("HOSTNAMES"))
            states = parse_node_states(row.get("STATE"))
            if not names or not states:
                continue
            nodes.append(NodeRecord(
                names=names, states=states, line_start=n, line_end=n,
                excerpt=_excerpt(line.strip()), reason=_none_if_empty(row.get("REASON")),
                extra={k.lower(): v for k, v in row.items() if k in ("PARTITION", "AVAIL")}))
        if header is None:
            raise ParseError(f"{ctx.rel_path}: no sinfo header (PARTITION ... STATE ...) found")
        return build_result(self.format, ctx, [], nodes, n)


# =============================================================================================
# slurmrestd / slurmdbd / sacct --json / scontrol --json
# =============================================================================================

_JSON_KEEP = frozenset({"jobs", "steps", "nodes", "state", "job_state", "step", "exit_code",
                        "reason", "name", "job_id", "current"})


def _keep_slurm_path(path: JsonPath) -> bool:
    return len(path) <= 5 and all(isinstance(p, int) or p in _JSON_KEEP for p in path)


def _number(value: Any) -> float | None:
    """Slurm's {"set": true, "infinite": false, "number": N} wrappers, or a plain number."""
    if isinstance(value, dict):
        if value.get("infinite") or value.get("set") is False:
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _epoch(value: Any) -> tuple[datetime | None, Clock]:
    n = _number(value)
    if not n or n <= 0:
        return None, Clock.none
    try:
        return datetime.fromtimestamp(n, UTC), Clock.absolute
    except (OverflowError, OSError, ValueError):
        return None, Clock.none


def _json_states(value: Any) -> str:
    """{"current": ["FAILED"], "reason": ..} / ["FAILED", "REQUEUED"] / "FAILED" -> "FAILED+.."."""
    if isinstance(value, dict):
        value = value.get("current")
    if isinstance(value, list):
        return "+".join(str(v) for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _json_exit(value: Any) -> tuple[int | None, int | None, str | None]:
    """exit_code as a dict (status, return_code, signal) or a plain int -> code, signal, status."""
    if isinstance(value, bool):
        return None, None, None
    if isinstance(value, int):
        return value, None, None
    if not isinstance(value, dict):
        return None, None, None
    status = value.get("status")
    status_text = "+".join(status) if isinstance(status, list) else status \
        if isinstance(status, str) else None
    code = _number(value.get("return_code"))
    signal = value.get("signal")
    sig: float | None = None
    if isinstance(signal, dict):
        sig = _number(signal.get("id")) if "id" in signal else _number(signal.get("signal_id"))
    else:
        sig = _number(signal)
    return (int(code) if code is not None else None, int(sig) if sig else None, status_text)


def _json_nodes(value: Any) -> list[str]:
    if isinstance(value, dict):
        listed = value.get("list")
        if isinstance(listed, list) and all(isinstance(x, str) for x in listed):
            return listed
        value = value.get("range") or value.get("nodes")
    return nodes_of(value) if isinstance(value, str) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _time_field(obj: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in obj:
            return obj[name]
    return None


def _json_job(job: dict[str, Any], i: int, pos: JsonPositions, ctx: ParseContext) -> JobRecord:
    path: JsonPath = ("jobs", i)
    state_key = "job_state" if "job_state" in job else "state"
    state = job.get(state_key)
    reason = _str(job.get("state_reason")) or (_str(state.get("reason"))
                                               if isinstance(state, dict) else None)
    code, sig, status = _json_exit(job.get("exit_code"))
    dcode, dsig, _ = _json_exit(job.get("derived_exit_code"))
    times = job.get("time") if isinstance(job.get("time"), dict) else {}
    start, start_clock = _epoch(_time_field(times, "start") or job.get("start_time"))
    end, end_clock = _epoch(_time_field(times, "end") or job.get("end_time"))
    limit = _number(_time_field(times, "limit") or job.get("time_limit"))
    elapsed = _number(times.get("elapsed"))
    if elapsed is None and start and end:
        elapsed = (end - start).total_seconds()
    lines = locator_for(pos, ctx, path + (state_key,))
    job_id = job.get("job_id")
    restarts = _number(job.get("restart_cnt"))
    return JobRecord(
        job_id=str(int(_number(job_id))) if _number(job_id) is not None else None,
        state_raw=_json_states(state), line_start=lines.line_start, line_end=lines.line_end,
        excerpt=pos.excerpt(path + (state_key,)), name=_str(job.get("name")), exit_code=code,
        signal=sig, derived_exit_code=f"{dcode}:{dsig or 0}" if dcode is not None else None,
        reason=_none_if_empty(reason), nodes=_json_nodes(job.get("nodes")), start=start,
        start_clock=start_clock, end=end, end_clock=end_clock, elapsed_s=elapsed,
        time_limit_s=limit * 60 if limit is not None else None,
        std_out=_str(job.get("stdout_expanded")) or _str(job.get("standard_output"))
        or _str(job.get("stdout")),
        std_err=_str(job.get("stderr_expanded")) or _str(job.get("standard_error"))
        or _str(job.get("stderr")),
        batch_host=_str(job.get("batch_host")),
        restarts=int(restarts) if restarts is not None else None,
        failed_node=_str(job.get("failed_node")), step=False, json_path=json_path_text(path),
        extra={"exit_status": status} if status else {})


def _json_step(step: dict[str, Any], job: JobRecord, i: int, j: int, pos: JsonPositions,
               ctx: ParseContext) -> JobRecord:
    path: JsonPath = ("jobs", i, "steps", j)
    ident = step.get("step") if isinstance(step.get("step"), dict) else {}
    raw_id = ident.get("id")
    if isinstance(raw_id, dict):  # {"job_id": 12, "step_id": "batch"}
        raw_id = f"{raw_id.get('job_id', job.job_id)}.{raw_id.get('step_id', '?')}"
    step_id = str(raw_id) if raw_id is not None else "?"
    if "." not in step_id:
        step_id = f"{job.job_id}.{step_id}"
    code, sig, status = _json_exit(step.get("exit_code"))
    times = step.get("time") if isinstance(step.get("time"), dict) else {}
    start, start_clock = _epoch(times.get("start"))
    end, end_clock = _epoch(times.get("end"))
    lines = locator_for(pos, ctx, path + ("state",))
    return JobRecord(
        job_id=step_id, state_raw=_json_states(step.get("state")), line_start=lines.line_start,
        line_end=lines.line_end, excerpt=pos.excerpt(path + ("state",)),
        name=_str(ident.get("name")), exit_code=code, signal=sig,
        nodes=_json_nodes(step.get("nodes")), start=start, start_clock=start_clock, end=end,
        end_clock=end_clock, elapsed_s=_number(times.get("elapsed")), step=True,
        json_path=json_path_text(path), extra={"exit_status": status} if status else {})


def _json_node(node: dict[str, Any], i: int, pos: JsonPositions,
               ctx: ParseContext) -> NodeRecord | None:
    name = _str(node.get("name")) or _str(node.get("hostname"))
    if not name:
        return None
    path: JsonPath = ("nodes", i)
    state = node.get("state")
    states = [s.upper() for s in state if isinstance(s, str)] if isinstance(state, list) else \
        parse_node_states(state if isinstance(state, str) else None)
    for flag in node.get("state_flags") or []:  # data_parser 0.0.37: "state": "down" + flags
        if isinstance(flag, str) and flag.upper() not in states:
            states.append(flag.upper())
    reason = _none_if_empty(_str(node.get("reason")))
    ts, clock = _epoch(node.get("reason_changed_at"))
    paths = [path + ("state",)] + ([path + ("reason",)] if reason else [])
    loc = locator_for(pos, ctx, *paths)
    return NodeRecord(
        names=[name], states=states, line_start=loc.line_start, line_end=loc.line_end,
        excerpt=_excerpt(" ".join(pos.excerpt(p) for p in paths)), reason=reason,
        reason_user=_str(node.get("reason_set_by_user")), reason_time=ts, reason_clock=clock,
        json_path=json_path_text(path),
        extra={k: v for k, v in (("gres", _str(node.get("gres"))),
                                 ("gres_used", _str(node.get("gres_used")))) if v})


class _SlurmJsonParser:
    format = "slurm_json"

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        doc, text = load_json_document(path, ctx, "Slurm JSON")
        if not isinstance(doc, dict) or not (isinstance(doc.get("jobs"), list)
                                             or isinstance(doc.get("nodes"), list)):
            raise ParseError(f"{ctx.rel_path}: Slurm JSON has no 'jobs' or 'nodes' list")
        pos = JsonPositions(text, _keep_slurm_path)
        jobs: list[JobRecord] = []
        nodes: list[NodeRecord] = []
        for i, job in enumerate(doc.get("jobs") or []):
            if not isinstance(job, dict):
                continue
            record = _json_job(job, i, pos, ctx)
            jobs.append(record)
            for j, step in enumerate(job.get("steps") or []):
                if isinstance(step, dict):
                    jobs.append(_json_step(step, record, i, j, pos, ctx))
        for i, node in enumerate(doc.get("nodes") or []):
            if isinstance(node, dict) and (record_n := _json_node(node, i, pos, ctx)):
                nodes.append(record_n)
        warnings = [f"slurm reported: {_error_text(e)}" for e in doc.get("errors") or []][:10]
        return build_result(self.format, ctx, jobs, nodes, text.count("\n") + 1, warnings)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("description") or error.get("error") or error)[:200]
    return str(error)[:200]


class SacctJsonParser(_SlurmJsonParser):
    format = "sacct_json"

    def sniff(self, head: str, name: str) -> bool:
        return (head.lstrip().startswith("{") and re.search(r'"jobs"\s*:\s*\[', head) is not None
                and re.search(r'"job_id"\s*:', head) is not None)


class SlurmNodesJsonParser(_SlurmJsonParser):
    format = "slurm_nodes_json"

    def sniff(self, head: str, name: str) -> bool:
        return (head.lstrip().startswith("{") and re.search(r'"nodes"\s*:\s*\[', head) is not None
                and '"name"' in head and '"state"' in head and '"apiVersion"' not in head)


SACCT_JSON = SacctJsonParser()
SLURM_NODES_JSON = SlurmNodesJsonParser()
SACCT_PIPE = SacctPipeParser()
SACCT_TABLE = SacctTableParser()
SCONTROL_JOB = ScontrolJobParser()
SCONTROL_NODE = ScontrolNodeParser()
SINFO_REASONS = SinfoReasonsParser()
SINFO = SinfoParser()

PARSERS = (SACCT_JSON, SLURM_NODES_JSON, SACCT_PIPE, SACCT_TABLE, SCONTROL_JOB, SCONTROL_NODE,
           SINFO_REASONS, SINFO)
