"""The registry's kernel_log parser: which files are kernel logs, and reading one."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import goodput_agent.parsing.kernel_log.vocab as vocab
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.kernel_log.builder import KernelEvents
from goodput_agent.parsing.kernel_log.classify import classify
from goodput_agent.parsing.kernel_log.prefixes import (
    DECODE,
    FORMAT,
    MESSAGE_CHARS,
    MONTHS,
    split_prefix,
)
from goodput_agent.parsing.lines import (
    LineCount,
    cut_rows_continue,
    hard_wrap_width,
    read_head,
    rejoined_lines,
    scan_lines,
    sniff_lines,
    strip_ansi,
)
from goodput_agent.parsing.timefmt import (
    ClockPolicy,
)

MARKERS: tuple[bytes, ...] = (
    b"NVRM", b"Xid",  # GPU driver, gpud, device plugin (XidCriticalError), NVSwitch SXid
    b"Kill process", b"Killed process", b"oom-kill:", b"invoked oom-killer", b"oom_reaper",
    b"segfault at", b"traps: ",
    b"Link down", b"link down", b"Link DOWN", b"Link is Down", b"Link is down",
    b"link status definitely down",
    b"Port module event", b"NETDEV WATCHDOG", b"TX timeout on queue", b"health compromised",
    b"PORT_ERR", b"state changed to DOWN",
    b"Kernel panic", b"Hardware Error", b"EDAC", b"blocked for more than", b"soft lockup",
    b"hard LOCKUP", b"AER:", b"PCIe Bus Error",
)
_SHAPES = (
    re.compile(r"\[\s*\d{1,10}\.\d{3,9}\]\s"),  # dmesg, short-monotonic
    re.compile(r"\[\s*\+\d{1,10}\.\d{3,9}\]\s"),  # dmesg -H (relative)
    re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2}\s+\d{1,2} \d{2}:\d{2}:\d{2} "
               r"\d{4}\]\s"),  # dmesg -T
    re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2},\d{6}[+-]\d{2}:?\d{2}\s"),  # dmesg iso
    DECODE,
    re.compile(r"<\d{1,3}>\[\s*\d+\.\d+\]"),
    re.compile(r"\d{1,3},\d+,\d+,[-c+]*;"),  # /dev/kmsg
    re.compile(rf"(?:{MONTHS}\s+\d{{1,2}}\s+\d{{2}}:\d{{2}}:\d{{2}}(?:\.\d+)?|\d{{4}}-\d{{2}}-"
               r"\d{2}T\S+)\s+\S+\s+kernel:\s"),  # journalctl / syslog, kernel tag
    re.compile(r"\[[A-Za-z][\w ]{0,30}\] \(\d+ \w+ ago\) \"NVRM: "),  # gpud
    # a kernel message without any prefix (pasted, or `dmesg --notime`): only the kernel prints
    # these words at the start of a line
    re.compile(r"NVRM: |nvidia-nvswitch\d+: SXid \("),
    re.compile(r"(?:Memory cgroup out of memory|Out of memory(?: \(oom_kill_allocating_task\))?)"
               r": Kill(?:ed)? process \d+ \(|Killed process \d+ \(.{1,64}\) total-vm:|"
               r"oom-kill:constraint=|oom_reaper: reaped process \d+ \("),
    re.compile(r"\S{1,64} invoked oom-killer: gfp_mask="),
)
_SHAPES_ANYWHERE = (
    re.compile(r"(?:^|\s)kernel: (?:\[\s*\d+\.\d+\] )?NVRM: "),
    re.compile(r"\skernel: \[\s*\d+\.\d+\] "),
    re.compile(r"XidCriticalError: Xid=\d+"),
)
_SYSLOG_ANY = re.compile(rf"{MONTHS}\s+\d{{1,2}}\s+\d{{2}}:\d{{2}}:\d{{2}}(?:\.\d+)?\s+\S+\s+"
                         r"[\w./@-]+(?:\[\d+\])?:\s")
_NAME_HINT = re.compile(r"dmesg|kern|syslog|messages|journal|kmsg|device.?plugin", re.IGNORECASE)


def _either(patterns: tuple[re.Pattern[str], ...]) -> re.Pattern[str]:
    """One pattern for several: a sniff tries hundreds of lines of every file in a bundle."""
    return re.compile("|".join(f"(?:{p.pattern})" for p in patterns))


_SHAPE_AT_START, _SHAPE_INSIDE = _either(_SHAPES), _either(_SHAPES_ANYWHERE)


def _kernel_shaped(line: str) -> bool:
    # every _SHAPES_ANYWHERE pattern holds one of these words: an unanchored search is costly
    return bool(_SHAPE_AT_START.match(line) or (("kernel: " in line or "XidCriticalError" in line)
                                                and _SHAPE_INSIDE.search(line)))


_DEVICE_PLUGIN = re.compile(r"XidCriticalError: Xid=\d+")


class KernelLogParser:
    format = FORMAT

    def sniff(self, head: str, name: str) -> bool:
        stripped = head.lstrip()
        if stripped.startswith("{") or re.match(r"\[\s*[{\"\]]", stripped):
            return False  # JSON
        lines = [ln[:MESSAGE_CHARS] for ln in sniff_lines(head)]
        if not lines:
            return False
        shaped = sum(1 for ln in lines if _kernel_shaped(ln))
        n = len(lines)
        if shaped == n or (shaped >= 2 and (shaped * 5 >= n or shaped >= 20)):
            return True
        if shaped >= 1 and (_NAME_HINT.search(name) or _DEVICE_PLUGIN.search(head)):
            return True  # the device plugin's XidCriticalError line is printed by nothing else
        syslog = sum(1 for ln in lines if _SYSLOG_ANY.match(ln))
        return shaped >= 1 and syslog * 2 >= n

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        b = KernelEvents(ctx)
        try:
            head = self._read_head(path, b, ctx.clock)
            b.reset_year()
            count = LineCount()
            for lineno, line in _marked_lines(path, head, count):
                p = split_prefix(line, ctx.clock)
                wall = b.observe(lineno, p)
                b.facts_from(p.msg)
                f = classify(p.msg)
                if f is not None:
                    b.add(lineno, line, p, wall, f)
            lines_read = count.lines
        except (OSError, EOFError, zlib.error) as exc:
            raise ParseError(f"cannot read {ctx.rel_path} as a kernel log: "
                             f"{type(exc).__name__}: {exc}".splitlines()[0]) from exc
        clusters = b.boot_clusters()
        b.place_uptime_lines(clusters)
        b.fill_nodes()
        boots = [datetime.fromtimestamp(c.boot, UTC).isoformat() for c in clusters]
        facts: dict[str, Any] = {"hosts": sorted(b.hosts), "formats": list(b.formats),
                                 "boot_time": boots[0] if boots else None, "boot_times": boots,
                                 "gpus": b.gpus, "driver_versions": list(b.drivers)}
        events = [op.event for op in b.events]
        vocab.settle_oom(events)
        return ParseResult(format=FORMAT, events=events, facts=facts, lines_read=lines_read)

    @staticmethod
    def _read_head(path: Path, b: KernelEvents, policy: ClockPolicy) -> str:
        """Formats, hosts and boot anchors from the first 64 KiB (event lines add their own);
        returns that head's text."""
        raw = read_head(path)
        text = strip_ansi(raw).decode("utf-8", errors="replace")
        lines = text.split("\n")
        if len(raw) >= 64 * 1024:
            lines = lines[:-1]  # possibly cut mid-line
        for i, line in enumerate(lines[:2000], start=1):
            if line.strip():
                b.observe(i, split_prefix(line[:MESSAGE_CHARS], policy))
        return text


def _marked_lines(path: Path, head: str, count: LineCount) -> Iterator[tuple[int, str]]:
    """The lines holding a marker; in a copy cut at a terminal's width (pasted from a
    terminal), each line rejoined first, so that words split across rows still match."""
    width = hard_wrap_width(head)
    if width is None or not cut_rows_continue(head, width, _kernel_shaped):
        yield from scan_lines(path, MARKERS, count)
        return
    for lineno, line in rejoined_lines(path, width, _kernel_shaped, count):
        if any(m in line for m in _MARKER_TEXT):
            yield lineno, line


_MARKER_TEXT = tuple(m.decode() for m in MARKERS)
PARSER = KernelLogParser()
