"""Host-memory kills others announce, shared memory, the GPU lost as user space sees it, and
the driver API's error names (issue 24)."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.core.events import Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER


def _events(tmp_path: Path, text: str):
    p = tmp_path / "out.log"
    p.write_text(text)
    assert PARSER.sniff(text, "out.log"), "a file holding this line is a job log"
    return [e for e in PARSER.parse(p, ParseContext(rel_path="out.log")).events
            if e.role == Role.primary]


@pytest.mark.parametrize(("line", "category", "missing"), [
    ("/bin/bash: line 27:  318 Killed                  sh start.sh", "host_oom", True),
    (" 31%|███       | 63/204 [00:01<00:02, 66.83it/s]Killed", "host_oom", True),
    ("已杀死", "host_oom", True),
    ("Process finished with exit code 137 (interrupted by signal 9:SIGKILL)", "host_oom", True),
    ("[launch.py:316:sigkill_handler] Killing subprocess 41. exits with return code = -9",
     "host_oom", True),
    ("RuntimeError: DataLoader worker (pid 412) is killed by signal: Killed.", "host_oom", True),
    ("RuntimeError: DataLoader worker (pid 412) is killed by signal: Bus error. It is possible "
     "that dataloader's workers are out of shared memory.", "host_oom", False),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
     "shared memory (shm).", "host_oom", False),
    ("RuntimeError: unable to write to file </torch_18693_1954506624>", "host_oom", False),
    ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
     "host_oom", False),
    ("(raylet) node_manager.cc:3277: 2 Workers (tasks / actors) killed due to memory pressure "
     "(OOM), 0 Workers crashed due to other reasons at node (ID: ab, IP: 10.2.3.4)",
     "host_oom", False),
    ("(raylet, ip=10.4.1.20) [2022-10-02 09:12:44,101 E 77 77] (raylet) node_manager.cc:2966: "
     "System memory low at node with IP 10.4.1.20. Used memory (58.10GB) / total capacity "
     "(61.00GB) (0.95246) exceeds threshold 0.95, killing latest task with name f and id 0a",
     "host_oom", False),
    ("exit_code: 137", "host_oom", True),
    ("job 3132467 exceeded MEM usage hard limit (2528 > 1126)", "host_oom", False),
    ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 87608Ki. ",
     "host_oom", False),
    ("Job failed: reason: OOMKilled, the container exceeded the request memory", "host_oom",
     False),
])
def test_host_memory_as_others_announce_it(tmp_path: Path, line: str, category: str,
                                           missing: bool) -> None:
    [e] = _events(tmp_path, line + "\n")
    assert e.category == category
    assert bool(e.detail.get("kernel_record_missing")) is missing


def test_ray_monitor_figures_name_the_node(tmp_path: Path) -> None:
    [e] = _events(tmp_path, (
        "Memory on the node (IP: 10.9.8.7, ID: ff) where the task (task ID: 1, name=f, pid=2, "
        "memory used=2.2GB) was running was 59.49GB / 62.58GB (0.950744), which exceeds the "
        "memory usage threshold of 0.95.\n"))
    assert (e.node, e.detail["used_gb"], e.detail["total_gb"]) == ("10.9.8.7", 59.49, 62.58)


@pytest.mark.parametrize(("line", "weight"), [
    ("Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error", 0.85),
    ("Unable to determine the device handle for GPU0000:17:00.0: GPU is lost.  Reboot the "
     "system to recover this GPU", 0.85),
    ("slurmstepd: error: NVML: Failed to get usage(15): GPU is lost", 0.8),
    ("3b:00.0 3D controller: NVIDIA Corporation Device 2330 (rev ff)", 0.85),
    ("No devices were found", 0.4),
])
def test_the_gpu_lost_as_user_space_sees_it(tmp_path: Path, line: str, weight: float) -> None:
    [e] = _events(tmp_path, line + "\n")
    assert (e.category, e.detail["weight"]) == ("gpu_hardware", weight)
    assert e.detail["user_space"]


@pytest.mark.parametrize("line", [
    "Unable to determine the device handle for GPU 0000:5D:00.0: Unknown Error",
    "5d:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev ff)",  # no domain
    "0000:5d:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev ff)",
])
def test_a_lost_gpu_is_named_in_the_one_pci_spelling_nccl_bus_id_maps(
        tmp_path: Path, line: str) -> None:
    # NCCL's busId 5d000 is 0000:5d:00: the lost GPU names its rank only in that spelling
    [e] = _events(tmp_path, line + "\n")
    assert e.gpu == "0000:5d:00"


def test_driver_api_names_tensorflow_and_glog_print(tmp_path: Path) -> None:
    events = _events(tmp_path, (
        "2024-01-01 10:00:00.000: E tensorflow/stream_executor/cuda/cuda_driver.cc:1] failed "
        "call to cuDevicePrimaryCtxRetain: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC "
        "error encountered\n"
        "F0426 17:52:54.043815 30811 hl_cuda_device.cc:565] Check failed: cudaSuccess == "
        "cudaStat (0 vs. 39) Cuda Error: uncorrectable ECC error encountered\n"))
    assert [e.category for e in events] == ["gpu_hardware", "gpu_hardware"]


def test_a_launchers_own_sigkill_is_not_a_memory_kill(tmp_path: Path) -> None:
    p = tmp_path / "out.log"
    p.write_text("torch.distributed.elastic.multiprocessing.api: [WARNING] Unable to shutdown "
                 "process 264 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL\n")
    res = PARSER.parse(p, ParseContext(rel_path="out.log"))
    assert not [e for e in res.events if e.category == "host_oom"]


@pytest.mark.parametrize("lines", [
    # NCCL < 2.19 (the shape of NVIDIA/nccl-tests#166), then >= 2.19 with the errno
    ["ubuntu:9621:9691 [6] misc/shmutils.cc:71 NCCL WARN Error: failed to extend "
     "/dev/shm/nccl-fjwOOB to 5967876 bytes",
     "ubuntu:9621:9691 [6] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory "
     "segment /dev/shm/nccl-fjwOOB (size 5967872)"],
    ["[2026-04-22 21:34:20] runner-g4:202016:202235 [0] misc/shmutils.cc:88 NCCL WARN Error: "
     "failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device "
     "(28)"],
])
def test_nccl_running_out_of_dev_shm_is_host_memory_on_its_host(tmp_path: Path,
                                                                 lines: list[str]) -> None:
    events = _events(tmp_path, "\n".join(lines) + "\n")
    assert [(e.category, e.detail.get("shm")) for e in events] == [("host_oom", True)]
    assert events[0].node in ("ubuntu", "runner-g4")


def test_nccls_segment_error_alone_names_no_class(tmp_path: Path) -> None:
    """NCCL prints it after a CUDA `invalid argument` too (NVIDIA/nccl#1518)."""
    text = ("h:1:2 [1] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'\n"
            "h:1:2 [1] misc/shmutils.cc:114 NCCL WARN Error while creating shared memory "
            "segment /dev/shm/nccl-NzwJ7O (size 9637888)\n")
    assert not [e for e in _events(tmp_path, text) if e.category == "host_oom"]


TIME_PREFIXES = ["2020-11-24 20:22:28.106 ", "2024-05-01T10:00:00.123Z ",
                 "[2024-05-01 10:00:00,123] ", "Nov 24 20:22:28 "]


@pytest.mark.parametrize("prefix", TIME_PREFIXES)
@pytest.mark.parametrize("line", [
    "/bin/bash: line 27:  318 Killed                  sh start.sh",
    "Process finished with exit code 137 (interrupted by signal 9:SIGKILL)",
    "RuntimeError: DataLoader worker (pid 412) is killed by signal: Killed.",
    "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
])
def test_a_lines_own_time_before_it_does_not_hide_it(tmp_path: Path, prefix: str,
                                                    line: str) -> None:
    [plain] = _events(tmp_path, line + "\n")
    [timed] = _events(tmp_path, prefix + line + "\n")
    assert (timed.kind, timed.category) == (plain.kind, plain.category)
