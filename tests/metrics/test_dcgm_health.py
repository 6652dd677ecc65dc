"""DCGM node/GPU health around a job's window, against a real Prometheus (Debian's package,
started on loopback, backfilled by promtool) holding DCGM exporter series that `dcgm_series()`
below generates: two nodes of two GPUs; gpu-node-02's GPU 1 logs Xid 48 then Xid 79, two
double-bit ECC errors, a remapped row and NVLink CRC errors, and runs hot; the others are
healthy. Before and after the window, the sick GPU's counters stand still and another Xid (13)
falls outside it."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goodput_agent.metrics.dcgm_health import field_query, gpu_health, host_matcher
from goodput_agent.metrics.dcgm_names import BY_KEY, FIELDS
from goodput_agent.metrics.prometheus import PrometheusSource
from goodput_agent.metrics.source import TimeWindow
from tests.servers.prometheus import prometheus_over_text

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SCRAPE_S = 15
DURATION_S = 3600
JOB = TimeWindow(start=T0 + timedelta(minutes=10), end=T0 + timedelta(minutes=40))
SICK = ("gpu-node-02", "1")


def _value(key: str, host: str, gpu: str, t: int) -> float:
    """What DCGM would report at t seconds after T0."""
    sick = (host, gpu) == SICK
    inside = t >= 900  # the faults start 15 minutes in (inside the job's window)
    if key == "xid":
        if sick and t >= 3000:
            return 13  # after the window: not this job's
        return (79 if t >= 1500 else 48 if inside else 0) if sick else 0
    if key == "ecc_dbe":
        return 2 if sick and t >= 1200 else 0
    if key == "ecc_sbe":
        return 40 + (t // 600 if sick else 0)
    if key == "remapped_unc":
        return 1 if sick and t >= 1200 else 0
    if key == "nvlink_crc_flit":
        return (t // 60 if sick and inside else 0) if t < 2400 else (40 if sick else 0)
    if key == "temp_max":
        return 90 if sick and 1200 <= t < 1800 else 62 + int(gpu)
    if key == "mem_temp_max":
        return 70
    if key == "power_max":
        return 640 + 10 * int(gpu)
    if key == "sm_clock_min":
        return 1410 if sick and 1200 <= t < 1800 else 1980
    return 0


def dcgm_series() -> str:
    """OpenMetrics text as `promtool tsdb create-blocks-from openmetrics` reads it; counters
    are written as gauges so that their names stay DCGM's own (OpenMetrics would append
    `_total` to a counter's samples)."""
    out = io.StringIO()
    for f in FIELDS:
        out.write(f"# TYPE {f.name} gauge\n# HELP {f.name} {f.what}\n")
        for host in ("gpu-node-01", "gpu-node-02"):
            for gpu in ("0", "1"):
                labels = (f'{{gpu="{gpu}",UUID="GPU-{host[-2:]}{gpu}-0000",device="nvidia{gpu}",'
                          f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}"}}')
                for t in range(0, DURATION_S + 1, SCRAPE_S):
                    ts = int(T0.timestamp()) + t
                    out.write(f"{f.name}{labels} {_value(f.key, host, gpu, t):g} {ts}\n")
    out.write("# EOF\n")
    return out.getvalue()


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    with prometheus_over_text(tmp_path_factory.mktemp("prom"), dcgm_series()) as url:
        yield url


def test_queries_are_pushed_down_per_gpu():
    assert host_matcher({"b.x", "a"}) == '{Hostname=~"a|b\\\\.x"}'
    assert field_query(BY_KEY["ecc_dbe"], {"n1"}, JOB) == \
        'sum by (Hostname, gpu) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{Hostname=~"n1"}[1800s]))'
    assert field_query(BY_KEY["xid"], None, JOB) == "DCGM_FI_DEV_XID_ERRORS[1800s]"


def test_health_in_the_jobs_window(prometheus):
    src = PrometheusSource(prometheus, timeout_s=10)
    health = gpu_health(src, JOB, {"gpu-node-01", "gpu-node-02"})
    assert health.errors == [] and health.absent == []
    assert [(g.host, g.gpu) for g in health.gpus] == [
        ("gpu-node-01", "0"), ("gpu-node-01", "1"), ("gpu-node-02", "0"), ("gpu-node-02", "1")]
    sick = health.gpus[3]
    assert (sick.uuid, sick.model) == ("GPU-021-0000", "NVIDIA H100 80GB HBM3")
    assert [(x.xid, x.first_seen) for x in sick.xids] == [
        (48, T0 + timedelta(minutes=15)), (79, T0 + timedelta(minutes=25))]
    assert sick.values["ecc_dbe"] == pytest.approx(2, rel=0.1)
    assert sick.values["remapped_unc"] == pytest.approx(1, rel=0.1)
    assert sick.values["nvlink_crc_flit"] > 10
    assert (sick.values["temp_max"], sick.values["sm_clock_min"]) == (90, 1410)
    v = sick.values
    assert sick.problems == [
        f"Xid 48 first seen {(T0 + timedelta(minutes=15)).isoformat()}",
        f"Xid 79 first seen {(T0 + timedelta(minutes=25)).isoformat()}",
        f"double-bit (uncorrectable) volatile ECC errors rose by {v['ecc_dbe']:g} "
        "(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL)",
        f"rows remapped for uncorrectable errors rose by {v['remapped_unc']:g} "
        "(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS)",
        f"NVLink flow-control CRC errors rose by {v['nvlink_crc_flit']:g} "
        "(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL)",
        "GPU temperature reached 90 C (DCGM_FI_DEV_GPU_TEMP)"]
    for healthy in health.gpus[:3]:
        assert healthy.problems == [] and healthy.xids == []
        assert healthy.values["ecc_dbe"] == 0 and healthy.values["sm_clock_min"] == 1980
    assert len(health.queries) == len(FIELDS)


def test_outside_the_window_and_other_hosts(prometheus):
    src = PrometheusSource(prometheus, timeout_s=10)
    late = TimeWindow(start=T0 + timedelta(minutes=45), end=T0 + timedelta(minutes=59))
    health = gpu_health(src, late, {"gpu-node-02"})
    assert [g.host for g in health.gpus] == ["gpu-node-02", "gpu-node-02"]
    sick = health.gpus[1]
    # the counters stood still after 40 minutes; the late Xid 13 belongs to this window
    assert sick.values["ecc_dbe"] == 0 and sick.values["nvlink_crc_flit"] == 0
    assert [x.xid for x in sick.xids] == [79, 13]
    assert gpu_health(src, late, {"gpu-node-09"}).gpus == []


def test_a_down_server_is_an_error_not_a_crash(tmp_path: Path):
    from tests.servers.debian import free_port

    src = PrometheusSource(f"http://127.0.0.1:{free_port()}", timeout_s=2, attempts=1)
    health = gpu_health(src, JOB)
    assert health.gpus == [] and len(health.errors) == 1
    assert "cannot connect" in health.errors[0]
