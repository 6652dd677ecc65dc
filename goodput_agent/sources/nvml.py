"""Node health from NVML (nvidia-ml-py, imported as `pynvml`): per GPU its identity, temperature,
power, clocks and the active clock-throttle reasons (decoded), ECC counts (volatile and
aggregate), retired pages and remapped rows, NVLink state and error counters, and Xid events
seen while listening (a short, bounded wait: NVML reports only Xids that happen while an event
set is registered; past ones are in the kernel log).

Every field is read on its own: NVML_ERROR_NOT_SUPPORTED makes that field "n/a" (listed in
`not_supported`), any other NVML error is kept in `errors` under the field's name; neither stops
the other fields. Without a driver `nvmlInit()` raises NVMLError_LibraryNotFound (or
DriverNotLoaded): that is NotInstalled, one line "no NVIDIA driver here".

`problems` lists what a person would act on (uncorrectable ECC, pending or failed row remaps,
pending page retirement, hardware/thermal slowdown, an inactive NVLink, Xid events), each with
the field it came from.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from goodput_agent.sources.errors import Forbidden, NotInstalled, SourceError

SOURCE = "nvml"
XID_WAIT_MS = 200

# active clock-throttle ("clocks event") reason bits → names, from NVML's constants
_REASONS = (
    ("nvmlClocksThrottleReasonGpuIdle", "gpu_idle"),
    ("nvmlClocksThrottleReasonApplicationsClocksSetting", "applications_clocks_setting"),
    ("nvmlClocksThrottleReasonSwPowerCap", "sw_power_cap"),
    ("nvmlClocksThrottleReasonHwSlowdown", "hw_slowdown"),
    ("nvmlClocksThrottleReasonSyncBoost", "sync_boost"),
    ("nvmlClocksThrottleReasonSwThermalSlowdown", "sw_thermal_slowdown"),
    ("nvmlClocksThrottleReasonHwThermalSlowdown", "hw_thermal_slowdown"),
    ("nvmlClocksThrottleReasonHwPowerBrakeSlowdown", "hw_power_brake_slowdown"),
    ("nvmlClocksThrottleReasonDisplayClockSetting", "display_clock_setting"),
)
# reasons that mean the hardware protected itself (not a setting or an idle GPU)
SLOWDOWN_REASONS = {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                    "sw_thermal_slowdown"}
_NVLINK_COUNTERS = (("NVML_NVLINK_ERROR_DL_REPLAY", "replay"),
                    ("NVML_NVLINK_ERROR_DL_RECOVERY", "recovery"),
                    ("NVML_NVLINK_ERROR_DL_CRC_FLIT", "crc_flit"),
                    ("NVML_NVLINK_ERROR_DL_CRC_DATA", "crc_data"))


class XidEvent(BaseModel):
    gpu_index: int | None
    xid: int


class GpuHealth(BaseModel):
    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    mem_clock_mhz: int | None = None
    throttle_reasons: list[str] | None = None  # active, decoded
    throttle_mask: int | None = None
    ecc_enabled: bool | None = None
    ecc_volatile: dict[str, int] | None = None  # corrected, uncorrected
    ecc_aggregate: dict[str, int] | None = None
    retired_pages: dict[str, int] | None = None  # single_bit, double_bit
    retired_pages_pending: bool | None = None
    # correctable, uncorrectable, pending, failure
    remapped_rows: dict[str, int | bool] | None = None
    nvlinks: list[dict[str, Any]] | None = None  # link, active, error counters
    not_supported: list[str] = Field(default_factory=list)  # "n/a" on this GPU
    errors: dict[str, str] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)


class NodeHealth(BaseModel):
    host: str
    driver_version: str | None = None
    nvml_version: str | None = None
    cuda_driver_version: int | None = None
    gpus: list[GpuHealth] = Field(default_factory=list)
    xid_events: list[XidEvent] = Field(default_factory=list)
    xid_listen_ms: int = 0
    xid_listen_error: str | None = None
    kernel_xids: list[dict[str, Any]] = Field(default_factory=list)  # from the kernel log
    kernel_log_error: str | None = None


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def decode_throttle_reasons(nvml: Any, mask: int) -> list[str]:
    """The names of the reason bits set in `mask` (NVML's own constants); unknown bits as hex."""
    names, known = [], 0
    for const, name in _REASONS:
        bit = getattr(nvml, const, None)
        if bit is None:
            continue
        known |= bit
        if mask & bit:
            names.append(name)
    if mask & ~known:
        names.append(f"unknown_0x{mask & ~known:x}")
    return names


class _Reader:
    """Reads fields of one GPU; an NVML error is kept per field, never raised."""

    def __init__(self, nvml: Any, gpu: GpuHealth):
        self.nvml, self.gpu = nvml, gpu

    def __call__(self, field: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except self.nvml.NVMLError as exc:
            if isinstance(exc, self.nvml.NVMLError_NotSupported):
                if field not in self.gpu.not_supported:
                    self.gpu.not_supported.append(field)
            else:
                self.gpu.errors[field] = str(exc)
            return None


def init(nvml: Any) -> None:
    """nvmlInit, with a driver that is absent or unusable as one clear typed error."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        if isinstance(exc, nvml.NVMLError_LibraryNotFound):
            raise NotInstalled(SOURCE, "no NVIDIA driver here (libnvidia-ml.so.1 not "
                               "found)", "nvmlInit") from None
        if isinstance(exc, nvml.NVMLError_DriverNotLoaded):
            raise NotInstalled(SOURCE, "no NVIDIA driver here (the driver is not "
                               "loaded)", "nvmlInit") from None
        if isinstance(exc, nvml.NVMLError_NoPermission):
            raise Forbidden(SOURCE, f"NVML refused: {exc}", "nvmlInit") from None
        raise SourceError(SOURCE, f"NVML could not start: {exc}", "nvmlInit") from None


def read_gpu(nvml: Any, index: int) -> tuple[GpuHealth, Any]:
    gpu = GpuHealth(index=index)
    r = _Reader(nvml, gpu)
    handle = r("handle", nvml.nvmlDeviceGetHandleByIndex, index)
    if handle is None:
        gpu.problems = [f"handle: NVML cannot open this GPU "
                        f"({gpu.errors.get('handle', 'not supported')})"]
        return gpu, None
    name = r("name", nvml.nvmlDeviceGetName, handle)
    gpu.name = _text(name) if name is not None else None
    uuid = r("uuid", nvml.nvmlDeviceGetUUID, handle)
    gpu.uuid = _text(uuid) if uuid is not None else None
    pci = r("pci_bus_id", nvml.nvmlDeviceGetPciInfo, handle)
    gpu.pci_bus_id = _text(pci.busId) if pci is not None else None
    gpu.temperature_c = r("temperature_c", nvml.nvmlDeviceGetTemperature, handle,
                          nvml.NVML_TEMPERATURE_GPU)
    mw = r("power_w", nvml.nvmlDeviceGetPowerUsage, handle)
    gpu.power_w = mw / 1000 if mw is not None else None
    limit = r("power_limit_w", nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
    gpu.power_limit_w = limit / 1000 if limit is not None else None
    gpu.sm_clock_mhz = r("sm_clock_mhz", nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)
    gpu.sm_clock_max_mhz = r("sm_clock_max_mhz", nvml.nvmlDeviceGetMaxClockInfo, handle,
                             nvml.NVML_CLOCK_SM)
    gpu.mem_clock_mhz = r("mem_clock_mhz", nvml.nvmlDeviceGetClockInfo, handle,
                          nvml.NVML_CLOCK_MEM)
    reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    mask = r("throttle_reasons", reasons_fn, handle)
    if mask is not None:
        gpu.throttle_mask = int(mask)
        gpu.throttle_reasons = decode_throttle_reasons(nvml, int(mask))
    _read_memory_health(nvml, r, gpu, handle)
    gpu.nvlinks = _read_nvlinks(nvml, r, handle)
    gpu.problems = problems(gpu)
    return gpu, handle


def _read_memory_health(nvml: Any, r: _Reader, gpu: GpuHealth, handle: Any) -> None:
    mode = r("ecc_enabled", nvml.nvmlDeviceGetEccMode, handle)
    if mode is not None:
        gpu.ecc_enabled = bool(mode[0] == nvml.NVML_FEATURE_ENABLED)
    for field, counter in (("ecc_volatile", nvml.NVML_VOLATILE_ECC),
                           ("ecc_aggregate", nvml.NVML_AGGREGATE_ECC)):
        corrected = r(field, nvml.nvmlDeviceGetTotalEccErrors, handle,
                      nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, counter)
        uncorrected = r(field, nvml.nvmlDeviceGetTotalEccErrors, handle,
                        nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, counter)
        if corrected is not None and uncorrected is not None:
            setattr(gpu, field, {"corrected": int(corrected), "uncorrected": int(uncorrected)})
    sbe = r("retired_pages", nvml.nvmlDeviceGetRetiredPages, handle,
            nvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
    dbe = r("retired_pages", nvml.nvmlDeviceGetRetiredPages, handle,
            nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
    if sbe is not None and dbe is not None:
        gpu.retired_pages = {"single_bit": len(sbe), "double_bit": len(dbe)}
    pending = r("retired_pages_pending", nvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)
    if pending is not None:
        gpu.retired_pages_pending = pending == nvml.NVML_FEATURE_ENABLED
    rows = r("remapped_rows", nvml.nvmlDeviceGetRemappedRows, handle)
    if rows is not None:
        corr, unc, is_pending, failure = rows
        gpu.remapped_rows = {"correctable": int(corr), "uncorrectable": int(unc),
                             "pending": bool(is_pending), "failure": bool(failure)}


def _read_nvlinks(nvml: Any, r: _Reader, handle: Any) -> list[dict[str, Any]] | None:
    """Links until the first that does not exist (NVML answers NotSupported or
    InvalidArgument past the last one); None when the GPU has no NVLink at all."""
    links = []
    for link in range(nvml.NVML_NVLINK_MAX_LINKS):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except nvml.NVMLError as exc:
            absent = (nvml.NVMLError_NotSupported, nvml.NVMLError_InvalidArgument)
            if link == 0 and not isinstance(exc, absent):
                r.gpu.errors["nvlinks"] = str(exc)
            elif link == 0:
                r.gpu.not_supported.append("nvlinks")
            break
        entry: dict[str, Any] = {"link": link, "active": state == nvml.NVML_FEATURE_ENABLED}
        for const, name in _NVLINK_COUNTERS:
            value = r(f"nvlink_{name}", nvml.nvmlDeviceGetNvLinkErrorCounter, handle, link,
                      getattr(nvml, const))
            if value is not None:
                entry[name] = int(value)
        links.append(entry)
    return links or None


def problems(gpu: GpuHealth) -> list[str]:
    lost = sorted(f for f, e in gpu.errors.items() if "GPU is lost" in e)
    out = [f"{lost[0]}: GPU is lost (fell off the bus; the node needs a reset)"] if lost else []
    if gpu.ecc_volatile and gpu.ecc_volatile["uncorrected"]:
        out.append(f"ecc_volatile: {gpu.ecc_volatile['uncorrected']} uncorrectable ECC errors "
                   "since the driver loaded")
    if gpu.remapped_rows:
        if gpu.remapped_rows["failure"]:
            out.append("remapped_rows: a row remap failed (the GPU needs service)")
        if gpu.remapped_rows["pending"]:
            out.append("remapped_rows: a row remap is pending (reset the GPU to apply it)")
    if gpu.retired_pages_pending:
        out.append("retired_pages_pending: a page retirement is pending (reset the GPU)")
    slow = sorted(SLOWDOWN_REASONS & set(gpu.throttle_reasons or []))
    if slow:
        out.append(f"throttle_reasons: clocks held down by {', '.join(slow)}")
    down = [str(link["link"]) for link in gpu.nvlinks or [] if not link["active"]]
    if down:
        out.append(f"nvlinks: link {', '.join(down)} inactive")
    return out


def listen_for_xids(nvml: Any, handles: list[tuple[int, Any]],
                    wait_ms: int) -> tuple[list[XidEvent], str | None]:
    """Register for Xid (critical error) events on every GPU and wait up to `wait_ms`."""
    if wait_ms <= 0 or not handles:
        return [], None
    try:
        event_set = nvml.nvmlEventSetCreate()
    except nvml.NVMLError as exc:
        return [], f"nvmlEventSetCreate: {exc}"
    events: list[XidEvent] = []
    note = None
    try:
        registered = []
        for index, handle in handles:
            try:
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError,
                                              event_set)
                registered.append((index, handle))
            except nvml.NVMLError as exc:
                note = f"GPU {index}: Xid events not available ({exc})"
        by_handle = {_handle_key(h): i for i, h in registered}
        deadline = time.monotonic() + wait_ms / 1000
        while registered and len(events) < 100:
            remaining = int((deadline - time.monotonic()) * 1000)
            if remaining <= 0:
                break
            try:
                data = nvml.nvmlEventSetWait_v2(event_set, remaining)
            except nvml.NVMLError_Timeout:
                break
            except nvml.NVMLError as exc:
                note = f"nvmlEventSetWait: {exc}"
                break
            if data.eventType == nvml.nvmlEventTypeXidCriticalError:
                events.append(XidEvent(gpu_index=by_handle.get(_handle_key(data.device)),
                                       xid=int(data.eventData)))
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlEventSetFree(event_set)
    return events, note


def _handle_key(handle: Any) -> Any:
    """A device handle's identity: ctypes pointers compare by address, not by object."""
    import ctypes

    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return id(handle)


def read_node(nvml: Any | None = None, xid_wait_ms: int = XID_WAIT_MS) -> NodeHealth:
    """Every GPU of this host. NotInstalled when there is no driver."""
    if nvml is None:
        import pynvml as nvml
    init(nvml)
    try:
        node = NodeHealth(host=socket.gethostname(), xid_listen_ms=xid_wait_ms)
        for field, fn in (("driver_version", nvml.nvmlSystemGetDriverVersion),
                          ("nvml_version", nvml.nvmlSystemGetNVMLVersion),
                          ("cuda_driver_version", nvml.nvmlSystemGetCudaDriverVersion)):
            try:
                value = fn()
            except nvml.NVMLError:
                continue
            setattr(node, field, value if field == "cuda_driver_version" else _text(value))
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as exc:
            raise SourceError(SOURCE, f"cannot count GPUs: {exc}", "nvmlDeviceGetCount") \
                from None
        handles = []
        for index in range(count):
            gpu, handle = read_gpu(nvml, index)
            node.gpus.append(gpu)
            if handle is not None:
                handles.append((index, handle))
        node.xid_events, node.xid_listen_error = listen_for_xids(nvml, handles, xid_wait_ms)
        for event in node.xid_events:
            for gpu in node.gpus:
                if gpu.index == event.gpu_index:
                    gpu.problems.append(f"xid: Xid {event.xid} while listening")
        return node
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()
