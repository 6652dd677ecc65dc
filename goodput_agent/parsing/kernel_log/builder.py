"""One file's findings as events: OOM-kill lines merged, uptime lines placed per boot."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import goodput_agent.parsing.kernel_log.vocab as vocab
from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.kernel_log.finding import Finding, norm_pci
from goodput_agent.parsing.kernel_log.gpu_messages import (
    DRIVER,
    GPU_AT,
)
from goodput_agent.parsing.kernel_log.prefixes import (
    EXCERPT_CHARS,
    LinePrefix,
)

MERGE_WINDOW_LINES = 5


@dataclass(slots=True)
class OpenFinding:
    event: Event
    uptime: float | None
    host: str | None  # as the line printed it (not the node hint)


class KernelEvents:
    """Collects Events, merges related lines, then places uptime-only lines on a boot anchor."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.events: list[OpenFinding] = []
        self.recent: dict[tuple[str, str], OpenFinding] = {}
        self.anchors: dict[int, tuple[str | None, float]] = {}  # line -> (host, boot epoch)
        self.hosts: dict[str, None] = {}
        self.formats: dict[str, None] = {}
        self.gpus: dict[str, str] = {}
        self.drivers: dict[str, None] = {}
        self.seen_gpud: set[tuple[Any, ...]] = set()
        self.year_shift = 0
        self.last_inferred: datetime | None = None
        self.named_gpu: str | None = None  # "NVRM: The NVIDIA GPU <pci>" (a wrapped message)

    def _wall(self, p: LinePrefix) -> datetime | None:
        if p.wall is None or p.clock != Clock.inferred_year:
            return p.wall
        ts = shift_year(p.wall, self.year_shift)
        if self.last_inferred and ts < self.last_inferred - timedelta(days=180):
            self.year_shift += 1  # Dec -> Jan in a file without years
            ts = shift_year(p.wall, self.year_shift)
        self.last_inferred = ts
        return ts

    def observe(self, lineno: int, p: LinePrefix) -> datetime | None:
        """Facts every line contributes (format, host, boot anchor); returns its wall time."""
        self.formats.setdefault(p.fmt, None)
        if p.host:
            self.hosts.setdefault(p.host, None)
        wall = self._wall(p)
        if wall is not None and p.uptime is not None:
            self.anchors[lineno] = (p.host, wall.timestamp() - p.uptime)
        return wall

    def facts_from(self, msg: str) -> None:
        m = GPU_AT.search(msg)
        if m and (pci := norm_pci(m["pci"])):
            self.gpus[pci] = m["uuid"]
        m = DRIVER.search(msg)
        if m:
            self.drivers.setdefault(m["ver"], None)
        m = vocab.NVIDIA_GPU_LINE.search(msg)
        if m:
            self.named_gpu = norm_pci(m["pci"])

    def add(self, lineno: int, line: str, p: LinePrefix, wall: datetime | None,
            f: Finding) -> None:
        if f.gpu is None and f.detail.get("derived_from") == "fallen_off_the_bus":
            f.gpu = self.named_gpu  # the wrapped form names the GPU on its first line
            f.detail["pci"] = f.gpu
            f.summary = f"GPU {f.gpu or '?'} has fallen off the bus (Xid 79)"
            f.merge = ("bus", f.gpu or "?")
        detail = dict(f.detail)
        if p.uptime is not None:
            detail["uptime_s"] = p.uptime
        if p.extra:
            detail.update({k: v for k, v in p.extra.items() if k not in detail})
        detail.setdefault("line_format", p.fmt)
        if p.fmt == "gpud":
            key = (detail.get("xid"), f.gpu, detail.get("pid"), p.extra.get("relative_age"))
            if key in self.seen_gpud:  # gpud repeats one kernel line from dmesg and kmsg
                return
            self.seen_gpud.add(key)
        if f.merge and self._merge(lineno, line, f, detail):
            return
        excerpt = line.rstrip()[:EXCERPT_CHARS]
        ev = Event(kind=f.kind, role=f.role, category=f.category, ts=wall,
                   clock=p.clock if wall is not None else Clock.none,
                   node=p.host or self.ctx.node_hint, gpu=f.gpu,
                   summary=f.summary, excerpt=excerpt, detail=detail,
                   locator=Locator(path=self.ctx.rel_path, line_start=lineno, line_end=lineno))
        op = OpenFinding(event=ev, uptime=p.uptime, host=p.host)
        self.events.append(op)
        if f.merge:
            self.recent[f.merge] = op

    def _merge(self, lineno: int, line: str, f: Finding, detail: dict[str, Any]) -> bool:
        assert f.merge is not None
        op = self.recent.get(f.merge)
        if op is None or lineno - op.event.locator.line_end > MERGE_WINDOW_LINES:
            return False
        ev = op.event
        if ev.role == Role.context and f.role != Role.context:
            return False  # a failure after its own context line stands as its own Event
        merged = ev.detail.setdefault("merged", [])
        merged.append(detail.get("fault") or detail.get("derived_from") or f.kind.value)
        if f.role != Role.context:
            for k, v in detail.items():
                if v is not None and ev.detail.get(k) is None:
                    ev.detail[k] = v
            if f.kind == EventKind.cgroup_oom and ev.kind != f.kind:
                ev.kind, ev.summary = f.kind, f.summary
                ev.detail["scope"] = "cgroup"
            if f.kind == EventKind.xid and detail.get("derived_from") is None:
                ev.summary = f.summary  # prefer the Xid line's own wording
        ev.locator.line_end = max(ev.locator.line_end, lineno)
        ev.excerpt = (ev.excerpt + "\n" + line.rstrip())[:EXCERPT_CHARS]
        return True

    def fill_nodes(self) -> None:
        """Lines without a host field belong to the file's host when it names only one."""
        if len(self.hosts) != 1:
            return
        (only,) = self.hosts
        for op in self.events:
            if op.host is None:
                op.event.node = only

    def reset_year(self) -> None:
        self.year_shift, self.last_inferred = 0, None

    def boot_clusters(self) -> list[Boot]:
        """One anchor per host and boot: anchors of a host more than 60 s apart are reboots."""
        clusters: list[tuple[int, str | None, list[float]]] = []
        last: dict[str | None, tuple[int, float]] = {}  # host -> (cluster, running mean)
        for ln in sorted(self.anchors):
            host, b = self.anchors[ln]
            cur = last.get(host)
            if cur is not None and abs(b - cur[1]) <= 60:
                samples = clusters[cur[0]][2]
                samples.append(b)
                last[host] = (cur[0], cur[1] + (b - cur[1]) / len(samples))
            else:
                last[host] = (len(clusters), b)
                clusters.append((ln, host, [b]))
        return [Boot(first_line=ln, host=h, boot=statistics.median(bs))
                for ln, h, bs in clusters]

    def place_uptime_lines(self, boots: list[Boot]) -> None:
        hosts = {c.host for c in boots}
        for op in self.events:
            ev = op.event
            if ev.ts is not None or op.uptime is None:
                continue
            if op.host is not None:
                cands = [c for c in boots if c.host == op.host]
            else:
                cands = boots if len(hosts) == 1 else []
            if not cands:
                continue
            before = [c for c in cands if c.first_line <= ev.locator.line_start]
            boot = (before[-1] if before else cands[0]).boot
            ev.ts = datetime.fromtimestamp(boot + op.uptime, UTC)
            ev.clock = Clock.uptime


@dataclass(slots=True)
class Boot:
    first_line: int
    host: str | None
    boot: float  # epoch seconds


def shift_year(ts: datetime, years: int) -> datetime:
    if not years:
        return ts
    try:
        return ts.replace(year=ts.year + years)
    except ValueError:  # Feb 29
        return ts + timedelta(days=365 * years)
