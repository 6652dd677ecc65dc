"""The GPU driver's messages: Xid / SXid, fallen off the bus, GSP, RmInitAdapter,
PCIe AER on a GPU, the device plugin's XidCriticalError.
"""

from __future__ import annotations

import re
from typing import Any

import goodput_agent.parsing.kernel_log.vocab as vocab
from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.kernel_log.finding import Finding, int_or_none, norm_pci
from goodput_agent.parsing.kernel_log.prefixes import (
    EXCERPT_CHARS,
)
from goodput_agent.parsing.kernel_log.xid_catalog import DISRUPTIVE_RECOVERY, lookup, parse_xid154

_XID = re.compile(r"NVRM: Xid \((?P<where>[^)]{0,48})\):\s*(?P<code>\d{1,4})\b,?\s*(?P<rest>.*)")
_XID_PID = re.compile(r"pid=(?P<pid>'?<?[\w-]*>?'?)\s*,?\s*")
_XID_NAME = re.compile(r"name=(?P<name>[^,]{0,64}),?\s*")
_SXID = re.compile(r"SXid \((?P<where>[^)]{0,48})\):\s*(?P<code>\d{1,6}),\s*(?P<sev>[\w-]+)"
                   r",?\s*(?P<rest>.*)")
_FALLEN = re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?(?P<pci>[0-9a-fA-F:.]{5,20}):? (?:GPU )?"
                     r"has fallen off the bus")
GPU_AT = re.compile(r"NVRM: GPU at PCI:(?P<pci>[0-9a-fA-F:.]{5,20}): (?P<uuid>GPU-[^\s,]+)")
_GPU_INSTANCE = re.compile(r"NVRM: GPU(?P<idx>\d{1,3})\b")
_RESET_REQUIRED = re.compile(r"NV_ERR_RESET_REQUIRED|\bReset required\b")
_RMINIT = re.compile(r"NVRM: (?:GPU (?P<pci>[0-9a-fA-F:.]{5,20}): )?RmInitAdapter failed!?\s*"
                     r"(?P<rest>.*)")
DRIVER = re.compile(r"NVRM: loading NVIDIA UNIX .{0,80}?(?P<ver>\d{3}\.\d{1,3}(?:\.\d{1,3})?)")
_DEVPLUGIN = re.compile(r"XidCriticalError: Xid=(?P<code>\d{1,4})(?: on Device=(?P<dev>[^\s,;]+))?")


def _xid_fields(rest: str) -> tuple[int | None, str | None, str]:
    pid = name = None
    m = _XID_PID.match(rest)
    if m:
        pid, rest = int_or_none(m["pid"]), rest[m.end():]
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


def match_gsp(msg: str) -> Finding | None:
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


def match_aer(msg: str) -> Finding | None:
    hit = vocab.match_aer(msg)
    if hit is None:
        return None
    role, category, summary, detail = hit
    pci = norm_pci(detail.get("pci"))
    return Finding(kind=vocab.AER_KIND, role=role, category=category, summary=summary, gpu=pci,
                   detail=detail, merge=("aer", pci or "?"))


def match_gpu_driver(msg: str) -> Finding | None:
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


def match_device_plugin(msg: str) -> Finding | None:
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
