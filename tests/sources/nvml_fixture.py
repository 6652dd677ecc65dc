"""FAKE NVML (a fixture, not a recording): the real `pynvml` module with its NVML-calling
functions monkeypatched to answer from `FakeGpu` specs, in NVML's real types and constants —
device handles are `c_nvmlDevice_t` pointers, PCI info an `nvmlPciInfo_t` struct with a byte
`busId`, events `c_nvmlEventData_t`, errors `pynvml.NVMLError(NVML_ERROR_*)` (which pynvml turns
into its NVMLError_NotSupported / _Timeout / ... subclasses). Constants, structs and exception
classes stay pynvml's own. Nothing here talks to a driver; no GPU machine was available to
record a real one (README: how a real fixture would be captured with `goodput node-health
--json` on a GPU node).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import pynvml as N

NOT_SUPPORTED = N.NVML_ERROR_NOT_SUPPORTED


@dataclass
class FakeGpu:
    name: Any = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-9d5f6f7c-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
    bus_id: bytes = b"00000000:1B:00.0"
    temperature: int = 41
    power_mw: Any = 312_456
    power_limit_mw: int = 700_000
    clocks: dict[int, int] = field(default_factory=lambda: {N.NVML_CLOCK_SM: 1980,
                                                            N.NVML_CLOCK_MEM: 2619})
    max_sm: int = 1980
    reasons: int = N.nvmlClocksThrottleReasonGpuIdle
    ecc_mode: tuple[int, int] = (N.NVML_FEATURE_ENABLED, N.NVML_FEATURE_ENABLED)
    # (error type, counter type) -> count
    ecc: dict[tuple[int, int], int] = field(default_factory=dict)
    retired: Any = NOT_SUPPORTED  # Ampere and later remap rows instead: NVML says NotSupported
    retired_pending: Any = NOT_SUPPORTED
    remapped: Any = (0, 0, 0, 0)
    nvlinks: list[int] = field(default_factory=lambda: [N.NVML_FEATURE_ENABLED] * 18)
    nvlink_errors: dict[tuple[int, int], int] = field(default_factory=dict)
    xid_events: Any = None  # None: registering works; an NVML error code: it fails


def _answer(value: Any) -> Any:
    """An int spec that is an NVML error code raises it (codes are small; values are not)."""
    if isinstance(value, ErrorCode):
        raise N.NVMLError(int(value))
    return value


class ErrorCode(int):
    """An NVML return code a fake function raises instead of answering."""


def err(code: int) -> ErrorCode:
    return ErrorCode(code)


def install(monkeypatch: Any, gpus: list[FakeGpu], events: list[tuple[int, int]] = (),
            init_error: int | None = None) -> dict[str, Any]:
    """Monkeypatch pynvml's functions; `events` are (gpu index, xid) delivered by the first
    waits. Returns a record of calls (init, shutdown, registered, freed)."""
    calls: dict[str, Any] = {"init": 0, "shutdown": 0, "registered": [], "freed": 0}
    handles = [ctypes.cast(ctypes.c_void_p(0x1000 + 16 * i), N.c_nvmlDevice_t)
               for i in range(len(gpus))]
    pending = list(events)

    def gpu_of(handle: Any) -> FakeGpu:
        addr = ctypes.cast(handle, ctypes.c_void_p).value
        return gpus[(addr - 0x1000) // 16]

    def init() -> None:
        if init_error is not None:
            raise N.NVMLError(init_error)
        calls["init"] += 1

    def pci(handle: Any) -> Any:
        info = N.nvmlPciInfo_t()
        info.busId = gpu_of(handle).bus_id
        return info

    def ecc(handle: Any, error_type: int, counter: int) -> int:
        return _answer(gpu_of(handle).ecc.get((error_type, counter), 0))

    def retired(handle: Any, cause: int) -> list[int]:
        spec = gpu_of(handle).retired
        if isinstance(spec, int):
            raise N.NVMLError(spec)
        return spec[cause]

    def retired_pending(handle: Any) -> int:
        spec = gpu_of(handle).retired_pending
        if spec == NOT_SUPPORTED:
            raise N.NVMLError(spec)
        return spec

    def remapped(handle: Any) -> tuple[int, int, int, int]:
        spec = gpu_of(handle).remapped
        if isinstance(spec, int):
            raise N.NVMLError(spec)
        return spec

    def nvlink_state(handle: Any, link: int) -> int:
        links = gpu_of(handle).nvlinks
        if link >= len(links):
            raise N.NVMLError(N.NVML_ERROR_INVALID_ARGUMENT if links else NOT_SUPPORTED)
        return links[link]

    def register(handle: Any, types: int, event_set: Any) -> None:
        spec = gpu_of(handle).xid_events
        if spec is not None:
            raise N.NVMLError(spec)
        calls["registered"].append(handles.index(handle))

    def wait(event_set: Any, timeout_ms: int) -> Any:
        if not pending:
            raise N.NVMLError(N.NVML_ERROR_TIMEOUT)
        index, xid = pending.pop(0)
        data = N.c_nvmlEventData_t()
        data.device = handles[index]
        data.eventType = N.nvmlEventTypeXidCriticalError
        data.eventData = xid
        return data

    def counter(handle: Any, link: int, which: int) -> int:
        return gpu_of(handle).nvlink_errors.get((link, which), 0)

    fakes = {
        "nvmlInit": init,
        "nvmlShutdown": lambda: calls.__setitem__("shutdown", calls["shutdown"] + 1),
        "nvmlSystemGetDriverVersion": lambda: "550.90.07",
        "nvmlSystemGetNVMLVersion": lambda: "12.550.90.07",
        "nvmlSystemGetCudaDriverVersion": lambda: 12040,
        "nvmlDeviceGetCount": lambda: len(gpus),
        "nvmlDeviceGetHandleByIndex": lambda i: handles[i],
        "nvmlDeviceGetName": lambda h: gpu_of(h).name,
        "nvmlDeviceGetUUID": lambda h: gpu_of(h).uuid,
        "nvmlDeviceGetPciInfo": pci,
        "nvmlDeviceGetTemperature": lambda h, sensor: gpu_of(h).temperature,
        "nvmlDeviceGetPowerUsage": lambda h: _answer(gpu_of(h).power_mw),
        "nvmlDeviceGetEnforcedPowerLimit": lambda h: gpu_of(h).power_limit_mw,
        "nvmlDeviceGetClockInfo": lambda h, t: gpu_of(h).clocks[t],
        "nvmlDeviceGetMaxClockInfo": lambda h, t: gpu_of(h).max_sm,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda h: gpu_of(h).reasons,
        "nvmlDeviceGetCurrentClocksThrottleReasons": lambda h: gpu_of(h).reasons,
        "nvmlDeviceGetEccMode": lambda h: list(gpu_of(h).ecc_mode),
        "nvmlDeviceGetTotalEccErrors": ecc,
        "nvmlDeviceGetRetiredPages": retired,
        "nvmlDeviceGetRetiredPagesPendingStatus": retired_pending,
        "nvmlDeviceGetRemappedRows": remapped,
        "nvmlDeviceGetNvLinkState": nvlink_state,
        "nvmlDeviceGetNvLinkErrorCounter": counter,
        "nvmlEventSetCreate": lambda: ctypes.c_void_p(0xE0),
        "nvmlDeviceRegisterEvents": register,
        "nvmlEventSetWait_v2": wait,
        "nvmlEventSetFree": lambda s: calls.__setitem__("freed", calls["freed"] + 1),
    }
    for name, fn in fakes.items():
        assert hasattr(N, name), name  # only functions the real module has
        monkeypatch.setattr(N, name, fn)
    return calls


def has_nvidia_driver() -> bool:
    """True on a host where the real NVML initialises (the no-driver tests skip there)."""
    try:
        N.nvmlInit()
    except N.NVMLError:
        return False
    N.nvmlShutdown()
    return True
