from goodput_agent.analysis.throttle import throttle_findings
from goodput_agent.parsing.openmetrics import Series

T0 = 1_777_888_800.0


def s(name, gpu, values, host="gpu-node-01"):
    return Series(name=name, labels={"gpu": gpu, "Hostname": host},
                  points=[(T0 + 60 * i, v) for i, v in enumerate(values)])


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


def test_clock_drop_alone_is_throttling_against_peers():
    found = throttle_findings([s("DCGM_FI_DEV_SM_CLOCK", str(g), [1980] * 4) for g in range(3)]
                              + [s("DCGM_FI_DEV_SM_CLOCK", "3", [1400] * 4)])
    assert [f.gpu for f in found if f.throttled] == ["3"]
