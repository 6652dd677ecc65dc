"""What an error line says: sizes, signals, PCI ids, CUDA OOM and errors, exceptions.

Shared with torchelastic.py (its error files carry the same exceptions).
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from typing import Any

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.job_log.host_memory import host_memory_message

_SIZE = r"\d+(?:\.\d+)? ?(?:[KMGTPE]i?B|bytes|B)\b"
_UNITS = {"b": 1, "bytes": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "pib": 1024**5}


def size_to_bytes(text: str) -> int | None:
    m = re.match(r"\s*(\d+(?:\.\d+)?) ?([KMGTPE]?i?B|bytes)", text)
    if not m:
        return None
    factor = _UNITS.get(m[2].lower())
    return int(float(m[1]) * factor) if factor else None


def signal_name(num: int) -> str | None:
    try:
        return signal.Signals(num).name
    except ValueError:
        return None


_SIGNAL_MEANING = {
    "SIGKILL": "killed (kernel OOM killer, scheduler or launcher)",
    "SIGSEGV": "segmentation fault",
    "SIGABRT": "aborted (e.g. NCCL watchdog teardown or a C++ assertion)",
    "SIGTERM": "terminated (launcher or scheduler asked it to stop)",
    "SIGBUS": "bus error (often /dev/shm exhausted)",
    "SIGFPE": "floating point exception",
    "SIGINT": "interrupted",
}


def exit_code_detail(code: int) -> dict[str, Any]:
    """Exit code semantics: negative = killed by that signal (Python), 128+N = signal N (shell)."""
    out: dict[str, Any] = {"exitcode": code}
    num = -code if code < 0 else (code - 128 if 128 < code < 160 else None)
    if num:
        name = signal_name(num)
        out["signal"] = num
        if name:
            out["signal_name"] = name
            if name in _SIGNAL_MEANING:
                out["meaning"] = _SIGNAL_MEANING[name]
    return out


def bus_id_to_pci(bus: str) -> str:
    """NCCL's busId ("9b000": domain, bus, device, function in hex) as "0000:9b:00"."""
    v = bus.lower().rjust(9, "0")
    return f"{v[:-5][-4:]}:{v[-5:-3]}:{v[-3:-1]}"


OOM_TEXT = re.compile(r"CUDA out of memory|HIP out of memory|CUDA error: out of memory|"
                      # the caching allocator under a memory fraction (c10/cuda)
                      r"Allocation on device \d+ would exceed allowed memory|"
                      r"OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|"
                      r"Cuda failure (?:\d+ )?'out of memory'|CUDA_ERROR_OUT_OF_MEMORY")
# accelerator memory exhausted as XLA reports it (JAX, TensorFlow, torch_xla; GPU or TPU):
# openxla's error catalogue (E0100 a buffer, E0101 a program, E1000 compile-time HBM), its GPU
# allocator, and TensorFlow's BFC allocator ("OOM when allocating tensor ... device:GPU:0").
# A host allocator's (device:CPU, "by allocator cpu") is not the accelerator's.
XLA_OOM_TEXT = re.compile(
    r"Out of memory while trying to allocate \d+ bytes|"
    r"Failed to allocate request for \S+ (?:\(\d+B\) )?on device ordinal \d+|"
    r"Ran out of memory in memory space hbm|unlikely to have enough memory|"
    r"Attempting to (?:allocate|reserve) \S+(?: at the bottom of memory)?\. That was not possible|"
    r"OOM when allocating tensor\b[^\n]*?device:(?:GPU|TPU)")
# a serving engine that could not create what it needs in the GPU's memory, in its own words
# (TensorRT-LLM: "Executor creation failed due to insufficient GPU memory")
ENGINE_OOM_TEXT = re.compile(r"insufficient (?:GPU|device) memory|"
                             r"not enough (?:free )?(?:GPU|device) memory")
_OOM_TRIED = re.compile(r"Tried to allocate (" + _SIZE + ")")
_OOM_NEW = re.compile(r"GPU (\d+) has a total capac?ity of (" + _SIZE + r") of which (" + _SIZE
                      + r") is free")
_OOM_LEGACY = re.compile(r"\(GPU (\d+); (" + _SIZE + r") total capacity; (" + _SIZE
                         + r") already allocated; (" + _SIZE + r") free;(?: (" + _SIZE
                         + r") reserved in total by PyTorch)?")
_OOM_INUSE = re.compile(r"this process has (" + _SIZE + ") memory in use")
_OOM_ALLOC = re.compile(r"Of the allocated memory (" + _SIZE + r") is allocated by PyTorch, and ("
                        + _SIZE + ") is reserved by PyTorch but unallocated")
_HOST_OOM_EXC = re.compile(r"DefaultCPUAllocator: can't allocate memory|^MemoryError\b|"
                           r"OOM when allocating tensor\b[^\n]*?device:CPU")


def oom_detail(text: str) -> dict[str, Any]:
    """Sizes in a CUDA OOM message (both the torch>=2.4 and the torch 1.x wording)."""
    d: dict[str, Any] = {}
    if m := _OOM_TRIED.search(text):
        d["tried"] = m[1]
        d["tried_bytes"] = size_to_bytes(m[1])
    if m := _OOM_NEW.search(text):
        d["gpu_index"] = int(m[1])
        d["total_bytes"] = size_to_bytes(m[2])
        d["free_bytes"] = size_to_bytes(m[3])
    elif m := _OOM_LEGACY.search(text):
        d["gpu_index"] = int(m[1])
        d["total_bytes"] = size_to_bytes(m[2])
        d["allocated_bytes"] = size_to_bytes(m[3])
        d["free_bytes"] = size_to_bytes(m[4])
        if m[5]:
            d["reserved_bytes"] = size_to_bytes(m[5])
    if m := _OOM_INUSE.search(text):
        d["process_used_bytes"] = size_to_bytes(m[1])
    if m := _OOM_ALLOC.search(text):
        d["allocated_bytes"] = size_to_bytes(m[1])
        d["reserved_unallocated_bytes"] = size_to_bytes(m[2])
    return d


def device_oom(text: str) -> dict[str, Any] | None:
    """The detail of an accelerator OOM in `text`, CUDA's (its sizes), XLA's or a serving
    engine's (its own words), else None."""
    if OOM_TEXT.search(text):
        return oom_detail(text)
    for reporter, rx in (("XLA", XLA_OOM_TEXT), ("the serving engine", ENGINE_OOM_TEXT)):
        if m := rx.search(text):
            return {"reporter": reporter, "stated_oom": m[0]}
    return None


def human_size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, f in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= f:
            return f"{n / f:.2f} {unit}"
    return f"{n} bytes"


def oom_summary(d: dict[str, Any]) -> str:
    if d.get("stated_oom"):
        return f"accelerator out of memory ({d['reporter']}): {d['stated_oom']}"
    s = "CUDA out of memory"
    if d.get("tried"):
        s += f": tried to allocate {d['tried']}"
    if d.get("total_bytes") is not None:
        s += f" ({human_size(d.get('free_bytes'))} free of {human_size(d['total_bytes'])})"
    return s


_CUDA_ERR = re.compile(r"(?i:CUDA error):\s*([^\n]+?)"
                       r"(?:\.?\s*(?:CUDA kernel errors|Compile with|$))|"
                       # PyTorch < 1.5 / THC: "cuda runtime error (39) : uncorrectable ECC ..."
                       r"cuda runtime error \(\d+\) ?: ([^\n]+?)(?: at \S+:\d+)?$|"
                       r"Cuda failure (?:\d+ )?'([^']+)'|(CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+)|"
                       r"(cudaError\w+)|"
                       # the driver API's names, as TensorFlow and JAX print them
                       r"(CUDA_ERROR_[A-Z_]+)")
# (pattern, category, confidence): hardware first; everything else is the application's.
_CUDA_KINDS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"uncorrectable ECC|ECC error|cudaErrorECCUncorrectable|ECC_UNCORRECTABLE",
                re.I), "gpu_hardware", "high"),
    (re.compile(r"uncorrectable NVLink|NVLink error", re.I), "gpu_hardware", "high"),
    (re.compile(r"fallen off the bus|GPU is lost", re.I), "gpu_hardware", "high"),
    (re.compile(r"busy or unavailable|devices? unavailable|cudaErrorDevicesUnavailable", re.I),
     "gpu_hardware", "medium"),
    (re.compile(r"system not yet initialized|no CUDA-capable device", re.I), "gpu_hardware", "low"),
    (re.compile(r"^unknown error|cudaErrorUnknown|CUDA_ERROR_UNKNOWN", re.I), "gpu_hardware",
     "low"),
    (re.compile(r"unspecified launch failure|launch failed|CUDA_ERROR_LAUNCH_FAILED", re.I),
     "application_error", "low"),
    (re.compile(r"CUBLAS_STATUS_EXECUTION_FAILED|CUDNN_STATUS_", re.I), "application_error", "low"),
)


def classify_cuda_error(text: str) -> tuple[str, str, str] | None:
    """(error text, category, confidence) for a CUDA runtime error in `text`, else None."""
    m = _CUDA_ERR.search(text)
    if not m:
        return None
    what = next(g for g in m.groups() if g).strip().rstrip(".")
    for rx, category, confidence in _CUDA_KINDS:
        if rx.search(what):
            return what, category, confidence
    return what, "application_error", "high"


_COMM_EXC_TYPES = frozenset({
    "DistBackendError", "DistNetworkError", "DistStoreError", "ChildFailedError",
    "SignalException", "KeyboardInterrupt", "RendezvousClosedError", "RendezvousTimeoutError",
    "BrokenPipeError", "ConnectionResetError", "ConnectionAbortedError",
})
_COMM_MSG = re.compile(
    r"NCCL communicator was aborted|ncclRemoteError|remote process exited|"
    r"Connection reset by peer|Broken pipe|Connection closed by|Watchdog caught collective|"
    r"ProcessGroupNCCL.*(?:time[d ]?\s?out|Timeout)|collective operation timeout|"
    r"got signal: \d+|NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|"
    r"unhandled system error|unhandled cuda error|Socket Timeout|"
    r"(?:wait|Timed out).*(?:store|TCPStore|rendezvous)", re.I)
_NCCL_USAGE = re.compile(r"ncclInvalidUsage|invalid usage", re.I)


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: EventKind
    role: Role
    category: str | None
    detail: dict[str, Any]


def classify_exception(exc_type: str, message: str) -> Verdict:
    """How much a Python exception says about the root cause.

    CUDA or XLA OOM -> cuda_oom (primary, gpu_oom); host allocation failures -> primary host_oom;
    CUDA errors -> cuda_error (hardware-looking ones gpu_hardware, the rest application_error);
    NCCL invalid usage -> primary application_error; distributed-communication errors and
    signals (DistBackendError, ncclRemoteError, connection reset, watchdog timeouts,
    ChildFailedError, SignalException, KeyboardInterrupt) -> symptom with no category;
    anything else -> primary application_error.
    """
    text = f"{exc_type}: {message}"
    short = exc_type.rsplit(".", 1)[-1]
    if host := host_memory_message(text):
        return Verdict(host.kind, Role.primary, "host_oom", host.detail)
    if (oom := device_oom(text)) is not None:
        return Verdict(EventKind.cuda_oom, Role.primary, "gpu_oom", oom)
    if _HOST_OOM_EXC.search(message) or short == "MemoryError":
        return Verdict(EventKind.python_exception, Role.primary, "host_oom", {})
    cuda = classify_cuda_error(text)
    if cuda:
        what, category, confidence = cuda
        return Verdict(EventKind.cuda_error, Role.primary, category,
                       {"cuda_error": what, "confidence": confidence})
    if _NCCL_USAGE.search(text) and "nccl" in text.lower():
        return Verdict(EventKind.python_exception, Role.primary, "application_error",
                       {"nccl_code": "ncclInvalidUsage"})
    if short in _COMM_EXC_TYPES or _COMM_MSG.search(text):
        return Verdict(EventKind.python_exception, Role.symptom, None, {"comm_symptom": True})
    return Verdict(EventKind.python_exception, Role.primary, "application_error", {})


# "WARNING ... OOM at micro-batch 16 (CUDA out of memory ...); retrying": caught and handled
HANDLED = re.compile(r"\b(?:WARNING|WARN|INFO)\b.*\b(?:retry(?:ing)?|recovered|skipping|"
                      r"reducing|halving|fallback)\b", re.I)

