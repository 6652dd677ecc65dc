"""CUDA OOM and errors, forwarded kernel lines, crashes and kills."""

from __future__ import annotations

import re
from typing import Any

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing import kernel_log
from goodput_agent.parsing.job_log.classify import (
    HANDLED,
    OOM_TEXT,
    classify_cuda_error,
    device_oom,
    oom_summary,
)
from goodput_agent.parsing.job_log.host_memory import host_memory_message, shell_kill
from goodput_agent.parsing.job_log.state import LineState, Stream
from goodput_agent.parsing.timefmt import ClockPolicy

_SEGV = re.compile(r"Segmentation fault|Fatal Python error: (?P<fatal>Segmentation fault|Bus error|"
                   r"Floating point exception|Aborted)|\bBus error\b|\*\*\* SIGSEGV")
_ABORTED = re.compile(r"\bAborted \(core dumped\)")
_CRASH_KEYS = ("Segmentation", "Fatal Python", "Bus error", "SIGSEGV", "core dumped", "Killed",
               "已杀死", "137", "-9", "SIGKILL", "OOM", "exceeded", "WTERMSIG 9")
_HOST_MEMORY_KEYS = ("emory", "shm", "/torch_", "killed by signal")
# the GPU lost as user space sees it: nvidia-smi / NVML cannot reach it, lspci reads all-ones
_GPU_LOST = re.compile(
    r"Unable to determine the device handle for GPU ?(?P<pci>[0-9A-Fa-f:.]+): "
    r"(?P<why>Unknown Error|GPU is lost)|"
    r"(?P<nvml>nvml: GPU is lost|NVML: Failed to [^\n]*?GPU is lost|NVMLError_GpuIsLost)|"
    r"(?P<lspci>^(?P<bus>[0-9a-f]{2,4}:[0-9a-f]{2}\.\d|[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d) "
    r"(?:3D|VGA compatible) controller: NVIDIA[^\n]*\(rev ff\))|"
    r"(?P<none>^No devices were found\s*$)")


class DeviceErrors(LineState):
    """Lines about the GPU and the process itself."""

    def _m_kernel(self, stream: Stream, c: str) -> bool:
        """A kernel line (OOM kill, Xid) forwarded into the job's output or pasted there."""
        if "NVRM: " not in c and "process" not in c and "oom-kill" not in c:
            return False
        f = kernel_log.classify(kernel_log.split_prefix(c, ClockPolicy()).msg)
        if f is None or f.role == Role.context:
            return False
        self.add(f.kind, f.role, f.category, f.summary, {**f.detail, "forwarded_kernel": True})
        return True

    def _m_oom(self, stream: Stream, c: str) -> bool:
        if "emory" not in c and "OutOfMemory" not in c and "llocat" not in c:
            return False
        if (d := device_oom(c)) is None:
            return False
        summary = oom_summary(d)
        if HANDLED.search(c):  # a warning about an OOM the program caught and recovered from
            self.add(EventKind.cuda_oom, Role.context, None, summary + " (handled)", d)
            return True
        self.add(EventKind.cuda_oom, Role.primary, "gpu_oom", summary, d)
        return True

    def _m_cuda(self, stream: Stream, c: str) -> bool:
        if "CUDA" not in c and "Cuda" not in c and "cuda" not in c:
            return False
        cuda = classify_cuda_error(c)
        if not cuda:
            return False
        self._cuda(cuda, {}, {})
        return True

    def _cuda(self, cuda: tuple[str, str, str], base: dict[str, Any],
              kw: dict[str, Any]) -> None:
        what, category, confidence = cuda
        if OOM_TEXT.search(what) or what == "out of memory":
            self.add(EventKind.cuda_oom, Role.primary, "gpu_oom", "CUDA out of memory",
                     {**base, "cuda_error": what}, **kw)
            return
        self.add(EventKind.cuda_error, Role.primary, category, f"CUDA error: {what}",
                 {**base, "cuda_error": what, "confidence": confidence}, **kw)

    def _m_crash(self, stream: Stream, c: str) -> bool:
        if not any(k in c for k in _CRASH_KEYS):
            return False
        if m := _SEGV.search(c):
            what = m["fatal"] or m[0].strip("* ")
            if what == "Aborted":
                self.add(EventKind.signal, Role.symptom, None, "Fatal Python error: Aborted",
                         {"signal_name": "SIGABRT"})
                return True
            sig = "SIGBUS" if "Bus" in what else "SIGFPE" if "Floating" in what else "SIGSEGV"
            self.add(EventKind.segfault, Role.primary, "application_error",
                     f"Process crashed: {what}", {"signal_name": sig})
            return True
        if _ABORTED.search(c):
            self.add(EventKind.signal, Role.symptom, None, "Process aborted (core dumped)",
                     {"signal_name": "SIGABRT"})
            return True
        if kill := shell_kill(c):
            self.add(kill.kind, Role.primary, "host_oom", kill.summary, dict(kill.detail))
            return True
        return False

    def _m_host_memory(self, stream: Stream, c: str) -> bool:
        if not any(k in c for k in _HOST_MEMORY_KEYS) or "Traceback" in c:
            return False
        hit = host_memory_message(c)
        if hit is None:
            return False
        detail = dict(hit.detail)
        self.add(hit.kind, Role.primary, "host_oom", hit.summary, detail,
                 node=detail.get("node_ip") or detail.get("node_name"))
        return True

    def _m_gpu_lost(self, stream: Stream, c: str) -> bool:
        if "GPU" not in c and "rev ff" not in c and "No devices" not in c:
            return False
        m = _GPU_LOST.search(c)
        if not m:
            return False
        if m["pci"]:
            pci = m["pci"].lower().rstrip(".")
            self.add(EventKind.gpu_device_unhealthy, Role.primary, "gpu_hardware",
                     f"nvidia-smi cannot reach GPU {pci}: {m['why']} (the GPU is lost to user "
                     "space)", {"pci": pci, "weight": 0.85, "user_space": "nvidia-smi",
                                "gpu_pci": pci.rsplit(".", 1)[0]})
        elif m["nvml"]:
            self.add(EventKind.gpu_device_unhealthy, Role.primary, "gpu_hardware",
                     "NVML says a GPU is lost", {"weight": 0.8, "user_space": "nvml"})
        elif m["lspci"]:
            # lspci leaves out the PCI domain where it is 0000; NCCL's busId and nvidia-smi
            # write it: the GPU is placed (and its rank found) in the one spelling
            bus = m["bus"].lower()
            full = bus if bus.count(":") == 2 else f"0000:{bus}"
            self.add(EventKind.gpu_device_unhealthy, Role.primary, "gpu_hardware",
                     f"lspci reads NVIDIA device {m['bus']} as all-ones (rev ff): it has "
                     "fallen off the bus", {"pci": m["bus"], "weight": 0.85,
                                            "user_space": "lspci",
                                            "gpu_pci": full.rsplit(".", 1)[0]})
        else:  # a driver that did not load gives the same words: the weakest of the four
            self.add(EventKind.gpu_device_unhealthy, Role.primary, "gpu_hardware",
                     "nvidia-smi found no GPU", {"weight": 0.4, "user_space": "nvidia-smi"})
        return True
