"""Kernel logs: dmesg, journalctl -k, syslog / kern.log, and the Xid lines that monitors repeat.

Each line is read as <time prefix> <message>; a file can mix prefixes. Prefixes understood:
journalctl `short` ("May 15 23:09:27 host kernel: msg"), `short-precise` (".123456"),
`short-iso` ("2024-05-15T23:09:27+0000 host kernel: msg"), `short-monotonic` ("[ 5.1] host
kernel: msg"), syslog files with the kernel's uptime after the tag ("kernel: [680111.646286]"),
dmesg raw ("[  170.053881] msg"), dmesg -T ("[Sun Jan 11 09:52:01 2026] msg"), dmesg
--time-format iso ("2025-01-21T04:41:44,283302+00:00 msg"), dmesg --decode ("kern  :warn  : "),
/dev/kmsg records, gpud ("[XID found] (54 minutes ago) \"NVRM: ...\""), the k8s device plugin
(Go log / klog), a bare "kernel: " tag, a syslog line quoted inside other text, and no time.

Only lines that carry one of MARKERS are decoded (scan_lines); of those, the messages below
become Events, everything else is skipped: NVIDIA Xid / SXid lines, GPU fallen off the bus,
GSP "reset required", RmInitAdapter failures, device-plugin XidCriticalError, OOM kills (global
and memory cgroup; oom-kill / Killed process / oom_reaper lines of one kill merge into one
Event), segfaults and traps, NIC link / module / watchdog faults, kernel panics, machine checks,
EDAC uncorrected errors, hung tasks and lockups (context). The driver's faults that carry no
Xid number (GPU fallen off the bus in its own words, GSP heartbeat / RPC timeouts, memory-
subsystem errors, NVLink training failures), Xid 45 "caused by previous Xid N", and PCIe AER
errors the GPU cannot recover from are read by kernel_vocab.

Clocks: wall-clock prefixes are placed with the ClockPolicy. Lines that carry only the uptime
(raw dmesg) are placed with a boot anchor (wall - uptime) when the same file has lines with
both; a file spanning reboots gets one anchor per boot. Otherwise they stay Clock.none with
detail["uptime_s"].
"""

from __future__ import annotations

import re
import statistics
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from goodput_agent.analysis.xid_catalog import DISRUPTIVE_RECOVERY, lookup, parse_xid154
from goodput_agent.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing import kernel_vocab as vocab
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.lines import LineCount, read_head, scan_lines, strip_ansi
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

_MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"

# --- line prefixes ----------------------------------------------------------------------------

_DECODE = re.compile(r"(?P<fac>kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|"
                     r"ftp|local[0-7])\s*:\s*(?P<lvl>emerg|alert|crit|err|warn|notice|info|"
                     r"debug)\s*:\s?")
_PRIO = re.compile(r"<\d{1,3}>")
_KMSG = re.compile(r"\d{1,3},\d+,(?P<us>\d+),[-c+]*(?:,[^;]*)?;")
_ISO_TS = re.compile(r"(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
                     r"(?:Z|[+-]\d{2}:?\d{2})?)\s+")
_MON_TS = re.compile(rf"(?P<ts>{_MONTHS}\s+\d{{1,2}}\s+\d{{2}}:\d{{2}}:\d{{2}}"
                     r"(?P<frac>\.\d{1,9})?)\s+")
_CTIME_TS = re.compile(r"\[(?P<ts>(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s+[A-Z][a-z]{2}\s+\d{1,2}\s+"
                       r"\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?\s+\d{4})\]\s?")
_UPTIME = re.compile(r"\[\s*(?P<up>\d{1,10}\.\d{1,9})\]\s?")
_RELTIME = re.compile(r"\[\s*\+\d{1,10}\.\d{1,9}\]\s?")  # dmesg -H / --reltime: a delta, no time
_HOST_IDENT = re.compile(r"(?P<host>[A-Za-z0-9][\w.-]{0,252})\s+(?P<ident>[\w./@-]{1,64})"
                         r"(?:\[(?P<pid>\d+)\])?:(?:\s+|$)")
_GOLOG = re.compile(r"(?P<ts>\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)\s+")
_KLOG = re.compile(r"(?P<ts>[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{1,9})\s+\d+\s+[\w./-]+:\d+\]\s")
_GPUD = re.compile(r"\[(?P<tag>[A-Za-z][\w ]{0,30})\]\s+\((?P<age>[^)]{1,40}?\bago)\)\s+"
                   r"\"(?P<inner>.*?)\"?\s*$")
_EMBEDDED = re.compile(rf"{_MONTHS}\s+\d{{1,2}}\s+\d{{2}}:\d{{2}}:\d{{2}}(?:\.\d{{1,9}})?\s+"
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
    decode = _DECODE.match(s)
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


# --- messages -----------------------------------------------------------------------------------

@dataclass(slots=True)
class Finding:
    kind: EventKind
    role: Role
    category: str | None
    summary: str
    gpu: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    merge: tuple[str, str] | None = None  # lines with the same key nearby are one Event


_PCI = re.compile(r"(?:(?P<dom>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})"
                  r"(?:\.[0-7])?")
_XID = re.compile(r"NVRM: Xid \((?P<where>[^)]{0,48})\):\s*(?P<code>\d{1,4})\b,?\s*(?P<rest>.*)")
_XID_PID = re.compile(r"pid=(?P<pid>'?<?[\w-]*>?'?)\s*,?\s*")
_XID_NAME = re.compile(r"name=(?P<name>[^,]{0,64}),?\s*")
_SXID = re.compile(r"SXid \((?P<where>[^)]{0,48})\):\s*(?P<code>\d{1,6}),\s*(?P<sev>[\w-]+)"
                   r",?\s*(?P<rest>.*)")
_FALLEN = re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?(?P<pci>[0-9a-fA-F:.]{5,20}):? (?:GPU )?"
                     r"has fallen off the bus")
_GPU_AT = re.compile(r"NVRM: GPU at PCI:(?P<pci>[0-9a-fA-F:.]{5,20}): (?P<uuid>GPU-[^\s,]+)")
_GPU_INSTANCE = re.compile(r"NVRM: GPU(?P<idx>\d{1,3})\b")
_RESET_REQUIRED = re.compile(r"NV_ERR_RESET_REQUIRED|\bReset required\b")
_RMINIT = re.compile(r"NVRM: (?:GPU (?P<pci>[0-9a-fA-F:.]{5,20}): )?RmInitAdapter failed!?\s*"
                     r"(?P<rest>.*)")
_DRIVER = re.compile(r"NVRM: loading NVIDIA UNIX .{0,80}?(?P<ver>\d{3}\.\d{1,3}(?:\.\d{1,3})?)")
_DEVPLUGIN = re.compile(r"XidCriticalError: Xid=(?P<code>\d{1,4})(?: on Device=(?P<dev>[^\s,;]+))?")

_OOM_KILL = re.compile(r"(?:(?P<scope>Memory cgroup out of memory|Out of memory"
                       r"(?: \(oom_kill_allocating_task\))?):\s+)?Kill(?:ed)? process "
                       r"(?P<pid>\d+) \((?P<proc>[^)]{0,64})\)(?P<rest>.*)")
_OOM_CONSTRAINT = re.compile(r"oom-kill:constraint=(?P<constraint>[A-Z_]+)(?P<rest>.*)")
_OOM_TASK = re.compile(r"[,\s]task=(?P<proc>[^,]{0,64}),pid=(?P<pid>\d+)")
_OOM_MEMCG = re.compile(r"[,\s]oom_memcg=(?P<memcg>[^,]{0,512})")
_OOM_INVOKED = re.compile(r"(?P<proc>\S[^:]{0,63}?) invoked oom-killer: (?P<rest>.*)")
_OOM_REAPER = re.compile(r"oom_reaper: reaped process (?P<pid>\d+) \((?P<proc>[^)]{0,64})\)")
_KB = re.compile(r"(?P<k>total-vm|anon-rss|file-rss|shmem-rss|pgtables):(?P<v>\d+)kB")
_SCORE = re.compile(r"oom_score_adj[:=](?P<v>-?\d+)")

_SEGV = re.compile(r"(?P<proc>[^\s\[\]][^\[\]]{0,63}?)\[(?P<pid>\d+)\]: segfault at "
                   r"(?P<addr>[0-9a-fA-F]+) ip (?P<ip>[0-9a-fA-F]+) sp (?P<sp>[0-9a-fA-F]+) "
                   r"error (?P<err>-?\d+)(?P<rest>.*)")
_SEGV_IN = re.compile(r" in (?P<lib>[^\s\[]{1,200})\[")
_TRAP = re.compile(r"traps: (?P<proc>[^\[\]]{1,64}?)\[(?P<pid>\d+)\] (?P<what>general protection "
                   r"fault|trap [a-z ]{1,40}?|int3)(?: ip[: ]| in |$|\s)")

_NIC_DEV = re.compile(r"(?P<drv>[\w-]{1,32}) (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}"
                      r"\.[0-7])(?: (?P<ifname>[^:\s]{1,32}))?: (?P<rest>.*)")
_NIC_OLD = re.compile(r"(?P<drv>[\w-]{1,32}): (?P<ifname>[\w.@-]{1,32}) NIC Link is Down")
_IFNAME = re.compile(r"(?:\w+: )?(?P<ifname>[A-Za-z][\w.@-]{0,31}):? ")
# network interface names (eth0, ens1f0np0, enp65s0, ib0, ibp12s0, bond0, hsn0, ...)
_NET_IF = re.compile(r"(?:eth|en[opsx]|eno|ib|bond|team|em|p\d+p|hsn|mlx|roce|efa|wan|lan)\w*$")
_NOT_NIC = ("pcieport", "ahci", "nvme", "xhci_hcd", "ehci", "usb", "ata", "scsi", "sd ")
_LINK_DOWN = re.compile(r"\b(?:NIC )?[Ll]ink (?:is )?(?:[Dd]own|DOWN)\b|"
                        r"link status definitely down")
_PORT_MODULE = re.compile(r"Port module event(?:\[(?P<sev>\w+)\])?: module (?P<module>\d+), "
                          r"(?P<status>[^,]{1,64})(?:, (?P<err>.{0,120}))?")
_WATCHDOG = re.compile(r"NETDEV WATCHDOG: (?P<ifname>[^\s:]{1,32}) ?(?:\((?P<drv>[^)]{1,32})\))?:"
                       r" transmit (?:queue (?P<queue>\d+) )?timed out")
_TX_TIMEOUT = re.compile(r"TX timeout on queue: (?P<queue>\d+)")
_IB_PORT_DOWN = re.compile(r"IB_EVENT_PORT_ERR|\bPORT_ERR\b|"
                           r"\bstate (?:changed )?to (?:PORT_)?DOWN\b")
_IB_PORT_NO = re.compile(r"\b[Pp]ort:? ?(?P<port>\d{1,3})\b")
_IB_HCA = re.compile(r"\b(?P<hca>mlx\d_\d+|bnxt_re\d+|irdma\d+|efa_\d+|hfi1_\d+)\b")
_VIRTUAL_IF = ("veth", "docker", "br-", "virbr", "cni", "flannel", "cali", "tap", "tun", "lo",
               "vxlan", "kube-", "weave", "genev", "vnet", "wg")
_RDMA_DRIVERS = ("mlx5", "mlx4", "bnxt", "irdma", "efa", "ib", "hfi1", "qedr", "cxgb4")

_PANIC = re.compile(r"Kernel panic - not syncing:? ?(?P<why>.{0,200})")
_HUNG = re.compile(r"INFO: task (?P<proc>.{1,64}?):(?P<pid>\d+) blocked for more than "
                   r"(?P<secs>\d+) seconds")
_SOFT = re.compile(r"BUG: soft lockup - CPU#(?P<cpu>\d+) stuck for (?P<secs>\d+)s!"
                   r"(?: \[(?P<proc>[^\]]{0,64}?):(?P<pid>\d+)\])?")
_HARD = re.compile(r"hard LOCKUP on cpu (?P<cpu>\d+)")
_EDAC_UE = re.compile(r"EDAC (?P<mc>\w{1,16}): (?P<count>\d+) UE (?P<rest>.{0,200})")


def norm_pci(text: str | None) -> str | None:
    """'PCI:0000:3B:00.0' / '00000000:3b:00' / '3b:00' -> '0000:3b:00'; None when not an id."""
    if not text:
        return None
    m = _PCI.search(text)
    if not m:
        return None
    dom = int(m["dom"], 16) if m["dom"] else 0
    return f"{dom:04x}:{m['bus'].lower()}:{m['dev'].lower()}"


def _int_or_none(text: str | None) -> int | None:
    text = (text or "").strip("'")
    return int(text) if text.isdigit() else None


def _xid_fields(rest: str) -> tuple[int | None, str | None, str]:
    pid = name = None
    m = _XID_PID.match(rest)
    if m:
        pid, rest = _int_or_none(m["pid"]), rest[m.end():]
    m = _XID_NAME.match(rest)
    if m:
        name, rest = m["name"].strip(), rest[m.end():]
        if name.startswith("<"):
            name = None
    return pid, name, rest.strip()


def _xid_finding(code: int, gpu: str | None, detail: dict[str, Any], what: str) -> Finding:
    info = lookup(code)
    role, category, weight = info.role, info.category, info.weight
    if code == 154:
        rec = parse_xid154(detail.get("message", ""))
        if rec:
            detail["recovery_action"] = rec.action
            detail["recovery_label"] = rec.label
            if rec.action in DISRUPTIVE_RECOVERY:  # the only sign left of a GPU that needs service
                role, category, weight = Role.primary, "gpu_hardware", 0.7
    detail.update(name=info.name, meaning=info.meaning, origin=info.origin, action=info.action,
                  fatal=info.fatal, weight=weight)
    who = f", pid {detail['pid']}" if detail.get("pid") is not None else ""
    who += f" ({detail['process']})" if detail.get("process") else ""
    return Finding(kind=EventKind.xid, role=role,
                   category=category if role != Role.context else None, gpu=gpu,
                   summary=f"{what} {code} ({info.meaning}) on GPU {gpu or '?'}{who}",
                   detail=detail)


def match_xid(msg: str) -> Finding | None:
    """The Finding of an `NVRM: Xid (...)` line, or None: only the Xid line itself (no derived
    Xid, such as "fallen off the bus"); callers outside the parser, like node-health, use it."""
    m = _XID.search(msg)
    if not m:
        return None
    code = int(m["code"])
    pid, name, message = _xid_fields(m["rest"])
    gpu = norm_pci(m["where"])
    detail: dict[str, Any] = {"xid": code, "pci": gpu, "pid": pid, "process": name,
                              "message": message[:EXCERPT_CHARS]}
    f = _xid_finding(code, gpu, detail, "Xid")
    if code == 79:
        f.merge = ("bus", gpu or "?")
    cause = vocab.XID45_CAUSE.search(message) if code == 45 else None
    if cause:  # the channel was torn down by an earlier fault: that fault is the story
        info = lookup(int(cause["code"]))
        if info.role == Role.primary:
            f.role, f.category = Role.primary, info.category
            f.detail.update(caused_by_xid=info.code, weight=round(info.weight * 0.9, 2))
            f.summary += f", caused by Xid {info.code} ({info.meaning})"
    return f


def _fallen(gpu: str | None) -> Finding:
    f = _xid_finding(79, gpu, {"xid": 79, "pci": gpu, "message": "GPU has fallen off the bus",
                               "derived_from": "fallen_off_the_bus"}, "Xid")
    f.summary = f"GPU {gpu or '?'} has fallen off the bus (Xid 79)"
    f.merge = ("bus", gpu or "?")
    return f


def _match_gsp(msg: str) -> Finding | None:
    hit = vocab.match_gsp(msg)
    if hit is None:
        return None
    fault, summary, detail = hit
    key = ("gsp", detail["gpu_instance"])
    if fault == "gsp_timeout":
        f = _xid_finding(119, None, {"xid": 119, "derived_from": fault, **detail}, "Xid")
    else:
        f = Finding(kind=EventKind.gpu_device_unhealthy, role=Role.primary,
                    category="gpu_hardware", summary=summary,
                    detail={"fault": fault, "source": "nvidia driver", **detail})
        key = ("nvlink", detail["gpu_instance"]) if fault.startswith("nvlink") else key
    f.summary, f.merge = summary, key
    return f


def _match_aer(msg: str) -> Finding | None:
    hit = vocab.match_aer(msg)
    if hit is None:
        return None
    role, category, summary, detail = hit
    pci = norm_pci(detail.get("pci"))
    return Finding(kind=vocab.AER_KIND, role=role, category=category, summary=summary, gpu=pci,
                   detail=detail, merge=("aer", pci or "?"))


def _match_gpu_driver(msg: str) -> Finding | None:
    m = vocab.FALLEN_OFF.search(msg)
    if m:
        return _fallen(norm_pci(m["pci"]))
    m = _FALLEN.search(msg)
    if m:
        gpu = norm_pci(m["pci"])
        f = _xid_finding(79, gpu, {"xid": 79, "pci": gpu, "message": "GPU has fallen off the bus",
                                   "derived_from": "fallen_off_the_bus"}, "Xid")
        f.summary = f"GPU {gpu or '?'} has fallen off the bus (Xid 79)"
        f.merge = ("bus", gpu or "?")
        return f
    if _RESET_REQUIRED.search(msg) and "NVRM" in msg:
        inst = _GPU_INSTANCE.search(msg)
        key = inst["idx"] if inst else "?"
        return Finding(kind=EventKind.gpu_reset_required, role=Role.primary,
                       category="gpu_hardware", merge=("reset", key),
                       summary="GPU driver reports NV_ERR_RESET_REQUIRED: the GPU needs a reset",
                       detail={"gpu_instance": int(key) if inst else None, "weight": 0.9,
                               "error": "NV_ERR_RESET_REQUIRED"})
    m = _RMINIT.search(msg)
    if m:
        gpu = norm_pci(m["pci"])
        return Finding(kind=EventKind.gpu_device_unhealthy, role=Role.primary,
                       category="gpu_hardware", gpu=gpu, merge=("rminit", gpu or "?"),
                       summary=f"GPU {gpu or '?'} failed to initialize (RmInitAdapter failed)",
                       detail={"pci": gpu, "error": m["rest"].strip()[:200], "weight": 0.7,
                               "source": "nvidia driver"})
    m = _SXID.search(msg)
    if m:
        code, sev = int(m["code"]), m["sev"]
        fatal = sev.lower() == "fatal"
        return Finding(kind=EventKind.other, role=Role.primary if fatal else Role.context,
                       category="gpu_hardware" if fatal else None, gpu=None,
                       summary=f"NVSwitch SXid {code} ({sev})",
                       detail={"sxid": code, "severity": sev, "switch_pci": norm_pci(m["where"]),
                               "message": m["rest"].strip()[:300], "weight": 0.8 if fatal
                               else 0.1, "fault": "nvswitch_sxid"})
    return None


def _match_device_plugin(msg: str) -> Finding | None:
    m = _DEVPLUGIN.search(msg)
    if not m:
        return None
    code, dev = int(m["code"]), m["dev"]
    info = lookup(code)
    return Finding(kind=EventKind.gpu_device_unhealthy, role=info.role,
                   category=info.category if info.role != Role.context else None, gpu=dev,
                   summary=f"device plugin marked {dev or 'all GPUs'} unhealthy after Xid {code} "
                           f"({info.meaning})",
                   detail={"xid": code, "device": dev, "source": "k8s-device-plugin",
                           "name": info.name, "action": info.action, "weight": info.weight})


def _oom_numbers(rest: str) -> dict[str, Any]:
    out: dict[str, Any] = {k.replace("-", "_") + "_kb": int(v) for k, v in _KB.findall(rest)}
    sc = _SCORE.search(rest)
    if sc:
        out["oom_score_adj"] = int(sc["v"])
    return out


def _oom_event(cgroup: bool, pid: int | None, proc: str | None, detail: dict[str, Any],
               ) -> Finding:
    kind = EventKind.cgroup_oom if cgroup else EventKind.host_oom_kill
    scope = "memory cgroup limit" if cgroup else "host out of memory"
    detail.update(pid=pid, process=proc, scope="cgroup" if cgroup else "host", weight=1.0)
    return Finding(kind=kind, role=Role.primary, category="host_oom", merge=("oom", str(pid)),
                   summary=f"kernel OOM killer ({scope}) killed {proc or '?'} (pid {pid})",
                   detail=detail)


def _match_oom(msg: str) -> Finding | None:
    m = _OOM_CONSTRAINT.search(msg)
    if m:
        task = _OOM_TASK.search(m["rest"])
        memcg = _OOM_MEMCG.search(m["rest"])
        detail: dict[str, Any] = {"constraint": m["constraint"]}
        if memcg:
            detail["memcg"] = memcg["memcg"]
        return _oom_event(m["constraint"] == "CONSTRAINT_MEMCG", int(task["pid"]) if task else None,
                          task["proc"] if task else None, detail)
    m = _OOM_KILL.search(msg)
    if m:
        cgroup = bool(m["scope"] and m["scope"].startswith("Memory cgroup"))
        f = _oom_event(cgroup, int(m["pid"]), m["proc"], _oom_numbers(m["rest"]))
        f.detail["unscoped"] = m["scope"] is None
        return f
    m = _OOM_REAPER.search(msg)
    if m:
        pid = int(m["pid"])
        return Finding(kind=EventKind.other, role=Role.context, category=None,
                       merge=("oom", str(pid)),
                       summary=f"oom_reaper reaped {m['proc']} (pid {pid})",
                       detail={"fault": "oom_reaper", "pid": pid, "process": m["proc"],
                               "weight": 0.0})
    m = _OOM_INVOKED.search(msg)
    if m:
        detail = {"fault": "oom_killer_invoked", "process": m["proc"].strip(), "weight": 0.0}
        detail.update({k: v for k, v in re.findall(r"(gfp_mask|order)=([^,\s]+)", m["rest"])})
        detail.update(_oom_numbers(m["rest"]))
        return Finding(kind=EventKind.other, role=Role.context, category=None,
                       summary=f"{detail['process']} invoked the OOM killer", detail=detail)
    return None


def _match_segfault(msg: str) -> Finding | None:
    m = _SEGV.search(msg) if "segfault at" in msg else None
    if m:
        lib = _SEGV_IN.search(m["rest"])
        pid, proc = int(m["pid"]), m["proc"].strip()
        where = f" in {lib['lib']}" if lib else ""
        return Finding(kind=EventKind.segfault, role=Role.primary, category="application_error",
                       summary=f"{proc} (pid {pid}) segfault{where}",
                       detail={"pid": pid, "process": proc, "address": m["addr"], "ip": m["ip"],
                               "error": int(m["err"]), "library": lib["lib"] if lib else None,
                               "weight": 0.9})
    m = _TRAP.search(msg) if "traps: " in msg else None
    if m:
        pid, proc = int(m["pid"]), m["proc"].strip()
        lib = _SEGV_IN.search(msg[m.end() - 1:])
        return Finding(kind=EventKind.segfault, role=Role.primary, category="application_error",
                       summary=f"{proc} (pid {pid}) {m['what']}",
                       detail={"pid": pid, "process": proc, "trap": m["what"],
                               "library": lib["lib"] if lib else None, "weight": 0.8})
    return None


def _nic(fault: str, summary: str, weight: float, **detail: Any) -> Finding:
    detail = {k: v for k, v in detail.items() if v is not None}
    return Finding(kind=EventKind.link_down, role=Role.primary, category="network_fault",
                   summary=summary, detail={"fault": fault, "weight": weight, **detail},
                   merge=("nic", f"{fault}:{detail.get('pci') or detail.get('ifname') or '?'}"))


def _not_a_nic(msg: str, drv: str | None) -> bool:
    """SATA / PCIe hotplug / USB links also go down; those are not the network."""
    return ("SATA" in msg or "pciehp" in msg or msg.startswith(_NOT_NIC)
            or bool(drv and drv.startswith(_NOT_NIC)))


def _nic_weight(drv: str | None) -> float:
    return 0.8 if drv and drv.lower().startswith(_RDMA_DRIVERS) else 0.6


def _match_nic(msg: str) -> Finding | None:
    dev = _NIC_DEV.match(msg)
    drv = dev["drv"] if dev else None
    pci = norm_pci(dev["pci"]) if dev else None
    ifname = dev["ifname"] if dev else None
    m = _PORT_MODULE.search(msg)
    if m:
        status = m["status"].strip()
        if "unplugged" in status.lower() or m["sev"] == "error" or "error" in status.lower():
            fault = "module_unplugged" if "unplugged" in status.lower() else "module_error"
            err = f", {m['err']}" if m["err"] else ""
            return _nic(fault, f"{pci or drv or 'NIC'} module {m['module']}: {status}{err}",
                        0.8, driver=drv, pci=pci, module=int(m["module"]), status=status,
                        error=m["err"])
        return None
    m = _WATCHDOG.search(msg)
    if m:
        return _nic("netdev_watchdog", f"{m['ifname']}: transmit queue timed out (NETDEV "
                    "WATCHDOG)", _nic_weight(m["drv"]), driver=m["drv"], ifname=m["ifname"],
                    queue=_int_or_none(m["queue"]))
    m = _TX_TIMEOUT.search(msg)
    if m:
        return _nic("tx_timeout", f"{ifname or pci or 'NIC'}: TX timeout on queue {m['queue']}",
                    _nic_weight(drv), driver=drv, pci=pci, ifname=ifname,
                    queue=int(m["queue"]))
    if "health compromised" in msg:
        return _nic("health_compromised", f"{pci or drv or 'NIC'}: device health "
                    "compromised (firmware stopped responding)", 0.9, driver=drv, pci=pci)
    if _LINK_DOWN.search(msg) and not _not_a_nic(msg, drv):
        if not dev:
            old = _NIC_OLD.search(msg)
            ifm = old or _IFNAME.match(msg)
            ifname = ifm["ifname"] if ifm else None
            drv = old["drv"] if old else None
            if not (old or "link status definitely down" in msg
                    or (ifname and _NET_IF.match(ifname))):
                return None
        if ifname and ifname.lower().startswith(_VIRTUAL_IF):
            return None
        return _nic("link_down", f"{ifname or pci or drv or 'NIC'}: link down", _nic_weight(drv),
                    driver=drv, pci=pci, ifname=ifname)
    if _IB_PORT_DOWN.search(msg):
        port = _IB_PORT_NO.search(msg)
        hca = _IB_HCA.search(msg)
        name = hca["hca"] if hca else (pci or drv or "HCA")
        where = f" port {port['port']}" if port else ""
        return _nic("port_down", f"{name}{where} down", 0.8, driver=drv, pci=pci, ifname=ifname,
                    hca=hca["hca"] if hca else None, port=int(port["port"]) if port else None)
    return None


def _context(fault: str, summary: str, **detail: Any) -> Finding:
    return Finding(kind=EventKind.other, role=Role.context, category=None, summary=summary,
                   detail={"fault": fault, "weight": 0.0, **detail})


def _match_node(msg: str) -> Finding | None:
    m = _PANIC.search(msg)
    if m:
        why = m["why"].strip()
        oom = "out of memory" in why.lower()
        return Finding(kind=EventKind.node_fail, role=Role.primary,
                       category="host_oom" if oom else "node_failure",
                       summary=f"kernel panic: {why or '?'}",
                       detail={"fault": "kernel_panic", "reason": why, "weight": 1.0})
    if "[Hardware Error]" in msg:
        if "Machine Check Exception" in msg or "event severity: fatal" in msg:
            return Finding(kind=EventKind.node_fail, role=Role.primary, category="node_failure",
                           summary="uncorrected machine check (CPU / memory hardware error)",
                           detail={"fault": "machine_check", "message": msg[:300],
                                   "weight": 0.9})
        if "Machine check events logged" in msg:
            return _context("machine_check_logged", "corrected machine check events logged")
        return None
    m = _EDAC_UE.search(msg)
    if m:
        return Finding(kind=EventKind.node_fail, role=Role.primary, category="node_failure",
                       summary=f"EDAC {m['mc']}: {m['count']} uncorrected memory error(s)",
                       detail={"fault": "edac_ue", "controller": m["mc"],
                               "count": int(m["count"]), "message": m["rest"], "weight": 0.8})
    m = _HUNG.search(msg)
    if m:
        return _context("hung_task", f"task {m['proc']}:{m['pid']} blocked for more than "
                        f"{m['secs']} s", process=m["proc"], pid=int(m["pid"]),
                        seconds=int(m["secs"]))
    m = _SOFT.search(msg)
    if m:
        return _context("soft_lockup", f"soft lockup: CPU#{m['cpu']} stuck for {m['secs']} s",
                        cpu=int(m["cpu"]), seconds=int(m["secs"]), process=m["proc"],
                        pid=_int_or_none(m["pid"]))
    m = _HARD.search(msg)
    if m:
        return _context("hard_lockup", f"hard lockup on CPU {m['cpu']}", cpu=int(m["cpu"]))
    return None


_MATCHERS = (match_xid, _match_gpu_driver, _match_gsp, _match_device_plugin, _match_oom,
             _match_segfault, _match_nic, _match_node, _match_aer)


def classify(msg: str) -> Finding | None:
    """The Event a kernel message stands for, or None (most kernel lines are not events)."""
    msg = msg[:MESSAGE_CHARS]
    if "_kgspLogXid119" in msg:  # the banner around a Xid 119 line, not an Xid of its own
        return None
    for matcher in _MATCHERS:
        hit = matcher(msg)
        if hit is not None:
            return hit
    return None


# --- the file -----------------------------------------------------------------------------------

MERGE_WINDOW_LINES = 5


@dataclass(slots=True)
class _Open:
    event: Event
    uptime: float | None
    host: str | None  # as the line printed it (not the node hint)


class _Builder:
    """Collects Events, merges related lines, then places uptime-only lines on a boot anchor."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.events: list[_Open] = []
        self.recent: dict[tuple[str, str], _Open] = {}
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
        ts = _shift_year(p.wall, self.year_shift)
        if self.last_inferred and ts < self.last_inferred - timedelta(days=180):
            self.year_shift += 1  # Dec -> Jan in a file without years
            ts = _shift_year(p.wall, self.year_shift)
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
        m = _GPU_AT.search(msg)
        if m and (pci := norm_pci(m["pci"])):
            self.gpus[pci] = m["uuid"]
        m = _DRIVER.search(msg)
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
        op = _Open(event=ev, uptime=p.uptime, host=p.host)
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

    def boot_clusters(self) -> list[_Boot]:
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
        return [_Boot(first_line=ln, host=h, boot=statistics.median(bs))
                for ln, h, bs in clusters]

    def place_uptime_lines(self, boots: list[_Boot]) -> None:
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
class _Boot:
    first_line: int
    host: str | None
    boot: float  # epoch seconds


def _shift_year(ts: datetime, years: int) -> datetime:
    if not years:
        return ts
    try:
        return ts.replace(year=ts.year + years)
    except ValueError:  # Feb 29
        return ts + timedelta(days=365 * years)


# --- sniffing ---------------------------------------------------------------------------------

_SHAPES = (
    re.compile(r"\[\s*\d{1,10}\.\d{3,9}\]\s"),  # dmesg, short-monotonic
    re.compile(r"\[\s*\+\d{1,10}\.\d{3,9}\]\s"),  # dmesg -H (relative)
    re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2}\s+\d{1,2} \d{2}:\d{2}:\d{2} "
               r"\d{4}\]\s"),  # dmesg -T
    re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2},\d{6}[+-]\d{2}:?\d{2}\s"),  # dmesg iso
    _DECODE,
    re.compile(r"<\d{1,3}>\[\s*\d+\.\d+\]"),
    re.compile(r"\d{1,3},\d+,\d+,[-c+]*;"),  # /dev/kmsg
    re.compile(rf"(?:{_MONTHS}\s+\d{{1,2}}\s+\d{{2}}:\d{{2}}:\d{{2}}(?:\.\d+)?|\d{{4}}-\d{{2}}-"
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
_SYSLOG_ANY = re.compile(rf"{_MONTHS}\s+\d{{1,2}}\s+\d{{2}}:\d{{2}}:\d{{2}}(?:\.\d+)?\s+\S+\s+"
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


class KernelLogParser:
    format = FORMAT

    def sniff(self, head: str, name: str) -> bool:
        stripped = head.lstrip()
        if stripped.startswith("{") or re.match(r"\[\s*[{\"\]]", stripped):
            return False  # JSON
        lines = [ln.strip()[:MESSAGE_CHARS] for ln in head.splitlines()[:400] if ln.strip()]
        if not lines:
            return False
        shaped = sum(1 for ln in lines if _kernel_shaped(ln))
        n = len(lines)
        if shaped == n or (shaped >= 2 and (shaped * 5 >= n or shaped >= 20)):
            return True
        if shaped >= 1 and _NAME_HINT.search(name):
            return True
        syslog = sum(1 for ln in lines if _SYSLOG_ANY.match(ln))
        return shaped >= 1 and syslog * 2 >= n

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        b = _Builder(ctx)
        try:
            self._read_head(path, b, ctx.clock)
            b.reset_year()
            count = LineCount()
            for lineno, line in scan_lines(path, MARKERS, count):
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
    def _read_head(path: Path, b: _Builder, policy: ClockPolicy) -> None:
        """Formats, hosts and boot anchors from the first 64 KiB (event lines add their own)."""
        raw = read_head(path)
        text = strip_ansi(raw).decode("utf-8", errors="replace")
        lines = text.split("\n")
        if len(raw) >= 64 * 1024:
            lines = lines[:-1]  # possibly cut mid-line
        for i, line in enumerate(lines[:2000], start=1):
            if line.strip():
                b.observe(i, split_prefix(line[:MESSAGE_CHARS], policy))


PARSER = KernelLogParser()
