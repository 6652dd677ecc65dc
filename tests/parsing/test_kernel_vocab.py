"""The driver's and the PCIe core's wording without an Xid number, read from real lines (each
copied from the thread or file named beside it; the corpus files in evals/realworld hold them)."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.events import EventKind, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.kernel_log import PARSER, classify
from goodput_agent.parsing.lines import read_head

CORPUS = Path(__file__).resolve().parents[2] / "evals" / "realworld"


def _parse(tmp_path: Path, text: str, name: str = "dmesg.log"):
    path = tmp_path / name
    path.write_text(text)
    return PARSER.parse(path, ParseContext(rel_path=f"nodes/x/{name}"))


def _primary(events):
    return [e for e in events if e.role == Role.primary]


# NVIDIA/NVSentinel#155: the driver wraps the message over three NVRM lines, no Xid
WRAPPED_FALLEN = (
    "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
    "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
    "               NVRM: fallen off the bus and is not responding to commands.\n"
    "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n")
# the one-line form of the same message
ONE_LINE_FALLEN = ("NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this "
                   "system has fallen off the bus and is not responding to commands.")


def test_fallen_off_the_bus_without_xid_wrapped_names_the_gpu(tmp_path: Path) -> None:
    (ev,) = _primary(_parse(tmp_path, WRAPPED_FALLEN).events)
    assert ev.category == "gpu_hardware" and ev.detail["xid"] == 79
    assert ev.gpu == "0000:b3:00"


def test_fallen_off_the_bus_on_one_line() -> None:
    f = classify(ONE_LINE_FALLEN)
    assert f is not None and f.category == "gpu_hardware" and f.gpu == "0000:b3:00"


def test_a_bare_nvrm_line_is_read_as_a_kernel_log() -> None:
    assert PARSER.sniff(ONE_LINE_FALLEN + "\n", "excerpt.log")
    # gpud#1174 quoted this kmsg line with no prefix at all
    assert PARSER.sniff("NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 "
                        "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n", "x.log")


def test_gsp_heartbeat_and_rpc_timeouts_are_gpu_faults() -> None:
    # ublue-os/bazzite#4449 and NVIDIA/open-gpu-kernel-modules#1230
    for line in (
        "NVRM: GPU0 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs 322227881 "
        "heartbeat 0 heartbeatWithOffsetMs 318098841 diff 4129040 timeout 5200",
        "NVRM: GPU0 _kgspRpcRecvPoll: GSP RM heartbeat timed out",
        "NVRM: GPU6 _kgspLogRpcTimeout: ********************************* GSP Timeout "
        "**********************************",
    ):
        f = classify(line)
        assert f is not None and f.role == Role.primary and f.category == "gpu_hardware", line
        assert f.detail["derived_from"] == "gsp_timeout"
    f = classify("NVRM: GPU6 kgmmuCheckMemSubsysError_IMPL: Memory Subsystem Error detected. "
                 "kbusSendSysmembarSingle failed.")
    assert f is not None and f.category == "gpu_hardware"
    assert f.kind == EventKind.gpu_device_unhealthy


def test_gsp_lines_of_one_gpu_merge_into_one_event(tmp_path: Path) -> None:
    text = (CORPUS / "kernel" / "ogkm1230_gsp_timeout_memsubsys_error.log").read_text()
    gpu_events = [e for e in _parse(tmp_path, text).events if e.role == Role.primary]
    assert {e.category for e in gpu_events} == {"gpu_hardware"}
    assert len(gpu_events) <= 2  # the heartbeat and the later RPC timeout, not one per line


def test_nvlink_training_failure() -> None:
    # leptonai/gpud components/accelerator/nvidia/nvlink/post_rx_detect_failure_test.go
    f = classify("NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask "
                 "failed!")
    assert f is not None and f.category == "gpu_hardware" and f.detail["weight"] < 0.8


def test_xid45_takes_the_class_of_the_xid_that_caused_it() -> None:
    # NVIDIA/open-gpu-kernel-modules#1150
    f = classify("NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused "
                 "by previous Xid 149")
    assert f is not None and f.role == Role.primary and f.category == "gpu_hardware"
    assert f.detail["caused_by_xid"] == 149
    plain = classify("NVRM: Xid (PCI:0000:0a:00): 45, pid='<unknown>', name=<unknown>, "
                     "Ch 00000008")
    assert plain is not None and plain.role != Role.primary


def test_pcie_aer_unrecoverable_on_the_gpu_and_corrected_noise(tmp_path: Path) -> None:
    # rwth-i6/returnn#1500 (dmesg -H relative times) against hirschmann/nbfc#181
    text = (CORPUS / "kernel" / "returnn1500_aer_uncorrected_fatal_nvidia_cant_recover.log"
            ).read_text()
    assert PARSER.sniff(text, "x.log")
    (ev,) = {e.gpu: e for e in _primary(_parse(tmp_path, text).events)}.values()
    assert ev.category == "gpu_hardware" and ev.gpu == "0000:03:00"
    corrected = ("jan. 29 20:50:17 kevin kernel: pcieport 0000:00:1c.5: PCIe Bus Error: "
                 "severity=Corrected, type=Physical Layer, id=00e5(Receiver ID)")
    assert classify(corrected.split("kernel: ", 1)[1]) is None


def test_oom_killer_lines_without_a_kill_line_still_show_the_kill(tmp_path: Path) -> None:
    # mozilla/DeepSpeech#2055: invocations and the reaper, the kill line cut away
    text = (CORPUS / "oom" / "mozilla_deepspeech2055_syslog_oom_killer_reaper.log").read_text()
    (ev,) = _primary(_parse(tmp_path, text).events)
    assert ev.category == "host_oom" and ev.detail["process"] == "python"
    assert ev.detail["pid"] == 29918  # the victim the reaper names, not an allocator
    # tensorflow/tensorflow#9419: only "python invoked oom-killer" and its call trace
    text = (CORPUS / "oom" / "tensorflow9419_python_invoked_oom_killer_call_trace.log").read_text()
    (ev,) = _primary(_parse(tmp_path, text, "k2.log").events)
    assert ev.category == "host_oom" and ev.detail["weight"] < 0.8


def test_with_a_kill_line_the_invocation_stays_context(tmp_path: Path) -> None:
    text = ("[ 7093.543707] python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, "
            "oom_score_adj=0\n" + "[ 7093.543711] x\n" * 30 +
            "[ 7093.600100] Out of memory: Killed process 63635 (python) total-vm:3149468kB, "
            "anon-rss:164992kB, file-rss:52176kB, shmem-rss:92kB, UID:0 pgtables:1372kB "
            "oom_score_adj:0\n")
    events = _parse(tmp_path, text).events
    assert [e.detail.get("pid") for e in _primary(events)] == [63635]


def test_every_kernel_corpus_file_is_read(tmp_path: Path) -> None:
    for log in sorted((CORPUS / "kernel").glob("*.log")):
        head = read_head(log).decode("utf-8", "replace")
        if PARSER.sniff(head, log.name):
            PARSER.parse(log, ParseContext(rel_path=log.name))
