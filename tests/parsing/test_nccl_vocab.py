"""NCCL's wording for socket / bootstrap / IB faults and invalid usage, and the job-log lines that
carry them, read from real lines (threads named beside each; the corpus in evals/realworld)."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.events import EventKind, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER, classify_cuda_error
from goodput_agent.parsing.nccl_vocab import ASYNC_EVENT, async_event_is_fault
from goodput_agent.parsing.timefmt import ClockPolicy

CORPUS = Path(__file__).resolve().parents[2] / "evals" / "realworld"


def _parse(tmp_path: Path, text: str, name: str = "job.log"):
    path = tmp_path / name
    path.write_text(text)
    assert PARSER.sniff(text, name), text[:80]
    return PARSER.parse(path, ParseContext(rel_path=f"logs/{name}", clock=ClockPolicy()))


def _primary(res):
    return [e for e in res.events if e.role == Role.primary]


def test_socket_connect_abort_is_a_network_fault(tmp_path: Path) -> None:
    # sgl-project/sglang#5594
    res = _parse(tmp_path, "h100-15:139:1092 [7] socket.c:485 NCCL WARN socketStartConnect: "
                           "Connect to 10.0.0.82<38455> failed : Software caused connection "
                           "abort\nh100-15:139:1092 [7] NCCL INFO transport/net.cc:687 -> 2\n")
    (ev,) = _primary(res)
    assert ev.category == "network_fault" and ev.detail["peer"] == "10.0.0.82"


def test_no_usable_interface_old_format_without_the_nccl_word(tmp_path: Path) -> None:
    # NVIDIA/nccl-tests#14: NCCL 2.2 printed "WARN" without "NCCL"; libibverbs alone is benign
    text = ("e66aa18dc444:3171:3171 [0] misc/ibvwrap.cu:61 WARN Failed to open "
            "libibverbs.so[.1]\n"
            "e66aa18dc444:3171:3171 [0] include/socket.h:311 WARN Socket creation failed : "
            "Address family not supported by protocol\n")
    (ev,) = _primary(_parse(tmp_path, text))
    assert ev.category == "network_fault" and ev.detail["configuration"] is True


def test_libibverbs_and_socket_fallback_alone_are_not_a_fault(tmp_path: Path) -> None:
    # NVIDIA/nccl#1410: INFO lines of a pod without RDMA
    text = (CORPUS / "healthy" / "nccl1410_libibverbs_info_socket_fallback.log").read_text()
    assert _primary(_parse(tmp_path, text)) == []


def test_socket_ifname_naming_no_interface(tmp_path: Path) -> None:
    # NVIDIA/nccl#1837
    text = (CORPUS / "nccl" / "nccl1837_socket_ifname_missing_internal_check_failed.log"
            ).read_text()
    (ev,) = _primary(_parse(tmp_path, text))
    assert ev.category == "network_fault" and "NCCL_SOCKET_IFNAME" in ev.detail["reason"]


def test_duplicate_gpu_warn_is_invalid_usage(tmp_path: Path) -> None:
    # horovod/horovod#3929 (mpirun's "[1,2]<stdout>:" prefix)
    text = (CORPUS / "nccl" / "horovod3929_nccl_warn_duplicate_gpu_mpi_prefix.log").read_text()
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
    # deepspeedai/DeepSpeedExamples#310
    text = (CORPUS / "healthy" / "dsexamples310_nccl_init_complete_ib_client_reregistration.log"
            ).read_text()
    assert _primary(_parse(tmp_path, text)) == []


def test_thc_cuda_runtime_error_wording() -> None:
    # NVIDIA/semantic-segmentation#33 and pytorch/pytorch#2567 (PyTorch < 1.5)
    what, category, _ = classify_cuda_error(
        "RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at "
        "/pytorch/aten/src/THC/THCCachingHostAllocator.cpp:265")
    assert what == "uncorrectable ECC error encountered" and category == "gpu_hardware"
    what, category, _ = classify_cuda_error(
        "RuntimeError: cuda runtime error (4) : unspecified launch failure at "
        "/home/ubuntu/pytorch/torch/lib/THC/THCTensorCopy.cu:85")
    assert what == "unspecified launch failure" and category == "application_error"


def test_pytorch_hint_line_names_the_same_error_class() -> None:
    # kubernetes-sigs/dra-driver-nvidia-gpu#982 and ostris/ai-toolkit#470
    hint = ("Search for `cudaErrorDevicesUnavailable' in https://docs.nvidia.com/cuda/"
            "cuda-runtime-api/group__CUDART__TYPES.html for more information.")
    assert classify_cuda_error(hint)[1] == "gpu_hardware"
    assert classify_cuda_error("Search for `cudaErrorECCUncorrectable' in x")[1] == "gpu_hardware"


def test_dataloader_original_traceback_host_allocation(tmp_path: Path) -> None:
    # Esri/arcgis-python-api#743: PyTorch's ExceptionWrapper "Original Traceback"
    text = (CORPUS / "oom" / "esri743_defaultcpuallocator_cannot_allocate.log").read_text()
    (ev,) = _primary(_parse(tmp_path, text))
    assert ev.category == "host_oom"


def test_kernel_oom_line_forwarded_into_a_job_log(tmp_path: Path) -> None:
    # ymoslem/OpenNMT-Tutorial#6: the DataLoader error and the memcg OOM line from dmesg
    text = (CORPUS / "oom" / "opennmt6_memcg_oom_dataloader_killed.log").read_text()
    res = _parse(tmp_path, text)
    oom = [e for e in _primary(res) if e.kind == EventKind.cgroup_oom]
    assert oom and oom[0].category == "host_oom" and oom[0].detail["pid"] == 629
