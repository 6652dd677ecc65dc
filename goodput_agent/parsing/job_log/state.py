"""What the line readers share: the events found so far, per-stream state, the clock."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from goodput_agent.core.events import Clock, EventKind, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log.megatron_timers import TimerBlocks
from goodput_agent.parsing.job_log.prefixes import LinePrefix, parse_time_text
from goodput_agent.parsing.job_log.traceback_text import Frame

FORMAT = "job_log"
EXCERPT_CHARS = 500
MESSAGE_CHARS = 1000


@dataclass(slots=True)
class Pending:
    kind: EventKind
    role: Role
    category: str | None
    summary: str
    line_start: int
    line_end: int
    excerpt: str
    prefix: LinePrefix
    ts: datetime | None = None
    clock: Clock = Clock.none
    detail: dict[str, Any] = field(default_factory=dict)
    rank: int | None = None  # an explicit global rank (torchelastic summary, srun task)
    local: int | None = None  # an explicit local rank (torchelastic agent lines)
    node: str | None = None
    host_pid: tuple[str, int] | None = None
    msg_rank: int | None = None  # "[Rank N]" with no PG: a fallback only


@dataclass(slots=True)
class OpenTraceback:
    start: int
    frames: list[Frame] = field(default_factory=list)
    frame_indent: int = 0
    chained: bool = False
    entry: ElasticEntry | None = None
    lines_seen: int = 0


@dataclass(slots=True)
class ElasticEntry:
    root: bool
    start: int
    end: int
    prefix: LinePrefix
    excerpt: str
    fields: dict[str, str] = field(default_factory=dict)
    exc: tuple[str, str] | None = None


@dataclass(slots=True)
class Stream:
    tb: OpenTraceback | None = None
    chain_pending: bool = False
    watchdog: Pending | None = None
    section: str | None = None  # torchelastic summary: "root" / "other"
    entry: ElasticEntry | None = None


def line_excerpt(line: str) -> str:
    return line.rstrip()[:EXCERPT_CHARS]


class LineState:
    """Per-file state the line readers write into; events wait here until ranks are resolved."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.policy = ctx.clock
        self.pending: list[Pending] = []
        self.streams: dict[tuple[int | str | None, ...], Stream] = {}
        # the latest timestamp text seen (parsed only when an event needs it)
        self.time_src: str | None = None
        self.own_time = False  # the current line carries time_src itself
        self._parsed: tuple[str | None, tuple[datetime, Clock] | None] = (None, None)
        self.lines_read = 0
        # sets: NCCL_DEBUG=INFO repeats the same host / pid / rank on thousands of lines
        self.comm_inits: set[tuple[str, int, int, int, int | None, str | None, LinePrefix]] = set()
        self.prefixed_hosts: set[tuple[LinePrefix, str, int, str]] = set()  # prefix, host, pid, dev
        self.pairs: set[tuple[int | None, int, int]] = set()  # (label, local, global)
        self.elastic_hosts: dict[int, str] = {}  # rank -> host from torchelastic summaries
        self.tf_own: set[str] = set()  # this process's host by TF_CONFIG's task
        self.locals_seen: set[int] = set()
        self.labels_are_nodes = False
        self.srun_task_hosts: dict[int, str] = {}
        self.prefixed = False  # any line carried a rank/launcher prefix
        self.world: set[int] = set()
        self.facts: dict[str, Any] = {}
        self.watchdog_seen: set[tuple[Any, ...]] = set()
        self.timers = TimerBlocks()  # Megatron's --timing-log-level blocks
        # per line
        self.lineno = 0
        self.line = ""
        self.prefix = LinePrefix()

    def current_time(self) -> tuple[datetime, Clock] | None:
        """The current line's own time, else the last one before it (Clock.carried)."""
        if self.time_src is None:
            return None
        if self._parsed[0] != self.time_src:
            self._parsed = (self.time_src, parse_time_text(self.time_src, self.policy))
        hit = self._parsed[1]
        if hit is None or self.own_time:
            return hit
        return hit[0], Clock.carried

    def add(self, kind: EventKind, role: Role, category: str | None, summary: str,
            detail: dict[str, Any] | None = None, **kw: Any) -> Pending:
        ts, clock = self.current_time() or (None, Clock.none)
        p = Pending(kind, role, category, summary, kw.pop("line_start", self.lineno),
                    kw.pop("line_end", self.lineno), kw.pop("excerpt", line_excerpt(self.line)),
                    kw.pop("prefix", self.prefix), ts, clock, detail or {}, **kw)
        self.pending.append(p)
        return p

    def _entry_identity(self, e: ElasticEntry) -> dict[str, Any]:
        out: dict[str, Any] = {"prefix": e.prefix}
        if m := re.match(r"(\d+)(?: \(local_rank: (\d+)\))?", e.fields.get("rank", "")):
            out["rank"] = int(m[1])
            if m[2] is not None:
                self.pairs.add((e.prefix.label, int(m[2]), int(m[1])))
        if host := e.fields.get("host"):
            out["node"] = host
        return out
