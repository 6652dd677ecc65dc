"""Kernel-log parser: line prefixes, clocks, events, merging, sniffing, and the real samples."""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goodput_agent.core.events import Clock, EventKind, Role
from goodput_agent.parsing.base import ParseContext, ParseError
from goodput_agent.parsing.kernel_log import PARSER, classify, match_xid, norm_pci, split_prefix
from goodput_agent.parsing.lines import read_head
from goodput_agent.parsing.timefmt import ClockPolicy

SHARED = (Path(__file__).resolve().parents[3] / ".." / "shared").resolve()
REALWORLD = SHARED / "realworld"
POLICY = ClockPolicy(year=2024)


def _parse(tmp_path: Path, text: str | bytes, name: str = "dmesg.log", **ctx):
    path = tmp_path / name
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    return PARSER.parse(path, ParseContext(rel_path=f"nodes/x/{name}", **ctx))


def _realworld(rel: str) -> Path:
    path = REALWORLD / rel
    if not path.exists():
        pytest.skip(f"{path} not available (../shared is only in CI)")
    return path


def _parse_real(rel: str):
    return PARSER.parse(_realworld(rel), ParseContext(rel_path=rel))


# --- line prefixes (one-line fixtures, hand-written in each tool's shape) --------------------

FIXTURE_SHORT = "May 15 23:09:27 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU lost"
FIXTURE_SHORT_PRECISE = "May 15 23:09:27.123456 gpu-node-7 kernel: msg"
FIXTURE_SHORT_ISO = "2024-05-15T23:09:27+0000 gpu-node-7 kernel: msg"
FIXTURE_SHORT_ISO_COLON = "2024-05-15T23:09:27+02:00 gpu-node-7 kernel: msg"
FIXTURE_SHORT_MONOTONIC = "[  514.682838] gpu-node-7 kernel: msg"
# journalctl -o short-full; a zone other than UTC/GMT is read as the bundle's own
FIXTURE_SHORT_FULL = "Wed 2024-05-15 23:09:27 UTC gpu-node-7 kernel: msg"
FIXTURE_SHORT_FULL_LOCAL = "Wed 2024-05-15 23:09:27 CEST gpu-node-7 kernel: msg"
FIXTURE_SYSLOG_UPTIME = "May 19 07:08:57 ip-26-0-146-100 kernel: [680111.646286] NVRM: msg"
FIXTURE_DMESG = "[  170.053881] NVRM: msg"
FIXTURE_DMESG_T = "[Sun Jan 11 09:52:01 2026] NVRM: msg"
FIXTURE_DMESG_T_ONE_DIGIT_DAY = "[Thu Jan  1 09:52:01 2026] msg"
FIXTURE_DMESG_ISO = "2025-01-21T04:41:44,283302+00:00 msg"
FIXTURE_DECODE_ISO = "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 msg"
FIXTURE_DECODE_RAW = "kern  :err   : [    5.000000] msg"
FIXTURE_KMSG = "6,1234,5678901234,-;msg"
FIXTURE_PRIO = "<4>[12347.890123] msg"
FIXTURE_BARE = "kernel: NVRM: msg"
FIXTURE_NO_TIME = "NVRM: msg"
FIXTURE_GPUD = '[XID found] (54 minutes ago) "NVRM: msg"'
FIXTURE_GOLOG = "2020/08/10 19:09:42 XidCriticalError: msg"
FIXTURE_KLOG = "I0810 19:09:42.123456       1 health.go:123] XidCriticalError: msg"
FIXTURE_EMBEDDED = "Xid errors on ip-1, Error: May 19 07:08:57 ip-1 kernel: [680111.646286] msg"


@pytest.mark.parametrize(("line", "fmt", "wall", "clock", "host", "uptime"), [
    (FIXTURE_SHORT, "short", datetime(2024, 5, 15, 23, 9, 27, tzinfo=UTC), Clock.inferred_year,
     "gpu-node-7", None),
    (FIXTURE_SHORT_PRECISE, "short-precise", datetime(2024, 5, 15, 23, 9, 27, 123456, UTC),
     Clock.inferred_year, "gpu-node-7", None),
    (FIXTURE_SHORT_ISO, "short-iso", datetime(2024, 5, 15, 23, 9, 27, tzinfo=UTC),
     Clock.absolute, "gpu-node-7", None),
    (FIXTURE_SHORT_ISO_COLON, "short-iso", datetime(2024, 5, 15, 21, 9, 27, tzinfo=UTC),
     Clock.absolute, "gpu-node-7", None),
    (FIXTURE_SHORT_MONOTONIC, "short-monotonic", None, Clock.none, "gpu-node-7", 514.682838),
    (FIXTURE_SHORT_FULL, "short-full", datetime(2024, 5, 15, 23, 9, 27, tzinfo=UTC),
     Clock.absolute, "gpu-node-7", None),
    (FIXTURE_SHORT_FULL_LOCAL, "short-full", datetime(2024, 5, 15, 23, 9, 27, tzinfo=UTC),
     Clock.local, "gpu-node-7", None),
    (FIXTURE_SYSLOG_UPTIME, "short+uptime", datetime(2024, 5, 19, 7, 8, 57, tzinfo=UTC),
     Clock.inferred_year, "ip-26-0-146-100", 680111.646286),
    (FIXTURE_DMESG, "dmesg", None, Clock.none, None, 170.053881),
    (FIXTURE_DMESG_T, "dmesg-T", datetime(2026, 1, 11, 9, 52, 1, tzinfo=UTC), Clock.local, None,
     None),
    (FIXTURE_DMESG_T_ONE_DIGIT_DAY, "dmesg-T", datetime(2026, 1, 1, 9, 52, 1, tzinfo=UTC),
     Clock.local, None, None),
    (FIXTURE_DMESG_ISO, "dmesg-iso", datetime(2025, 1, 21, 4, 41, 44, 283302, UTC),
     Clock.absolute, None, None),
    (FIXTURE_DECODE_ISO, "decode:dmesg-iso", datetime(2025, 1, 21, 4, 41, 44, 283302, UTC),
     Clock.absolute, None, None),
    (FIXTURE_DECODE_RAW, "decode:dmesg", None, Clock.none, None, 5.0),
    (FIXTURE_KMSG, "kmsg", None, Clock.none, None, 5678.901234),
    (FIXTURE_PRIO, "dmesg", None, Clock.none, None, 12347.890123),
    (FIXTURE_BARE, "bare", None, Clock.none, None, None),
    (FIXTURE_NO_TIME, "none", None, Clock.none, None, None),
    (FIXTURE_GPUD, "gpud", None, Clock.none, None, None),
    (FIXTURE_GOLOG, "go-log", datetime(2020, 8, 10, 19, 9, 42, tzinfo=UTC), Clock.local, None,
     None),
    (FIXTURE_KLOG, "klog", datetime(2024, 8, 10, 19, 9, 42, 123456, UTC), Clock.inferred_year,
     None, None),
    (FIXTURE_EMBEDDED, "embedded-short+uptime", datetime(2024, 5, 19, 7, 8, 57, tzinfo=UTC),
     Clock.inferred_year, "ip-1", 680111.646286),
])
def test_line_prefix(line, fmt, wall, clock, host, uptime):
    p = split_prefix(line, POLICY)
    assert (p.fmt, p.wall, p.clock, p.host, p.uptime) == (fmt, wall, clock, host, uptime)
    assert p.msg.startswith(("NVRM: ", "msg", "XidCriticalError"))


def test_prefix_does_not_take_a_driver_name_for_a_host():
    # dmesg --time-format iso has no host field: "mlx5_core 0000:.." must stay in the message
    p = split_prefix("2025-01-21T04:41:44,283302+00:00 mlx5_core 0000:17:00.0 ens1: Link down",
                     POLICY)
    assert p.host is None and p.msg.startswith("mlx5_core 0000:17:00.0")
    p = split_prefix("2025-01-21T04:41:44,283302+00:00 pt_main_thread[25]: segfault at 0", POLICY)
    assert p.host is None and p.msg.startswith("pt_main_thread[25]")


def test_local_times_use_the_bundle_zone():
    berlin = ClockPolicy(tz_name="Europe/Berlin", year=2024)
    p = split_prefix("[Mon Jul  1 12:00:00 2024] msg", berlin)
    assert p.wall == datetime(2024, 7, 1, 10, 0, tzinfo=UTC) and p.clock == Clock.local
    p = split_prefix("Jul  1 12:00:00 h kernel: msg", berlin)
    assert p.wall == datetime(2024, 7, 1, 10, 0, tzinfo=UTC)
    # a time with an offset ignores the bundle zone
    p = split_prefix("2024-07-01T12:00:00+05:30 h kernel: msg", berlin)
    assert p.wall == datetime(2024, 7, 1, 6, 30, tzinfo=UTC) and p.clock == Clock.absolute


@pytest.mark.parametrize(("text", "want"), [
    ("PCI:0000:3B:00", "0000:3b:00"), ("00000000:3b:00.0", "0000:3b:00"), ("3b:00", "0000:3b:00"),
    ("PCI:0001:6c:00", "0001:6c:00"), ("PCI:...", None), ("", None),
])
def test_norm_pci(text, want):
    assert norm_pci(text) == want


# --- messages ----------------------------------------------------------------------------------

def _c(msg: str):
    hit = classify(msg)
    assert hit is not None, msg
    return hit


def test_xid_old_format():
    f = _c("NVRM: Xid (PCI:0000:01:00): 31, Ch 00000013, engmask 00000101, intr 10000000")
    assert (f.kind, f.role, f.category, f.gpu) == (EventKind.xid, Role.primary,
                                                   "application_error", "0000:01:00")
    assert f.detail["xid"] == 31 and f.detail["pid"] is None
    assert f.detail["message"].startswith("Ch 00000013")
    # the oldest drivers print the bus id without "PCI:"
    assert _c("NVRM: Xid (0000:01:00): 31, Ch 0000000b, engmask 00000120").gpu == "0000:01:00"


def test_xid_new_format():
    f = _c("NVRM: Xid (PCI:0000:c1:00): 31, pid=12890, name=python, Ch 0000003b, intr 00000000. "
           "MMU Fault: ENGINE GRAPHICS")
    assert f.detail["pid"] == 12890 and f.detail["process"] == "python"
    assert f.detail["message"].startswith("Ch 0000003b") and f.gpu == "0000:c1:00"
    f = _c("NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception")
    assert f.detail["pid"] is None and f.detail["process"] is None
    assert f.detail["message"] == "Graphics Exception"


def test_xid_role_comes_from_the_catalog():
    hw = _c("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.")
    assert (hw.role, hw.category, hw.detail["action"], hw.detail["weight"]) == (
        Role.primary, "gpu_hardware", "RESTART_BM", 1.0)
    cleanup = _c("NVRM: Xid (PCI:0000:3b:00): 45, pid=1, name=python, Ch 00000010")
    assert cleanup.role == Role.symptom
    benign = _c("NVRM: Xid (PCI:0000:3b:00): 92, High single-bit ECC error rate")
    assert benign.role == Role.context and benign.category is None
    weak = _c("NVRM: Xid (PCI:0000:38:00): 43, pid=2924364, name=pt_main_thread, Ch 00000008")
    assert weak.role == Role.primary and weak.detail["weight"] < 0.8


def test_xid_154_carries_its_recovery_action():
    f = _c("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
           "(Node Reboot Required)")
    assert f.detail["recovery_action"] == "RESTART_BM"
    assert f.role == Role.primary and f.category == "gpu_hardware"
    f = _c("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset "
           "Required) to 0x0 (None)")
    assert f.detail["recovery_action"] == "IGNORE" and f.role == Role.context


def test_gsp_banner_is_not_an_event_but_the_xid_is():
    assert classify("NVRM: _kgspLogXid119: ******** GSP Timeout ********") is None
    assert classify("NVRM: _kgspLogXid119: Note: Please also check logs above.") is None
    assert _c("NVRM: Xid (PCI:0001:6c:00): 119, pid=10200, name=NvmlTaskRunner, Timeout after "
              "45s of waiting for RPC response from GPU5 GSP!").detail["xid"] == 119


def test_match_xid_is_the_xid_line_matcher_alone():
    line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    f, c = match_xid(line), _c(line)
    assert f is not None and (f.kind, f.gpu, f.detail["xid"]) == (c.kind, c.gpu, 79)
    assert f.summary == c.summary
    # a derived Xid (no Xid line) is the parser's, not the Xid matcher's
    derived = "NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus."
    assert match_xid(derived) is None and _c(derived).detail["xid"] == 79
    assert match_xid("kernel: Out of memory: Killed process 1 (python)") is None


def test_fallen_off_the_bus_and_reset_required():
    f = _c("NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus.")
    assert f.detail["xid"] == 79 and f.gpu == "0000:3b:00" and f.category == "gpu_hardware"
    assert _c("NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.").gpu == "0000:01:00"
    f = _c("NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] "
           "(0x00000062) returned from status @ kernel_channel.c:2874")
    assert (f.kind, f.role, f.category) == (EventKind.gpu_reset_required, Role.primary,
                                            "gpu_hardware")


def test_device_plugin_and_gpud_lines():
    f = _c("XidCriticalError: Xid=69 on Device=GPU-7540a9b3-eeb9, the device will go unhealthy.")
    assert f.kind == EventKind.gpu_device_unhealthy and f.detail["xid"] == 69
    assert f.gpu == "GPU-7540a9b3-eeb9"
    p = split_prefix('[XID found] (54 minutes ago) "NVRM: Xid (PCI:0000:9b:00): 119, pid=4071838, '
                     'name=python, Timeout after 45s"', POLICY)
    f = _c(p.msg)
    assert f.detail["xid"] == 119 and f.detail["process"] == "python"
    assert p.extra["relative_age"] == "54 minutes ago"


def test_oom_lines():
    f = _c("Out of memory: Killed process 123 (python) total-vm:9000kB, anon-rss:4000kB, "
           "file-rss:10kB, shmem-rss:0kB, UID:0 pgtables:100kB oom_score_adj:0")
    assert (f.kind, f.role, f.category) == (EventKind.host_oom_kill, Role.primary, "host_oom")
    assert (f.detail["pid"], f.detail["process"], f.detail["anon_rss_kb"]) == (123, "python",
                                                                              4000)
    f = _c("Memory cgroup out of memory: Killed process 63214 (uwsgi) total-vm:3149468kB, "
           "anon-rss:164992kB, file-rss:52176kB, shmem-rss:92kB, UID:0 pgtables:1372kB "
           "oom_score_adj:986")
    assert f.kind == EventKind.cgroup_oom and f.detail["oom_score_adj"] == 986
    f = _c("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,"
           "global_oom,task_memcg=/user.slice,task=python,pid=4242,uid=1000")
    assert f.kind == EventKind.host_oom_kill and f.detail["pid"] == 4242
    f = _c("uwsgi invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=986")
    assert f.role == Role.context and f.detail["process"] == "uwsgi"
    f = _c("oom_reaper: reaped process 15617 (python3), now anon-rss:0kB, file-rss:0kB")
    assert f.role == Role.context and f.detail["pid"] == 15617
    assert classify("systemd[1]: session-1.scope: Killing process 1234 (bash) with SIGKILL") \
        is None


def test_segfault_and_trap():
    f = _c("pt_main_thread[2536443]: segfault at 7f797fe00000 ip 00007f7c7ac69996 sp "
           "00007f7c12fd7c30 error 4 in libnccl.so.2[7f7c7ac00000+d3d3000]")
    assert (f.kind, f.role, f.category) == (EventKind.segfault, Role.primary, "application_error")
    assert (f.detail["pid"], f.detail["process"], f.detail["library"]) == (
        2536443, "pt_main_thread", "libnccl.so.2")
    f = _c("traps: python[1234] general protection fault ip:7f0 sp:7ff error:0 in libc.so.6[7f0+1]")
    assert f.kind == EventKind.segfault and f.detail["library"] == "libc.so.6"


@pytest.mark.parametrize(("msg", "fault"), [
    ("mlx5_core 0000:17:00.0 ens1f0np0: Link down", "link_down"),
    ("ixgbe 0000:01:00.0 eth0: NIC Link is Down", "link_down"),
    ("e1000e: eth0 NIC Link is Down", "link_down"),
    ("bond0: (slave ens1f0): link status definitely down, disabling slave", "link_down"),
    ("mlx5_core 0000:5c:00.0: Port module event: module 0, Cable unplugged", "module_unplugged"),
    ("mlx5_core 0000:5c:00.0: mlx5_port_module_event:1131:(pid 0): Port module event[error]: "
     "module 0, Cable error, High Temperature", "module_error"),
    ("NETDEV WATCHDOG: ens1f0np0 (mlx5_core): transmit queue 5 timed out", "netdev_watchdog"),
    ("mlx5_core 0000:3b:00.0 ens1: mlx5e_tx_timeout_work:170:(pid 2): TX timeout on queue: 3, "
     "SQ: 0x1", "tx_timeout"),
    ("mlx5_core 0000:3b:00.0: poll_health:800:(pid 0): device's health compromised - reached "
     "miss count", "health_compromised"),
    ("ib_srpt: received IB event IB_EVENT_PORT_ERR on port 1", "port_down"),
])
def test_nic_faults(msg, fault):
    f = _c(msg)
    assert (f.kind, f.role, f.category, f.detail["fault"]) == (
        EventKind.link_down, Role.primary, "network_fault", fault)


@pytest.mark.parametrize("msg", [
    "ata1: SATA link down (SStatus 0 SControl 300)",
    "pcieport 0000:00:01.1: pciehp: Slot(1): Link Down",
    "IPv6: ADDRCONF(NETDEV_CHANGE): veth1234: link is down",
    "mlx5_core 0000:5c:00.0: Port module event: module 0, Cable plugged",
    "mlx5_core 0000:d2:00.0: mlx5_cmd_out_err:838:(pid 1441871): ACCESS_REG(0x805) failed",
    "mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff8105bcb6>",
    "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
    "usb 1-3: new high-speed USB device number 2 using xhci_hcd",
])
def test_not_events(msg):
    assert classify(msg) is None


def test_node_failures_and_context():
    f = _c("Kernel panic - not syncing: Fatal hardware error!")
    assert (f.kind, f.role, f.category) == (EventKind.node_fail, Role.primary, "node_failure")
    f = _c("mce: [Hardware Error]: CPU 2: Machine Check Exception: 5 Bank 4: be00000000800400")
    assert (f.kind, f.category) == (EventKind.node_fail, "node_failure")
    assert _c("mce: [Hardware Error]: Machine check events logged").role == Role.context
    assert _c("EDAC MC1: 1 UE memory read error on CPU_SrcID#1").category == "node_failure"
    hung = _c("INFO: task python3:4321 blocked for more than 120 seconds.")
    assert hung.role == Role.context and hung.detail["fault"] == "hung_task"
    assert hung.detail["pid"] == 4321
    lock = _c("watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python:1234]")
    assert lock.role == Role.context and lock.detail["pid"] == 1234


def test_nvswitch_sxid_severity():
    assert _c("nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 24007, Fatal, Link 44 sourcetrack "
              "timeout error").role == Role.primary
    assert _c("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress "
              "non-posted PRIV error").role == Role.context


# --- whole files -------------------------------------------------------------------------------

def test_syslog_uptime_anchors_pure_dmesg_lines(tmp_path):
    # kern.log lines carry wall clock + uptime; the appended raw dmesg lines carry only uptime
    text = ("May 15 23:09:27 node1 kernel: [  500.000000] eth0: renamed\n"
            "May 15 23:09:37 node1 kernel: [  510.000000] Memory cgroup out of memory: Killed "
            "process 42 (python) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB\n"
            "[  600.500000] NVRM: Xid (PCI:0000:3b:00): 79, pid=7, name=python, GPU has fallen "
            "off the bus.\n")
    r = _parse(tmp_path, text, name="kern.log", clock=POLICY)
    boot = datetime(2024, 5, 15, 23, 1, 7, tzinfo=UTC)  # 23:09:27 - 500 s
    assert r.facts["boot_time"] == boot.isoformat()
    oom, xid = r.events
    assert oom.clock == Clock.inferred_year and oom.ts == datetime(2024, 5, 15, 23, 9, 37,
                                                                   tzinfo=UTC)
    assert xid.clock == Clock.uptime and xid.ts == boot + timedelta(seconds=600.5)
    assert xid.detail["uptime_s"] == 600.5 and xid.node == "node1"
    assert r.facts["formats"] == ["short+uptime", "dmesg"]
    assert r.lines_read == 3


def test_raw_dmesg_without_anchor_stays_unplaced(tmp_path):
    r = _parse(tmp_path, "[  170.053881] NVRM: Xid (PCI:0000:01:00): 31, Ch 00000013\n",
               node_hint="gpu-node-3")
    (e,) = r.events
    assert e.ts is None and e.clock == Clock.none and e.detail["uptime_s"] == 170.053881
    assert e.node == "gpu-node-3"  # no host field: the node folder's name
    assert r.facts["boot_time"] is None


def test_one_anchor_per_boot(tmp_path):
    text = ("May 15 10:00:00 n1 kernel: [  100.000000] booted\n"
            "[  200.000000] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n"
            "May 15 12:00:00 n1 kernel: [   50.000000] booted again\n"
            "[   60.000000] NVRM: Xid (PCI:0000:01:00): 48, An uncorrectable double bit error\n")
    r = _parse(tmp_path, text, name="kern.log", clock=POLICY)
    assert len(r.facts["boot_times"]) == 2
    first, second = r.events
    assert first.ts == datetime(2024, 5, 15, 10, 1, 40, tzinfo=UTC)
    assert second.ts == datetime(2024, 5, 15, 12, 0, 10, tzinfo=UTC)


def test_dmesg_T_and_iso_clocks_in_one_file(tmp_path):
    text = ("[Sun Jan 11 09:52:01 2026] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset "
            "required [NV_ERR_RESET_REQUIRED] (0x00000062)\n"
            "kern  :warn  : 2025-01-21T04:41:44,285060+02:00 pt_main_thread[25]: segfault at 0 "
            "ip 0 sp 0 error 4 in libnccl.so.2[7f+1]\n")
    r = _parse(tmp_path, text, clock=ClockPolicy(tz_name="America/New_York", year=2024))
    reset, segv = r.events
    assert reset.clock == Clock.local and reset.ts == datetime(2026, 1, 11, 14, 52, 1, tzinfo=UTC)
    assert segv.clock == Clock.absolute
    assert segv.ts == datetime(2025, 1, 21, 2, 41, 44, 285060, tzinfo=UTC)


def test_year_rollover_without_years(tmp_path):
    text = ("Dec 31 23:59:59 n1 kernel: NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off.\n"
            "Jan  1 00:00:05 n1 kernel: NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off.\n")
    r = _parse(tmp_path, text, name="syslog", clock=ClockPolicy(year=2023))
    assert [e.ts.year for e in r.events] == [2023, 2024]


def test_hosts_from_the_host_field_over_the_node_hint(tmp_path):
    text = ("May 15 23:09:27 gpu-a kernel: NVRM: Xid (PCI:0000:01:00): 48, DBE\n"
            "2024-05-15T23:09:28+00:00 gpu-b kernel: NVRM: Xid (PCI:0000:02:00): 48, DBE\n"
            "May 15 23:09:29 localhost kernel: NVRM: Xid (PCI:0000:03:00): 48, DBE\n")
    r = _parse(tmp_path, text, node_hint="folder-node", clock=POLICY)
    assert [e.node for e in r.events] == ["gpu-a", "gpu-b", "folder-node"]
    assert r.facts["hosts"] == ["gpu-a", "gpu-b"]


def test_oom_kill_lines_merge_into_one_event(tmp_path):
    text = ("[ 7093.543707] python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, "
            "oom_score_adj=0\n"
            "[ 7093.543711] CPU: 4 PID: 63635 Comm: python Not tainted 5.4.0-77-generic\n"
            "[ 7093.600000] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=c1,"
            "mems_allowed=0,oom_memcg=/kubepods/pod1,task_memcg=/kubepods/pod1/c1,task=python,"
            "pid=63635,uid=0\n"
            "[ 7093.600100] Memory cgroup out of memory: Killed process 63635 (python) total-vm:"
            "3149468kB, anon-rss:164992kB, file-rss:52176kB, shmem-rss:92kB, UID:0 pgtables:1372kB"
            " oom_score_adj:0\n"
            "[ 7093.610000] oom_reaper: reaped process 63635 (python), now anon-rss:0kB\n")
    r = _parse(tmp_path, text)
    invoked, kill = r.events
    assert invoked.role == Role.context and invoked.locator.line_start == 1
    assert kill.kind == EventKind.cgroup_oom and kill.role == Role.primary
    assert (kill.locator.line_start, kill.locator.line_end) == (3, 5)
    assert kill.detail["memcg"] == "/kubepods/pod1" and kill.detail["anon_rss_kb"] == 164992
    assert kill.detail["merged"] == ["cgroup_oom", "oom_reaper"]
    assert "oom_reaper" in kill.excerpt and len(kill.excerpt) <= 500


def test_xid79_and_fallen_off_line_are_one_event(tmp_path):
    text = ("[ 10.0] NVRM: GPU at PCI:0000:3b:00: GPU-1234abcd-0000\n"
            "[ 11.0] NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus.\n"
            "[ 11.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=99, name=python, GPU has fallen off the "
            "bus.\n"
            "[ 12.0] NVRM: Xid (PCI:0000:5e:00): 79, pid=99, name=python, GPU has fallen off the "
            "bus.\n")
    r = _parse(tmp_path, text)
    assert len(r.events) == 2
    first = r.events[0]
    assert (first.locator.line_start, first.locator.line_end) == (2, 3)
    assert first.detail["pid"] == 99 and first.summary.startswith("Xid 79")
    assert r.facts["gpus"] == {"0000:3b:00": "GPU-1234abcd-0000"}


def test_gpud_repeats_of_one_line_are_one_event(tmp_path):
    line = ('"NVRM: Xid (PCI:0000:9b:00): 119, pid=4071838, name=python, Timeout after 45s of '
            'waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL)."')
    text = (f"[XID found] (54 minutes ago) {line}\n[XID found] (10 minutes ago) {line}\n"
            f"[nvidia xid] (54 minutes ago) {line[:-20]}\n")
    r = _parse(tmp_path, text, name="gpud.log")
    assert [e.locator.line_start for e in r.events] == [1, 2]


def test_gzip_file(tmp_path):
    path = tmp_path / "dmesg.log.gz"
    path.write_bytes(gzip.compress(b"[ 1.0] ok\n[ 2.0] NVRM: Xid (PCI:0000:01:00): 95, x\n"))
    r = PARSER.parse(path, ParseContext(rel_path="dmesg.log.gz"))
    assert [e.detail["xid"] for e in r.events] == [95] and r.lines_read == 2


def test_unreadable_files_raise_one_line_parse_error(tmp_path):
    with pytest.raises(ParseError) as err:
        PARSER.parse(tmp_path / "missing.log", ParseContext(rel_path="missing.log"))
    assert "\n" not in str(err.value)
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage-not-deflate" * 10)
    with pytest.raises(ParseError):
        PARSER.parse(bad, ParseContext(rel_path="bad.log.gz"))


def test_10mb_single_line(tmp_path):
    body = b"[ 1.0] NVRM: Xid (PCI:0000:01:00): 79, " + b"x" * (10 * 1024 * 1024)
    r = _parse(tmp_path, body, name="huge.log")
    (e,) = r.events
    assert e.detail["xid"] == 79 and len(e.excerpt) <= 500 and r.lines_read == 1


def test_binary_file(tmp_path):
    rnd = bytearray(os.urandom(3 * 1024 * 1024))
    for i in range(0, len(rnd), 300_000):  # sprinkle markers into the noise
        rnd[i:i + 24] = b"NVRM: Xid (PCI:\x00\xff): 7"
    r = _parse(tmp_path, bytes(rnd), name="core.bin")
    assert isinstance(r.events, list) and r.lines_read > 0
    assert not PARSER.sniff(bytes(rnd[:65536]).decode("utf-8", "replace"), "core.bin")


# --- sniffing ----------------------------------------------------------------------------------

FIXTURE_TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 10, in <module>
    main()
RuntimeError: CUDA error: an illegal memory access was encountered (Xid 31 in dmesg?)
"""
FIXTURE_NCCL = """node1:1234:1300 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB
node1:1234:1300 [0] transport/net_ib.cc:1192 NCCL WARN NET/IB : Got completion with error 12
node1:1234:1300 [0] NCCL INFO include/net.h:32 -> 2
"""
FIXTURE_JSON = '[\n  {"MESSAGE": "NVRM: Xid (PCI:0000:01:00): 79", "_HOSTNAME": "n1"}\n]\n'
FIXTURE_SLURM = """slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup.
srun: error: Orion-01-01: task 4: Out Of Memory
slurmstepd: error: *** STEP 3495064.0 ON orion-01-01 CANCELLED AT 2021-10-27T19:35:36 ***
"""
FIXTURE_KUBELET = """May 15 23:09:27 node1 kubelet[123]: I0515 eviction_manager.go:349] evicting
May 15 23:09:28 node1 kubelet[123]: I0515 eviction_manager.go:350] evicted pod
"""


@pytest.mark.parametrize("head", [FIXTURE_TRACEBACK, FIXTURE_NCCL, FIXTURE_JSON, FIXTURE_SLURM,
                                  FIXTURE_KUBELET, ""])
def test_sniff_rejects_other_formats(head):
    assert not PARSER.sniff(head, "rank0.log")


@pytest.mark.parametrize("head", [
    FIXTURE_SHORT + "\n" + FIXTURE_SHORT, FIXTURE_DMESG + "\n" + FIXTURE_DMESG_T,
    FIXTURE_DECODE_ISO, FIXTURE_GPUD + "\n" + FIXTURE_GPUD,
    "some header\n" + FIXTURE_SYSLOG_UPTIME + "\n" + FIXTURE_DMESG + "\n",
])
def test_sniff_accepts_kernel_shapes(head):
    assert PARSER.sniff(head, "x.log")


# --- the real samples --------------------------------------------------------------------------

def _all_real_files() -> list[Path]:
    if not REALWORLD.exists():
        return []
    return sorted(p for p in REALWORLD.rglob("*") if p.is_file())


def test_every_real_file_parses():
    files = _all_real_files()
    if not files:
        pytest.skip("../shared/realworld not available")
    for path in files:
        r = PARSER.parse(path, ParseContext(rel_path=str(path.relative_to(REALWORLD))))
        assert r.format == "kernel_log"
        for e in r.events:
            assert e.locator.path == str(path.relative_to(REALWORLD))
            assert 1 <= e.locator.line_start <= e.locator.line_end <= max(r.lines_read, 1)
            assert 0 < len(e.excerpt) <= 500


# files whose excerpt has raw NVRM / device-plugin lines (narratives are not kernel logs)
RAW_XID_FILES = {
    "A_xid/collenchyma14_xid31_old_format.log": {31},
    "A_xid/dxvk1799_xid31_host0_scc.log": {31},
    "A_xid/gpud_testdata_xid13_oor_xid43_pt_main_thread.log": {13, 43},
    "A_xid/gpud500_xid119_gsp_rpc_timeout.log": {119},
    "A_xid/vllm40652_xid119_gsp_timeout_8xA100_nvlink.log": {119},
    "A_xid/hf_m4_tr190_xid63_xid64_row_remap.log": {63, 64},
    "B_distributed/nccl2241_b200_allgather_hang_xid145_137.log": {145, 137},
    "E_k8s/k8sdp189_xid69_device_marked_unhealthy.log": {69},
}


@pytest.mark.parametrize(("rel", "want"), sorted(RAW_XID_FILES.items()))
def test_real_xid_codes_match_the_sidecar(rel, want):
    r = _parse_real(rel)
    got = {e.detail["xid"] for e in r.events if "xid" in e.detail}
    sidecar = json.loads(_realworld(rel).with_suffix(".json").read_text())
    assert got == want == set(sidecar["xid"])


def test_every_real_file_with_raw_xid_lines_is_covered():
    files = _all_real_files()
    if not files:
        pytest.skip("../shared/realworld not available")
    raw = {str(p.relative_to(REALWORLD)) for p in files if p.suffix == ".log"
           and ("NVRM: Xid (" in (t := p.read_text(errors="replace")) or "XidCriticalError" in t)}
    assert raw == set(RAW_XID_FILES)


def test_real_gsp_reset_required():
    r = _parse_real("A_xid/sichek51_gsp_reset_required_nccltest.log")
    (e,) = r.events
    assert e.kind == EventKind.gpu_reset_required and e.locator.line_start == 11
    assert e.ts == datetime(2026, 1, 11, 9, 52, 1, tzinfo=UTC)


def test_real_old_format_and_gpud_files():
    r = _parse_real("A_xid/collenchyma14_xid31_old_format.log")
    assert len(r.events) == 8 and all(e.gpu == "0000:01:00" for e in r.events)
    assert all(e.clock == Clock.none and e.detail["uptime_s"] > 0 for e in r.events)
    r = _parse_real("A_xid/gpud500_xid119_gsp_rpc_timeout.log")
    assert len(r.events) == 5  # the kmsg repeat of the first line is not a new Xid
    r = _parse_real("A_xid/hf_m4_tr190_xid63_xid64_row_remap.log")
    assert [e.node for e in r.events] == ["ip-26-0-146-100", "ip-26-0-147-135"]


def test_real_oom_kills():
    r = _parse_real("C_oom/dockerforlinux1001_memcg_oom_python3.log")
    kills = [e for e in r.events if e.kind == EventKind.cgroup_oom]
    assert [e.detail["pid"] for e in kills] == [15617, 15674, 15623, 15694]
    assert all(e.node == "ubuntu-s-1vcpu-2gb-ams3-01" and e.category == "host_oom"
               for e in kills)
    assert kills[0].locator.line_end == 2  # its oom_reaper line
    r = _parse_real("C_oom/reportportal203_memcg_oom_uwsgi_k8s.log")
    kills = [e for e in r.events if e.role == Role.primary]
    assert [(e.kind, e.detail["process"], e.detail["oom_score_adj"]) for e in kills] == [
        (EventKind.cgroup_oom, "uwsgi", 986)]


def test_real_segfault():
    r = _parse_real("B_distributed/gpud_testdata_pt_main_thread_segfault_libnccl.log")
    assert [(e.kind, e.detail["library"]) for e in r.events] == [
        (EventKind.segfault, "libnccl.so.2")] * 2
    assert r.events[1].ts - r.events[0].ts == timedelta(minutes=1)


@pytest.mark.parametrize("rel", [
    "A_xid/collenchyma14_xid31_old_format.log", "A_xid/dxvk1799_xid31_host0_scc.log",
    "A_xid/gpud_testdata_xid13_oor_xid43_pt_main_thread.log",
    "A_xid/gpud500_xid119_gsp_rpc_timeout.log",
    "A_xid/vllm40652_xid119_gsp_timeout_8xA100_nvlink.log",
    "A_xid/sichek51_gsp_reset_required_nccltest.log",
    "C_oom/dockerforlinux1001_memcg_oom_python3.log",
    "C_oom/reportportal203_memcg_oom_uwsgi_k8s.log",
    "B_distributed/gpud_testdata_pt_main_thread_segfault_libnccl.log",
])
def test_sniff_real_kernel_logs(rel):
    path = _realworld(rel)
    assert PARSER.sniff(read_head(path).decode("utf-8", "replace"), path.name)


@pytest.mark.parametrize("rel", [
    "B_distributed/nccl660_gdr_vm_error4_unhandled_system_error.log",
    "B_distributed/nccl928_netib_error4_vendor81_acs_gdr.log",
    "C_oom/cads4_torch_oom_fragmentation.log",
    "C_oom/hafs101_slurm_oomkill_old_format_exclusive_fix.log",
    "D_slurm/soperator321_sacct_table_failed_steps.log",
    "E_k8s/k8s132001_evicted_ephemeral_storage_kubelet_log.log",
    "A_xid/vllmbackport62_hbm_failing_xid48_63_94_154_narrative.log",
    "X_misc/gpud_testdata_fabricmanager_normal.log",
    "slurm-json/slurm-jobs.json",
])
def test_sniff_real_other_files(rel):
    path = _realworld(rel)
    assert not PARSER.sniff(read_head(path).decode("utf-8", "replace"), path.name)


def test_lead_fix_mlx5_port_link_down_uppercase(tmp_path) -> None:
    from goodput_agent.parsing.base import ParseContext

    p = tmp_path / "kern.log"
    p.write_text("Oct 21 14:25:49 gpu-node-03 kernel: [3037302.645353] mlx5_core 0000:5e:00.0 "
                 "mlx5_3: Port: 1 Link DOWN\n"
                 "Oct 21 14:25:50 gpu-node-03 kernel: audit: nothing\n")
    r = PARSER.parse(p, ParseContext(rel_path="kern.log"))
    assert [(e.kind.value, e.node, e.category) for e in r.events] == [
        ("link_down", "gpu-node-03", "network_fault")]
