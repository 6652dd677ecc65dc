"""NCCL's wording for socket / bootstrap / IB faults and invalid usage, and the job-log lines that
carry them. Each input is a format specimen: NCCL's and PyTorch's fixed wording as printed in the
thread named beside it, with every variable part (hosts, IPs, pids, paths, counters) changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER
from goodput_agent.parsing.job_log.classify import classify_cuda_error
from goodput_agent.parsing.job_log.nccl_vocab import ASYNC_EVENT, async_event_is_fault
from goodput_agent.parsing.timefmt import ClockPolicy


def _parse(tmp_path: Path, text: str, name: str = "job.log"):
    path = tmp_path / name
    path.write_text(text)
    assert PARSER.sniff(text, name), text[:80]
    return PARSER.parse(path, ParseContext(rel_path=f"logs/{name}", clock=ClockPolicy()))


def _primary(res):
    return [e for e in res.events if e.role == Role.primary]


def test_socket_connect_abort_is_a_network_fault(tmp_path: Path) -> None:
    # format as printed in https://github.com/sgl-project/sglang/issues/5594
    res = _parse(tmp_path, "gpu-node-4:211:1730 [5] socket.c:485 NCCL WARN socketStartConnect: "
                           "Connect to 10.8.3.41<40127> failed : Software caused connection "
                           "abort\ngpu-node-4:211:1730 [5] NCCL INFO transport/net.cc:687 -> 2\n")
    (ev,) = _primary(res)
    assert ev.category == "network_fault" and ev.detail["peer"] == "10.8.3.41"


@pytest.mark.parametrize(("line", "refused"), [
    # NCCL >= 2.7 names the peer; as printed in https://github.com/NVIDIA/nccl/issues/1515
    ("node-2:412:530 [1] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to "
     "10.4.0.7<40421> failed : Connection refused", True),
    # NCCL 2.4 did not; as printed in https://github.com/horovod/horovod/issues/584
    ("node-2:412:530 [1] include/socket.h:361 NCCL WARN Call to connect timeout : Connection "
     "refused", True),
    ("node-2:412:530 [1] include/socket.h:361 NCCL WARN Call to connect timeout : No route to "
     "host", False),
])
def test_a_socket_connect_failure_reads_the_same_in_every_nccl_version(
        tmp_path: Path, line: str, refused: bool) -> None:
    (ev,) = _primary(_parse(tmp_path, line + "\nnode-2:412:530 [1] NCCL INFO init.cu:420 -> 2\n"))
    assert ev.category == "network_fault" and bool(ev.detail.get("peer_refused")) is refused


def test_no_usable_interface_old_format_without_the_nccl_word(tmp_path: Path) -> None:
    # format as printed in https://github.com/NVIDIA/nccl-tests/issues/14: NCCL 2.2 printed
    # "WARN" without "NCCL"; libibverbs alone is benign
    text = ("3fa07c11be92:2048:2048 [0] misc/ibvwrap.cu:61 WARN Failed to open "
            "libibverbs.so[.1]\n"
            "3fa07c11be92:2048:2048 [0] include/socket.h:311 WARN Socket creation failed : "
            "Address family not supported by protocol\n")
    (ev,) = _primary(_parse(tmp_path, text))
    assert ev.category == "network_fault" and ev.detail["configuration"] is True


def test_libibverbs_and_socket_fallback_alone_are_not_a_fault(tmp_path: Path) -> None:
    # format as printed in https://github.com/NVIDIA/nccl/issues/1410: INFO lines of a pod
    # without RDMA
    pod = "trainer-7d9f8c6b5-x2kqp"
    text = "".join(f"{pod}:{1100 + r}:{1150 + r} [{r}] NCCL INFO {msg}\n" for r, msg in (
        (2, "Failed to open libibverbs.so[.1]"), (3, "Failed to open libibverbs.so[.1]"),
        (2, "NET/Socket : Using [0]eth0:172.20.4.9<0>"),
        (3, "NET/Socket : Using [0]eth0:172.20.4.9<0>"),
        (2, "Using non-device net plugin version 0"), (2, "Using network Socket")))
    assert _primary(_parse(tmp_path, text)) == []


def test_socket_ifname_naming_no_interface(tmp_path: Path) -> None:
    # format as printed in https://github.com/NVIDIA/nccl/issues/1837
    text = ("[worker1]:hostb07:3310:3310 [1] NCCL INFO NCCL_SOCKET_IFNAME set by environment to "
            "ens5\n"
            "[worker1]:hostb07:3310:3310 [1] NCCL INFO NCCL_SOCKET_IFNAME set to ens5\n"
            "[worker0|0]:ncclInternalError: Internal check failed.\n"
            "[worker0|0]:Last error:\n"
            "[worker0|0]:ncclSocketInit: connecting to address  with family 41210 is neither "
            "AF_INET(2) nor AF_INET6(10)\n")
    (ev,) = _primary(_parse(tmp_path, text))
    assert ev.category == "network_fault" and "NCCL_SOCKET_IFNAME" in ev.detail["reason"]


def test_duplicate_gpu_warn_is_invalid_usage(tmp_path: Path) -> None:
    # format as printed in https://github.com/horovod/horovod/issues/3929 (mpirun's
    # "[1,2]<stdout>:" prefix)
    text = "".join(
        f"[1,{r}]<stdout>:{line}\n" for r in (1, 3) for line in (
            "",
            f"gpu-b12:{40210 + r}:{40500 + r} [0] init.cc:497 NCCL WARN Duplicate GPU detected : "
            f"rank {r} and rank 0 both on CUDA device 3000",
            f"gpu-b12:{40210 + r}:{40500 + r} [0] NCCL INFO init.cc:867 -> 5",
            f"gpu-b12:{40210 + r}:{40500 + r} [0] NCCL INFO init.cc:903 -> 5"))
    events = _primary(_parse(tmp_path, text))
    assert events and {e.category for e in events} == {"application_error"}
    assert events[0].detail["nccl_code"] == "ncclInvalidUsage"


def test_ib_async_events_routine_and_fatal() -> None:
    for line, fault in (
        ("NCCL WARN NET/IB : Got async event : client reregistration", False),
        ("NCCL WARN NET/IB : Got async event : port error", True),
        ("NCCL WARN NET/IB : Got async event : local catastrophic error", True),
        ("NCCL WARN NET/IB : mlx5_1:1 async fatal event on QP (0x7309dc3bb338): invalid "
         "request local work queue error", True),
    ):
        m = ASYNC_EVENT.search(line)
        assert m is not None and async_event_is_fault(m["event"]) is fault, line


def test_client_reregistration_after_init_gives_no_fault(tmp_path: Path) -> None:
    # format as printed in https://github.com/deepspeedai/DeepSpeedExamples/issues/310
    init = "".join(f"node3:{7100 + r}:{7200 + r} [{r}] NCCL INFO comm 0x5a1{r}c000 rank {r} "
                   f"nranks 4 cudaDev {r} busId {r + 1}b000 - Init COMPLETE\n" for r in range(4))
    text = init + "".join(f"\nnode3:{7100 + r}:{7300 + r} [0] transport/net_ib.cc:93 NCCL WARN "
                          "NET/IB : Got async event : client reregistration\n" for r in range(2))
    assert _primary(_parse(tmp_path, text)) == []


def test_thc_cuda_runtime_error_wording() -> None:
    # format as printed in https://github.com/NVIDIA/semantic-segmentation/issues/33 and
    # https://github.com/pytorch/pytorch/issues/2567 (PyTorch < 1.5)
    what, category, _ = classify_cuda_error(
        "RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at "
        "/pytorch/aten/src/THC/THCCachingHostAllocator.cpp:265")
    assert what == "uncorrectable ECC error encountered" and category == "gpu_hardware"
    what, category, _ = classify_cuda_error(
        "RuntimeError: cuda runtime error (4) : unspecified launch failure at "
        "/opt/src/pytorch/torch/lib/THC/THCTensorCopy.cu:85")
    assert what == "unspecified launch failure" and category == "application_error"


def test_pytorch_hint_line_names_the_same_error_class() -> None:
    # format as printed in https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/982
    # and https://github.com/ostris/ai-toolkit/issues/470
    hint = ("Search for `cudaErrorDevicesUnavailable' in https://docs.nvidia.com/cuda/"
            "cuda-runtime-api/group__CUDART__TYPES.html for more information.")
    assert classify_cuda_error(hint)[1] == "gpu_hardware"
    assert classify_cuda_error("Search for `cudaErrorECCUncorrectable' in x")[1] == "gpu_hardware"


def test_dataloader_original_traceback_host_allocation(tmp_path: Path) -> None:
    # format as printed in https://github.com/Esri/arcgis-python-api/issues/743: PyTorch's
    # ExceptionWrapper "Original Traceback"
    site = "/opt/conda/envs/train/lib/python3.9/site-packages"
    text = ("RuntimeError: Caught RuntimeError in DataLoader worker process 1.\n"
            "Original Traceback (most recent call last):\n"
            f'  File "{site}/torch/utils/data/_utils/worker.py", line 202, in _worker_loop\n'
            "    data = fetcher.fetch(index)\n"
            f'  File "{site}/torch/utils/data/_utils/fetch.py", line 52, in fetch\n'
            "    return self.collate_fn(data)\n"
            '  File "/srv/project/data.py", line 41, in collate\n'
            "    return torch.stack(items, 0)\n"
            "RuntimeError: [enforce fail at CPUAllocator.cpp:64] . DefaultCPUAllocator: can't "
            "allocate memory: you tried to allocate 805306368 bytes. Error code 12 (Cannot "
            "allocate memory).\n")
    (ev,) = _primary(_parse(tmp_path, text))
    assert ev.category == "host_oom"


def test_kernel_oom_line_forwarded_into_a_job_log(tmp_path: Path) -> None:
    # format as printed in https://github.com/ymoslem/OpenNMT-Tutorial/issues/6: the DataLoader
    # error and the memcg OOM line from dmesg
    text = ("RuntimeError: DataLoader worker (pid 4113) is killed by signal: Killed.\n"
            "Memory cgroup out of memory: Killed process 4113 (train_worker) total-vm:9912340kB, "
            "anon-rss:5120448kB, file-rss:61204kB, shmem-rss:8kB, UID:1000 pgtables:10248kB "
            "oom_score_adj:0\n")
    res = _parse(tmp_path, text)
    oom = [e for e in _primary(res) if e.kind == EventKind.cgroup_oom]
    assert oom and oom[0].category == "host_oom" and oom[0].detail["pid"] == 4113


CHECK_TIMEOUT_FRAMES = """\
Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f003c1a0000 in /usr/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x282 (0x7f013c1a0007 in /usr/lib/libtorch_cuda.so)
frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f023c1a000e in /usr/lib/libtorch_cuda.so)
frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f033c1a0015 in /usr/lib/libtorch_cuda.so)

Fatal Python error: Aborted
"""  # noqa: E501
WATCHDOG_LINE = ("[rank3]:[E0501 10:20:02.000001 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog "
                 "caught collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, "
                 "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600027 milliseconds before "
                 "timing out.\n")


def _timeouts(events) -> list:
    return [e for e in events if e.kind == EventKind.nccl_watchdog_timeout]


def test_the_watchdogs_frames_alone_are_a_collective_timeout(tmp_path: Path) -> None:
    # a pasted tail holding only the checkTimeout exception's C++ frames
    res = _parse(tmp_path, CHECK_TIMEOUT_FRAMES, name="rank3.txt")
    [timeout] = _timeouts(res.events)
    assert (timeout.category, timeout.role, timeout.detail.get("frames_only")) == (
        "hang", Role.symptom, True)


def test_the_watchdogs_frames_after_its_own_message_add_no_second_timeout(
        tmp_path: Path) -> None:
    res = _parse(tmp_path, WATCHDOG_LINE + CHECK_TIMEOUT_FRAMES, name="rank3.txt")
    [timeout] = _timeouts(res.events)
    assert timeout.detail.get("seq_num") == 41 and not timeout.detail.get("frames_only")
