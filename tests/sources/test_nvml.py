"""NVML node health: the no-driver path for real (this machine has no NVIDIA driver), and the
reading and decoding of every field against the FAKE NVML fixture (tests/sources/nvml_fixture.py:
pynvml's functions monkeypatched, NVML's real types and constants)."""

from __future__ import annotations

import pynvml as N
import pytest

from goodput_agent.sources.errors import NotInstalled
from goodput_agent.sources.nvml import decode_throttle_reasons, read_node
from tests.sources.nvml_fixture import FakeGpu, err, has_nvidia_driver, install

V, A = N.NVML_VOLATILE_ECC, N.NVML_AGGREGATE_ECC
CORR, UNC = N.NVML_MEMORY_ERROR_TYPE_CORRECTED, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED


@pytest.mark.skipif(has_nvidia_driver(), reason="this host has an NVIDIA driver")
def test_no_driver_is_one_clear_error():
    with pytest.raises(NotInstalled) as got:
        read_node()
    assert str(got.value) == "nvml: no NVIDIA driver here (libnvidia-ml.so.1 not found)"
    assert got.value.kind == "not_installed"


def test_driver_not_loaded(monkeypatch):
    install(monkeypatch, [], init_error=N.NVML_ERROR_DRIVER_NOT_LOADED)
    with pytest.raises(NotInstalled, match="the driver is not loaded"):
        read_node()


def test_throttle_reasons_decode_with_nvmls_constants():
    mask = N.nvmlClocksThrottleReasonHwSlowdown | N.nvmlClocksThrottleReasonSwPowerCap
    assert decode_throttle_reasons(N, mask) == ["sw_power_cap", "hw_slowdown"]
    assert decode_throttle_reasons(N, 0) == []
    assert decode_throttle_reasons(N, N.nvmlClocksThrottleReasonHwThermalSlowdown | 0x8000) == \
        ["hw_thermal_slowdown", "unknown_0x8000"]


def fleet() -> list[FakeGpu]:
    healthy = FakeGpu(ecc={(CORR, A): 12})
    sick = FakeGpu(name=b"NVIDIA H100 80GB HBM3", uuid="GPU-11111111-2222-3333-4444-555555555555",
                   bus_id=b"00000000:10:1C.0", temperature=87, power_mw=err(N.NVML_ERROR_UNKNOWN),
                   reasons=N.nvmlClocksThrottleReasonHwSlowdown
                   | N.nvmlClocksThrottleReasonHwThermalSlowdown,
                   ecc={(UNC, V): 2, (UNC, A): 5, (CORR, V): 1},
                   remapped=(0, 1, 1, 0),
                   nvlinks=[N.NVML_FEATURE_ENABLED] * 3 + [N.NVML_FEATURE_DISABLED],
                   nvlink_errors={(3, N.NVML_NVLINK_ERROR_DL_CRC_FLIT): 4711})
    pascal = FakeGpu(name="Tesla P100-PCIE-16GB", bus_id=b"00000000:3B:00.0",
                     retired={N.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS:
                              [0x1000, 0x2000],
                              N.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR: [0x3000]},
                     retired_pending=N.NVML_FEATURE_ENABLED, remapped=N.NVML_ERROR_NOT_SUPPORTED,
                     nvlinks=[], xid_events=N.NVML_ERROR_NOT_SUPPORTED)
    return [healthy, sick, pascal]


def test_every_field_read_and_decoded(monkeypatch):
    calls = install(monkeypatch, fleet(), events=[(1, 79)])
    node = read_node(xid_wait_ms=300)
    assert (node.driver_version, node.nvml_version, node.cuda_driver_version) == \
        ("550.90.07", "12.550.90.07", 12040)
    ok, sick, pascal = node.gpus
    assert (ok.name, ok.pci_bus_id, ok.power_w, ok.power_limit_w) == \
        ("NVIDIA H100 80GB HBM3", "00000000:1B:00.0", 312.456, 700.0)
    assert (ok.sm_clock_mhz, ok.mem_clock_mhz, ok.sm_clock_max_mhz) == (1980, 2619, 1980)
    assert ok.throttle_reasons == ["gpu_idle"] and ok.ecc_enabled is True
    assert ok.ecc_volatile == {"corrected": 0, "uncorrected": 0}
    assert ok.ecc_aggregate == {"corrected": 12, "uncorrected": 0}
    # Hopper: no page retirement (row remapping instead) -> n/a, not an error
    assert ok.retired_pages is None and "retired_pages" in ok.not_supported
    assert ok.remapped_rows == {"correctable": 0, "uncorrectable": 0, "pending": False,
                                "failure": False}
    assert len(ok.nvlinks) == 18 and all(x["active"] for x in ok.nvlinks)
    assert ok.problems == [] and ok.errors == {}

    assert sick.name == "NVIDIA H100 80GB HBM3"  # bytes from older pynvml decoded
    assert sick.power_w is None and sick.errors == {"power_w": "Unknown Error"}
    assert sick.temperature_c == 87  # the other fields still read
    assert sick.throttle_reasons == ["hw_slowdown", "hw_thermal_slowdown"]
    assert sick.ecc_volatile == {"corrected": 1, "uncorrected": 2}
    assert sick.nvlinks[3] == {"link": 3, "active": False, "replay": 0, "recovery": 0,
                               "crc_flit": 4711, "crc_data": 0}
    assert sick.problems == [
        "ecc_volatile: 2 uncorrectable ECC errors since the driver loaded",
        "remapped_rows: a row remap is pending (reset the GPU to apply it)",
        "throttle_reasons: clocks held down by hw_slowdown, hw_thermal_slowdown",
        "nvlinks: link 3 inactive",
        "xid: Xid 79 while listening"]

    assert pascal.retired_pages == {"single_bit": 2, "double_bit": 1}
    assert pascal.retired_pages_pending is True
    assert pascal.remapped_rows is None and "remapped_rows" in pascal.not_supported
    assert pascal.nvlinks is None and "nvlinks" in pascal.not_supported
    assert pascal.problems == ["retired_pages_pending: a page retirement is pending "
                               "(reset the GPU)"]

    assert [(e.gpu_index, e.xid) for e in node.xid_events] == [(1, 79)]
    assert "GPU 2: Xid events not available" in node.xid_listen_error
    assert calls["registered"] == [0, 1] and calls["freed"] == 1
    assert calls["init"] == calls["shutdown"] == 1


def test_no_wait_registers_nothing(monkeypatch):
    calls = install(monkeypatch, fleet()[:1], events=[(0, 48)])
    node = read_node(xid_wait_ms=0)
    assert node.xid_events == [] and calls["registered"] == []


def test_a_lost_gpu_is_a_problem_and_the_others_still_read(monkeypatch):
    lost = FakeGpu(bus_id=b"00000000:2A:00.0", power_mw=err(N.NVML_ERROR_GPU_IS_LOST))
    install(monkeypatch, [FakeGpu(), lost])
    original = N.nvmlDeviceGetHandleByIndex

    def handle(i: int):  # a third GPU NVML cannot even open
        if i == 2:
            raise N.NVMLError(N.NVML_ERROR_GPU_IS_LOST)
        return original(i)

    monkeypatch.setattr(N, "nvmlDeviceGetHandleByIndex", handle)
    monkeypatch.setattr(N, "nvmlDeviceGetCount", lambda: 3)
    node = read_node(xid_wait_ms=0)
    assert node.gpus[0].problems == []
    assert node.gpus[1].problems == ["power_w: GPU is lost (fell off the bus; the node needs a "
                                     "reset)"]
    assert node.gpus[1].temperature_c == 41
    assert node.gpus[2].problems == ["handle: NVML cannot open this GPU (GPU is lost)"]
