import pytest

from goodput_agent.analysis.slowdown.throttle import CLOCK_DROP, REASON_BITS, throttle_findings
from goodput_agent.parsing.openmetrics import Series
from tests.analysis.slowdown.trace_builders import dcgm_series

T0 = 1_777_888_800.0  # 2026-05-04 10:00:00 UTC


def s(name, gpu, values, host="gpu-node-01"):
    return Series(name=name, labels={"gpu": gpu, "Hostname": host},
                  points=[(T0 + 60 * i, v) for i, v in enumerate(values)])


def test_bits_are_nvmls_clock_event_reasons():
    assert REASON_BITS == {0x1: "GpuIdle", 0x2: "ApplicationsClocksSetting", 0x4: "SwPowerCap",
                           0x8: "HwSlowdown", 0x10: "SyncBoost", 0x20: "SwThermalSlowdown",
                           0x40: "HwThermalSlowdown", 0x80: "HwPowerBrakeSlowdown",
                           0x100: "DisplayClockSetting"}


def test_reasons_and_clock_drop_name_the_gpu():
    found = throttle_findings([
        s("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "3", [0, 0, 0x48, 0x48]),
        s("DCGM_FI_DEV_SM_CLOCK", "3", [1980, 1200, 1200, 1210]),
        s("DCGM_FI_DEV_SM_CLOCK", "2", [1980, 1980, 1975, 1980]),
        s("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "2", [1, 1, 1, 0])])  # idle is not throttling
    bad = [f for f in found if f.throttled]
    assert [(f.node, f.gpu) for f in bad] == [("gpu-node-01", "3")]
    assert bad[0].reasons == ["HwSlowdown", "HwThermalSlowdown"]
    assert bad[0].clock_ratio < 0.7 and bad[0].evidence[0].locator.span
    assert (bad[0].first.minute, bad[0].last.minute) == (1, 3)
    idle = next(f for f in found if f.gpu == "2")
    assert idle.other_reasons == ["GpuIdle"] and not idle.reasons


def test_clock_drop_alone_is_throttling_against_peers():
    found = throttle_findings([s("DCGM_FI_DEV_SM_CLOCK", str(g), [1980] * 4) for g in range(3)]
                              + [s("DCGM_FI_DEV_SM_CLOCK", "3", [1400] * 4)])
    assert [f.gpu for f in found if f.throttled] == ["3"]


@pytest.mark.parametrize("bits", [0x1, 0x2, 0x10, 0x100])
def test_idle_app_clocks_sync_boost_and_display_are_not_throttling(bits):
    (f,) = throttle_findings([s("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "0", [bits] * 4)])
    assert not f.throttled and f.other_reasons == [REASON_BITS[bits]]


def test_idle_clocks_are_not_a_drop():
    series = dcgm_series("n1", [0, 1], T0, idle_gpus=(1,))
    assert not any(f.throttled for f in throttle_findings(series))
    # without a reason series an idle-level clock is idling too
    clocks = [x for x in series if x.name == "DCGM_FI_DEV_SM_CLOCK"]
    assert not any(f.throttled for f in throttle_findings(clocks))


def test_old_metric_name_power_temperature_and_evidence_spans():
    series = dcgm_series("gpu-node-02", [0, 1, 2, 3], T0, throttled={2: (0x40, 1110.0)},
                         throttle_from=20, reasons_name="DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
    found = throttle_findings(series, {"DCGM_FI_DEV_SM_CLOCK": "metrics/dcgm.om"})
    (f,) = [f for f in found if f.throttled]
    assert (f.node, f.gpu, f.reasons) == ("gpu-node-02", "2", ["HwThermalSlowdown"])
    assert f.clock_ratio == pytest.approx(1110 / 1980) and f.clock_ratio < CLOCK_DROP
    assert (f.max_temp_c, f.power_w) == (91.0, 400.0)
    assert f.first.isoformat() == "2026-05-04T10:05:00+00:00"
    clock = next(e for e in f.evidence if "SM_CLOCK" in e.locator.span)
    assert clock.locator.path == "metrics/dcgm.om" and clock.kind == "metric_series"
    assert clock.locator.span == ("DCGM_FI_DEV_SM_CLOCK{Hostname=gpu-node-02,gpu=2} "
                                  "10:05:00-10:09:45 UTC: 1980 -> 1110 MHz (56%) in 20 of 40 "
                                  "samples")
    assert {e.locator.path for e in f.evidence if e is not clock} == {"metrics"}
