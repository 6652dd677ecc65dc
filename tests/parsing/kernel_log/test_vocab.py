"""The driver's and the PCIe core's wording without an Xid number. Each input is a format
specimen: the software's fixed wording as printed in the thread named beside it, with every
variable part (hosts, bus ids, pids, times, counters) changed."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.kernel_log import PARSER, classify
from goodput_agent.parsing.lines import read_head


def _parse(tmp_path: Path, text: str, name: str = "dmesg.log"):
    path = tmp_path / name
    path.write_text(text)
    return PARSER.parse(path, ParseContext(rel_path=f"nodes/x/{name}"))


def _primary(events):
    return [e for e in events if e.role == Role.primary]


# format as printed in https://github.com/NVIDIA/NVSentinel/issues/155: the driver wraps the
# message over three NVRM lines, no Xid
WRAPPED_FALLEN = (
    "[ 2210.514307] NVRM: The NVIDIA GPU 0000:5e:00.0\n"
    "               NVRM: (PCI ID: 10de:2330) installed in this system has\n"
    "               NVRM: fallen off the bus and is not responding to commands.\n"
    "[ 2210.602981] NVRM: The NVIDIA probe routine failed for 1 device(s).\n")
# the one-line form of the same message
ONE_LINE_FALLEN = ("NVRM: The NVIDIA GPU 0000:5e:00.0 (PCI ID: 10de:2330) installed in this "
                   "system has fallen off the bus and is not responding to commands.")


def test_fallen_off_the_bus_without_xid_wrapped_names_the_gpu(tmp_path: Path) -> None:
    (ev,) = _primary(_parse(tmp_path, WRAPPED_FALLEN).events)
    assert ev.category == "gpu_hardware" and ev.detail["xid"] == 79
    assert ev.gpu == "0000:5e:00"


def test_fallen_off_the_bus_on_one_line() -> None:
    f = classify(ONE_LINE_FALLEN)
    assert f is not None and f.category == "gpu_hardware" and f.gpu == "0000:5e:00"


def test_a_bare_nvrm_line_is_read_as_a_kernel_log() -> None:
    assert PARSER.sniff(ONE_LINE_FALLEN + "\n", "excerpt.log")
    # format as printed in https://github.com/leptonai/gpud/issues/1174: no prefix at all
    assert PARSER.sniff("NVRM: Xid (PCI:0008:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000ab302 "
                        "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n", "x.log")


def test_gsp_heartbeat_and_rpc_timeouts_are_gpu_faults() -> None:
    # format as printed in https://github.com/ublue-os/bazzite/issues/4449 and
    # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1230
    for line in (
        "NVRM: GPU2 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs 501337204 "
        "heartbeat 0 heartbeatWithOffsetMs 497110032 diff 4227172 timeout 5200",
        "NVRM: GPU2 _kgspRpcRecvPoll: GSP RM heartbeat timed out",
        "NVRM: GPU3 _kgspLogRpcTimeout: ********************************* GSP Timeout "
        "**********************************",
    ):
        f = classify(line)
        assert f is not None and f.role == Role.primary and f.category == "gpu_hardware", line
        assert f.detail["derived_from"] == "gsp_timeout"
    f = classify("NVRM: GPU3 kgmmuCheckMemSubsysError_IMPL: Memory Subsystem Error detected. "
                 "kbusSendSysmembarSingle failed.")
    assert f is not None and f.category == "gpu_hardware"
    assert f.kind == EventKind.gpu_device_unhealthy


# format as printed in https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1230
GSP_LOG = (
    "[   11.204318] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.12.04  Release "
    "Build  (builder@host)  Mon Jan  5 09:14:02 AM UTC 2026\n"
    "[   31.118902] NVRM: GPU3 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs "
    "604112338 heartbeat 1422907 heartbeatWithOffsetMs 604106001 diff 6337 timeout 5200\n"
    "[   31.118921] NVRM: GPU3 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs "
    "604112338 heartbeat 1422907 heartbeatWithOffsetMs 604106001 diff 6337 timeout 5200\n"
    "[   91.117004] NVRM: GPU3 _threadNodeCheckTimeout: _threadNodeCheckTimeout: currentTime: "
    "a310cc2210f00 >= a310cc2210f00\n"
    "[   91.117019] NVRM: GPU3 _threadNodeCheckTimeout: _threadNodeCheckTimeout: Timeout was set "
    "to: 4000 msecs!\n"
    "[   91.117033] NVRM: GPU3 kbusSendSysmembarSingle_GH100: - timeout error waiting for "
    "startToken = 0x5 cnt=18830471\n"
    "[   91.117038] NVRM: GPU3 kgmmuCheckMemSubsysError_IMPL: Memory Subsystem Error detected. "
    "kbusSendSysmembarSingle failed.\n"
    "[   91.117041] NVRM: GPU3 _kgspCheckIfMemsysError: Unexpected error when checking for "
    "memory subsystem error: 0x72 \n"
    "[   91.117047] NVRM: GPU3 _kgspLogRpcTimeout: ********************************* GSP Timeout "
    "**********************************\n")
# format as printed in https://github.com/rwth-i6/returnn/issues/1500 (dmesg -H relative times)
AER_LOG = "".join(f"[  +0.{i:06d}] {line}\n" for i, line in enumerate([
    "nvidia 0000:41:00.0: AER: can't recover (no error_detected callback)",
    "snd_hda_intel 0000:41:00.1: AER: can't recover (no error_detected callback)",
    "pcieport 0000:40:01.0: AER: device recovery failed",
    "pcieport 0000:40:01.0: AER: Multiple Uncorrected (Fatal) error received: 0000:40:01.0",
    "pcieport 0000:40:01.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction "
    "Layer, (Requester ID)",
    "pcieport 0000:40:01.0:   device [8086:2030] error status/mask=00004000/00000000",
    "pcieport 0000:40:01.0:    [14] CmpltTO                (First)",
    "nvidia 0000:41:00.0: AER: can't recover (no error_detected callback)",
    "pcieport 0000:40:01.0: AER: Root Port link has been reset (0)",
    "pcieport 0000:40:01.0: AER: device recovery failed"], start=311))
# format as printed in https://github.com/mozilla/DeepSpeech/issues/2055: the invocations and
# the reaper, the kill line cut away
_SYSLOG = "Mar 11 14:02:37 node-a7 kernel: "
REAPER_LOG = (
    f"{_SYSLOG}[402118.110231] Xorg invoked oom-killer: gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), "
    "nodemask=(null), order=0, oom_score_adj=0\n"
    f"{_SYSLOG}[402118.110245]  oom_kill_process+0x220/0x440\n"
    f"{_SYSLOG}[402118.110310] [ pid ]   uid  tgid total_vm      rss pgtables_bytes swapents "
    "oom_score_adj name\n"
    f"{_SYSLOG}[402141.907713] python invoked oom-killer: "
    "gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), nodemask=(null), order=0, oom_score_adj=0\n"
    f"{_SYSLOG}[402141.907729]  oom_kill_process+0x220/0x440\n"
    f"{_SYSLOG}[402141.907801] [ pid ]   uid  tgid total_vm      rss pgtables_bytes swapents "
    "oom_score_adj name\n"
    f"{_SYSLOG}[402144.251906] oom_reaper: reaped process 41207 (python), now anon-rss:0kB, "
    "file-rss:0kB, shmem-rss:0kB\n")
# format as printed in https://github.com/tensorflow/tensorflow/issues/9419: only the
# invocation and its call trace
INVOKED_LOG = (
    "[  912.441207] python invoked oom-killer: gfp_mask=0x24280ca, order=0, oom_score_adj=0\n"
    "[  912.441212] python cpuset=/ mems_allowed=0\n"
    "[  912.441219] CPU: 2 PID: 5120 Comm: python Tainted: P           OE   4.15.0-20-generic "
    "#21-Ubuntu\n"
    "[  912.441221] Hardware name: Example Corp. X1/X1, BIOS 1.0 01/01/2020\n"
    "[  912.441230] Call Trace:\n"
    "[  912.441237]  [<ffffffff81400a10>] dump_stack+0x63/0x90\n"
    "[  912.441251]  [<ffffffff81190011>] oom_kill_process+0x202/0x3c0\n"
    "[  912.441254]  [<ffffffff81190e02>] out_of_memory+0x219/0x460\n"
    "[  912.441258]  [<ffffffff81197f10>] __alloc_pages_nodemask+0x286/0x2a0\n")


def test_gsp_lines_of_one_gpu_merge_into_one_event(tmp_path: Path) -> None:
    gpu_events = [e for e in _parse(tmp_path, GSP_LOG).events if e.role == Role.primary]
    assert {e.category for e in gpu_events} == {"gpu_hardware"}
    assert len(gpu_events) <= 2  # the heartbeat and the later RPC timeout, not one per line


def test_nvlink_training_failure() -> None:
    # format as printed in leptonai/gpud
    # components/accelerator/nvidia/nvlink/post_rx_detect_failure_test.go
    f = classify("NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask "
                 "failed!")
    assert f is not None and f.category == "gpu_hardware" and f.detail["weight"] < 0.8


def test_xid45_takes_the_class_of_the_xid_that_caused_it() -> None:
    # format as printed in https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150
    f = classify("NVRM: Xid (PCI:0000:9a:00): 45, pid=2741553, name=python3, Ch 00000003 caused "
                 "by previous Xid 149")
    assert f is not None and f.role == Role.primary and f.category == "gpu_hardware"
    assert f.detail["caused_by_xid"] == 149
    plain = classify("NVRM: Xid (PCI:0000:1c:00): 45, pid='<unknown>', name=<unknown>, "
                     "Ch 00000005")
    assert plain is not None and plain.role != Role.primary


def test_pcie_aer_unrecoverable_on_the_gpu_and_corrected_noise(tmp_path: Path) -> None:
    assert PARSER.sniff(AER_LOG, "x.log")
    (ev,) = {e.gpu: e for e in _primary(_parse(tmp_path, AER_LOG).events)}.values()
    assert ev.category == "gpu_hardware" and ev.gpu == "0000:41:00"
    # format as printed in https://github.com/hirschmann/nbfc/issues/181
    corrected = ("feb. 02 08:13:44 laptop kernel: pcieport 0000:00:1d.2: PCIe Bus Error: "
                 "severity=Corrected, type=Physical Layer, id=00e5(Receiver ID)")
    assert classify(corrected.split("kernel: ", 1)[1]) is None


def test_oom_killer_lines_without_a_kill_line_still_show_the_kill(tmp_path: Path) -> None:
    (ev,) = _primary(_parse(tmp_path, REAPER_LOG).events)
    assert ev.category == "host_oom" and ev.detail["process"] == "python"
    assert ev.detail["pid"] == 41207  # the victim the reaper names, not an allocator
    (ev,) = _primary(_parse(tmp_path, INVOKED_LOG, "k2.log").events)
    assert ev.category == "host_oom" and ev.detail["weight"] < 0.8


def test_with_a_kill_line_the_invocation_stays_context(tmp_path: Path) -> None:
    text = ("[ 7093.543707] python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, "
            "oom_score_adj=0\n" + "[ 7093.543711] x\n" * 30 +
            "[ 7093.600100] Out of memory: Killed process 63635 (python) total-vm:3149468kB, "
            "anon-rss:164992kB, file-rss:52176kB, shmem-rss:92kB, UID:0 pgtables:1372kB "
            "oom_score_adj:0\n")
    events = _parse(tmp_path, text).events
    assert [e.detail.get("pid") for e in _primary(events)] == [63635]


def test_every_shared_kernel_excerpt_is_read(shared_dir: Path) -> None:
    for log in sorted((shared_dir / "realworld" / "A_xid").glob("*.log")):
        head = read_head(log).decode("utf-8", "replace")
        if PARSER.sniff(head, log.name):
            PARSER.parse(log, ParseContext(rel_path=log.name))
