"""Kernel-log wording the NVIDIA driver and the PCIe core print without an Xid number.

The driver reports several GPU faults in its own words, with no Xid line, or with an Xid line
that only points at an earlier cause:
- a GPU that dropped off PCIe ("NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed
  in this system has fallen off the bus and is not responding to commands.", printed on one line
  or wrapped over three NVRM lines);
- the GSP firmware no longer answering (`_kgspIsHeartbeatTimedOut: Heartbeat timed out`,
  "GSP RM heartbeat timed out", the `_kgspLogRpcTimeout` "GSP Timeout" banner, "Timeout waiting
  for RPC from GSP") and the memory-subsystem check that follows (`kgmmuCheckMemSubsysError`):
  the same class as Xid 119/120, the GPU needs a reset;
- NVLink links that do not train (`knvlink*` "... failed!");
- Xid 45 "caused by previous Xid N": a channel torn down because of fault N, which is the cause.

PCIe AER: an uncorrected (fatal) error on the NVIDIA device's link, or "can't recover" /
"device recovery failed" for it, takes the GPU off the bus; corrected errors are noise.
"""

from __future__ import annotations

import re
from typing import Any

from goodput_agent.core.events import EventKind, Role

# One line or the last of the three wrapped lines; the PCI id is on the first line when wrapped.
FALLEN_OFF = re.compile(r"NVRM: (?:The NVIDIA GPU (?P<pci>[0-9a-fA-F:.]{7,16})\b.{0,80}?)?"
                        r"(?:installed in this system )?(?:has )?fallen off the bus and is not "
                        r"responding to commands")
NVIDIA_GPU_LINE = re.compile(r"NVRM: The NVIDIA GPU (?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:"
                             r"[0-9a-fA-F]{2}\.[0-7])")
_GPU_INSTANCE = re.compile(r"NVRM: GPU(?P<idx>\d{1,3})\b")
_GSP_TIMEOUT = re.compile(
    r"_kgspIsHeartbeatTimedOut|GSP RM heartbeat timed out|\bGSP Timeout\b|"
    r"Timeout (?:after \d+s )?(?:of )?waiting for RPC (?:response )?from (?:GPU\d+ )?GSP")
_MEMSYS = re.compile(r"kgmmuCheckMemSubsysError\w*: (?P<what>Memory Subsystem Error[^.]*)")
_NVLINK_TRAINING = re.compile(r"NVRM: (?:GPU\d+ )?(?P<fn>knvlink\w+): (?P<what>.{0,120}?failed!?)")
XID45_CAUSE = re.compile(r"caused by previous Xid (?P<code>\d{1,4})")

_AER_FATAL = re.compile(r"AER: (?:Multiple )?Uncorrected \(Fatal\) error received|"
                        r"severity=Uncorrected \(Fatal\)")
_AER_GIVE_UP = re.compile(r"AER: can't recover|AER: device recovery failed")
_NVIDIA_DEV = re.compile(r"^nvidia (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): ")


def gpu_instance(msg: str) -> str:
    m = _GPU_INSTANCE.search(msg)
    return m["idx"] if m else "?"


def match_gsp(msg: str) -> tuple[str, str, dict[str, Any]] | None:
    """(fault, summary, detail) for GSP-firmware and memory-subsystem faults in an NVRM line."""
    if "NVRM" not in msg:
        return None
    inst = gpu_instance(msg)
    if _GSP_TIMEOUT.search(msg):
        return ("gsp_timeout", f"GPU{inst}: the GSP firmware stopped answering (heartbeat / RPC "
                "timeout, the class of Xid 119)", {"gpu_instance": inst, "weight": 0.85})
    if m := _MEMSYS.search(msg):
        return ("memory_subsystem_error", f"GPU{inst}: {m['what'].strip()}",
                {"gpu_instance": inst, "weight": 0.85})
    if m := _NVLINK_TRAINING.search(msg):
        return ("nvlink_training_failed", f"NVLink training failed ({m['fn']}: "
                f"{m['what'].strip()})", {"gpu_instance": inst, "function": m["fn"],
                                          "weight": 0.6})
    return None


def match_aer(msg: str) -> tuple[Role, str | None, str, dict[str, Any]] | None:
    """(role, category, summary, detail) for a PCIe AER line; None for corrected errors."""
    if "AER" not in msg and "PCIe Bus Error" not in msg:
        return None
    nvidia = _NVIDIA_DEV.match(msg)
    if nvidia and _AER_GIVE_UP.search(msg):
        pci = nvidia["pci"]
        return (Role.primary, "gpu_hardware", f"PCIe error on GPU {pci}: the link cannot recover",
                {"fault": "pcie_aer_unrecoverable", "pci": pci, "weight": 0.85})
    if _AER_FATAL.search(msg):
        # which device sits behind the port is on other lines: the fatal error alone is context
        return (Role.context, None, "PCIe uncorrected (fatal) error reported by a port",
                {"fault": "pcie_aer_fatal", "weight": 0.0})
    return None


AER_KIND = EventKind.gpu_device_unhealthy


def settle_oom(events: list[Any]) -> None:
    """OOM-killer lines that name no kill of their own stand for the kill when the file has none.

    "invoked oom-killer" names the allocating process, not the victim, and the oom_reaper line
    follows a kill: both are context next to a "Killed process" line. A file (or excerpt) that
    holds them without any kill line on that host still shows a host OOM kill; the reaper names
    the victim, the invocation only the allocator (weaker).
    """
    killed_hosts = {e.node for e in events
                    if e.role == Role.primary and e.category == "host_oom"}
    lone = [e for e in events if e.role == Role.context and e.node not in killed_hosts
            and e.detail.get("fault") in ("oom_reaper", "oom_killer_invoked")]
    reaped_hosts = {e.node for e in lone if e.detail["fault"] == "oom_reaper"}
    for e in lone:
        reaper = e.detail["fault"] == "oom_reaper"
        if not reaper and e.node in reaped_hosts:
            continue
        e.role, e.category, e.kind = Role.primary, "host_oom", EventKind.host_oom_kill
        e.detail["weight"] = 0.8 if reaper else 0.5
        e.detail["scope"] = "host"
        if reaper:
            e.summary = f"kernel OOM killer killed {e.detail.get('process') or '?'} " \
                        f"(pid {e.detail.get('pid')}; seen from oom_reaper)"
        else:
            e.summary = f"kernel OOM killer invoked by {e.detail.get('process') or '?'} " \
                        "(the victim's line is not in the log)"
