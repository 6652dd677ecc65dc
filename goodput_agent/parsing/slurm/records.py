"""The two records every Slurm format becomes (jobs and steps, nodes), and the
field readers they share: states, exit codes, durations, local times, node lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from goodput_agent.core.events import Clock, EventKind, Role
from goodput_agent.parsing.base import ParseContext
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
SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
                 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
                 14: "SIGALRM", 15: "SIGTERM"}
EXTERNAL_SIGNALS = {1, 2, 9, 15}  # sent to the job by someone else (scheduler, user, agent)
FAILURE_RANK = {"node_failure": 5, "host_oom": 4, "preempted": 3, "time_limit": 3,
                 "application_error": 1}
NONE_VALUES = {"", "none", "unknown", "(null)", "n/a", "invalid"}


def row_excerpt(text: str) -> str:
    return text.rstrip()[:EXCERPT_CHARS]


# A job's own log often echoes `scontrol show job` or `sinfo` at its top; such a file belongs to
# the job-log parser. The text sniffers claim a file only when Slurm output is a fair share of
# its head and no program output is in it.
PROGRAM_OUTPUT = re.compile(
    r"Traceback \(most recent call last\)|torch\.distributed|NCCL (?:INFO|WARN|ERROR)"
    r"|CUDA out of memory|^\[?rank\d+\]?:|^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}[,.]\d+ ",
    re.MULTILINE)
MIN_SLURM_SHARE = 0.3


@lru_cache(maxsize=1)
def has_program_output(head: str) -> bool:
    """PROGRAM_OUTPUT in `head`, searched once: every Slurm sniffer asks it of the same head."""
    return PROGRAM_OUTPUT.search(head) is not None


@lru_cache(maxsize=1)
def head_lines(head: str) -> tuple[str, ...]:
    """The head's lines, split once for all the Slurm sniffers that read the same head (each
    as `unquote_code` gives it)."""
    return tuple(unquote_code(ln) for ln in head.splitlines())


_CODE_QUOTED = re.compile(r"^(\s*)`([^`]*)`(\s*)$")


def unquote_code(line: str) -> str:
    """A line pasted as markdown inline code ("`1488666  batch  OUT_OF_ME+  0:125 `"): its
    backticks become spaces, so that a fixed-width table's columns stay where they were."""
    if "`" not in line:
        return line
    m = _CODE_QUOTED.match(line)
    return f"{m[1]} {m[2]} {m[3]}" if m else line

UNDERLINE = re.compile(r"^\s*-{2,}(?:\s+-{2,})*\s*$")


def mostly_slurm(lines: Sequence[str], ours: int) -> bool:
    """`ours` of the non-empty head `lines` are Slurm output: enough to claim the file?"""
    total = sum(1 for ln in lines if ln.strip())
    return total > 0 and ours / total >= MIN_SLURM_SHARE


def table_share(lines: Sequence[str], header_at: int, is_row: Callable[[str], bool]) -> int:
    """The header lines[header_at] and the rows right after it (an underline counts too)."""
    count = 1
    for line in lines[header_at + 1:]:
        if not (is_row(line) or UNDERLINE.match(line)):
            break
        count += 1
    return count


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
    if not text or text.strip().lower() in NONE_VALUES:
        return None, Clock.none
    return _cached_time(text, ctx.clock.tz_name, ctx.clock.year)


@lru_cache(maxsize=65536)  # a sacct dump repeats the same start/end times many times
def _cached_time(text: str, tz_name: str, year: int) -> tuple[datetime | None, Clock]:
    hit = parse_iso(text, ClockPolicy(tz_name=tz_name, year=year))
    return (hit[0], hit[1]) if hit else (None, Clock.none)


@lru_cache(maxsize=16384)
def cached_nodes(text: str | None) -> tuple[str, ...]:
    return tuple(expand_nodelist(text))


def nodes_of(text: str | None) -> list[str]:
    return list(cached_nodes(text))


def none_if_empty(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if value.lower() in NONE_VALUES else value


def iso_of(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts else None
