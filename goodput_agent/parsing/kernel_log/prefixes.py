"""The time prefix of a kernel log line (journalctl, syslog, dmesg and its options,
/dev/kmsg, gpud, the device plugin's Go log / klog) and the message after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from goodput_agent.core.events import Clock
from goodput_agent.parsing.timefmt import (
    ClockPolicy,
    parse_ctime,
    parse_glog,
    parse_iso,
    parse_syslog,
)

FORMAT = "kernel_log"
EXCERPT_CHARS = 500
MESSAGE_CHARS = 2048  # printk lines are at most ~1 KiB; longer text is not a kernel message
MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
DECODE = re.compile(r"(?P<fac>kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|"
                     r"ftp|local[0-7])\s*:\s*(?P<lvl>emerg|alert|crit|err|warn|notice|info|"
                     r"debug)\s*:\s?")
_PRIO = re.compile(r"<\d{1,3}>")
_KMSG = re.compile(r"\d{1,3},\d+,(?P<us>\d+),[-c+]*(?:,[^;]*)?;")
_ISO_TS = re.compile(r"(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
                     r"(?:Z|[+-]\d{2}:?\d{2})?)\s+")
_MON_TS = re.compile(rf"(?P<ts>{MONTHS}\s+\d{{1,2}}\s+\d{{2}}:\d{{2}}:\d{{2}}"
                     r"(?P<frac>\.\d{1,9})?)\s+")
_CTIME_TS = re.compile(r"\[(?P<ts>(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s+[A-Z][a-z]{2}\s+\d{1,2}\s+"
                       r"\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?\s+\d{4})\]\s?")
# journalctl -o short-full: "Wed 2026-09-23 13:50:09 UTC host kernel: ..." (the zone an
# abbreviation: UTC/GMT are read as such, any other as the bundle's own zone)
_FULL_TS = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:"
                      r"\d{2}(?:\.\d{1,9})?) (?P<tz>[A-Z]{2,5}|[+-]\d{4})\s+")
_UPTIME = re.compile(r"\[\s*(?P<up>\d{1,10}\.\d{1,9})\]\s?")
_RELTIME = re.compile(r"\[\s*\+\d{1,10}\.\d{1,9}\]\s?")  # dmesg -H / --reltime: a delta, no time
_HOST_IDENT = re.compile(r"(?P<host>[A-Za-z0-9][\w.-]{0,252})\s+(?P<ident>[\w./@-]{1,64})"
                         r"(?:\[(?P<pid>\d+)\])?:(?:\s+|$)")
_GOLOG = re.compile(r"(?P<ts>\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)\s+")
_KLOG = re.compile(r"(?P<ts>[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{1,9})\s+\d+\s+[\w./-]+:\d+\]\s")
_GPUD = re.compile(r"\[(?P<tag>[A-Za-z][\w ]{0,30})\]\s+\((?P<age>[^)]{1,40}?\bago)\)\s+"
                   r"\"(?P<inner>.*?)\"?\s*$")
_EMBEDDED = re.compile(rf"{MONTHS}\s+\d{{1,2}}\s+\d{{2}}:\d{{2}}:\d{{2}}(?:\.\d{{1,9}})?\s+"
                       r"[A-Za-z0-9][\w.-]{0,252}\s+kernel:\s")
_KERNEL_TAG = re.compile(r"kernel:\s+")
_NO_HOST = {"localhost", "(none)", "-"}


@dataclass(slots=True)
class LinePrefix:
    """What the start of a line says: its shape, time, host and the message after it."""

    fmt: str = "none"
    wall: datetime | None = None
    clock: Clock = Clock.none
    host: str | None = None
    uptime: float | None = None
    msg: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _host_ident(p: LinePrefix, rest: str, kernel_only: bool) -> str:
    m = _HOST_IDENT.match(rest)
    if not m or (kernel_only and m["ident"] != "kernel" and m["pid"] is None):
        return rest
    if m["host"] not in _NO_HOST:
        p.host = m["host"]
    if m["ident"] != "kernel":
        p.extra["ident"] = m["ident"]
    rest = rest[m.end():]
    up = _UPTIME.match(rest)
    if up:
        p.uptime = float(up["up"])
        p.fmt += "+uptime"
        rest = rest[up.end():]
    return rest


def _wall_prefix(p: LinePrefix, s: str, policy: ClockPolicy) -> str | None:
    """Strip a time prefix (and the host/tag after it); None when the line has none."""
    m = _ISO_TS.match(s)
    if m:
        hit = parse_iso(m["ts"], policy)
        if hit:
            p.wall, p.clock = hit
            rest = s[m.end():]
            p.fmt = "short-iso"
            out = _host_ident(p, rest, kernel_only=True)
            if out is rest:
                p.fmt = "dmesg-iso" if "," in m["ts"] else "iso"
            return out
    m = _MON_TS.match(s)
    if m:
        hit = parse_syslog(m["ts"], policy)
        if hit:
            p.wall, p.clock = hit
            p.fmt = "short-precise" if m["frac"] else "short"
            return _host_ident(p, s[m.end():], kernel_only=False)
    m = _FULL_TS.match(s)
    if m:
        zone = "Z" if m["tz"] in ("UTC", "GMT") else m["tz"] if m["tz"][0] in "+-" else ""
        hit = parse_iso(m["ts"] + zone, policy)
        if hit:
            p.wall, p.clock = hit
            p.fmt = "short-full"
            return _host_ident(p, s[m.end():], kernel_only=False)
    m = _CTIME_TS.match(s)
    if m:
        hit = parse_ctime(m["ts"], policy)
        if hit:
            p.wall, p.clock = hit
            p.fmt = "dmesg-T"
            return _host_ident(p, s[m.end():], kernel_only=True)
    m = _UPTIME.match(s)
    if m:
        p.uptime = float(m["up"])
        p.fmt = "dmesg"
        rest = s[m.end():]
        hm = _HOST_IDENT.match(rest)
        if hm and hm["ident"] == "kernel":
            p.fmt = "short-monotonic"
            if hm["host"] not in _NO_HOST:
                p.host = hm["host"]
            rest = rest[hm.end():]
        return rest
    m = _RELTIME.match(s)
    if m:
        p.fmt = "dmesg-reltime"
        return s[m.end():]
    m = _KMSG.match(s)
    if m:
        p.uptime = int(m["us"]) / 1e6
        p.fmt = "kmsg"
        return s[m.end():]
    return None


def _tool_prefix(p: LinePrefix, s: str, policy: ClockPolicy) -> str | None:
    """gpud reports and Go / klog lines (the k8s device plugin)."""
    m = _GPUD.match(s)
    if m and m["inner"].startswith("NVRM"):
        p.fmt = "gpud"
        p.extra["relative_age"] = m["age"]
        return m["inner"]
    m = _GOLOG.match(s)
    if m:
        hit = parse_iso(m["ts"].replace("/", "-"), policy)
        if hit:
            p.wall, p.clock = hit
            p.fmt = "go-log"
            return s[m.end():]
    m = _KLOG.match(s)
    if m:
        hit = parse_glog(m["ts"], policy)
        if hit:
            p.wall, p.clock = hit
            p.fmt = "klog"
            return s[m.end():]
    return None


def split_prefix(line: str, policy: ClockPolicy) -> LinePrefix:
    """Read a line's time prefix, host and tag; the rest is the message."""
    s = line.strip()
    p = LinePrefix(msg=s)
    rest = _tool_prefix(p, s, policy)
    if rest is not None:
        p.msg = rest
        return p
    decode = DECODE.match(s)
    if decode:
        p.extra["level"] = decode["lvl"]
        s = s[decode.end():]
    prio = _PRIO.match(s)
    if prio:
        s = s[prio.end():]
    rest = _wall_prefix(p, s, policy)
    if rest is None:
        tag = _KERNEL_TAG.match(s)
        emb = None if tag else _EMBEDDED.search(s[:MESSAGE_CHARS])
        if tag:
            p.fmt, rest = "bare", s[tag.end():]
            up = _UPTIME.match(rest)
            if up:
                p.uptime, rest = float(up["up"]), rest[up.end():]
        elif emb:
            inner = split_prefix(s[emb.start():], policy)
            inner.fmt = "embedded-" + inner.fmt
            inner.extra.update(p.extra)
            return inner
        else:
            p.fmt, rest = "none", s
    if decode:
        p.fmt = "decode:" + p.fmt
    p.msg = rest
    return p
