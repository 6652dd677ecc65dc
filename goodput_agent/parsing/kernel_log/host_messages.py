"""The host's messages: OOM kills, segfaults and traps, NIC and InfiniBand link
faults, panics, machine checks, EDAC, hung tasks and lockups.
"""

from __future__ import annotations

import re
from typing import Any

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.kernel_log.finding import Finding, int_or_none, norm_pci

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


def match_oom(msg: str) -> Finding | None:
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


def match_segfault(msg: str) -> Finding | None:
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


def match_nic(msg: str) -> Finding | None:
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
                    queue=int_or_none(m["queue"]))
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


def match_node(msg: str) -> Finding | None:
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
                        pid=int_or_none(m["pid"]))
    m = _HARD.search(msg)
    if m:
        return _context("hard_lockup", f"hard lockup on CPU {m['cpu']}", cpu=int(m["cpu"]))
    return None
