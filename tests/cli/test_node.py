"""`goodput node-health`: no driver here (one line, exit 2), the FAKE NVML fixture's GPUs as
JSON and as a table, and Xid lines of a real kernel log mapped to this host's GPUs."""

from __future__ import annotations

import json
from pathlib import Path

import pynvml as N
import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.cli.node import kernel_xids
from goodput_agent.sources.nvml import GpuHealth, NodeHealth
from tests.sources.nvml_fixture import FakeGpu, has_nvidia_driver, install

REAL_XIDS = Path(__file__).resolve().parents[2].parent / "shared" / "realworld" / "A_xid" / \
    "hf_m4_tr190_xid63_xid64_row_remap.log"


@pytest.mark.skipif(has_nvidia_driver(), reason="this host has an NVIDIA driver")
def test_no_driver_one_line_exit_2():
    result = CliRunner().invoke(cli, ["node-health", "--json"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "goodput: error: nvml: no NVIDIA driver here (libnvidia-ml.so.1 not found)"]


def test_json_and_table_from_the_fake_nvml(monkeypatch):
    install(monkeypatch, [FakeGpu(), FakeGpu(reasons=N.nvmlClocksThrottleReasonHwSlowdown,
                                             bus_id=b"00000000:2A:00.0")], events=[(1, 48)])
    result = CliRunner().invoke(cli, ["node-health", "--json", "--no-kernel-log",
                                      "--xid-wait", "0.1"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [g["pci_bus_id"] for g in doc["gpus"]] == ["00000000:1B:00.0", "00000000:2A:00.0"]
    assert doc["xid_events"] == [{"gpu_index": 1, "xid": 48}]
    assert doc["gpus"][1]["problems"] == ["throttle_reasons: clocks held down by hw_slowdown",
                                          "xid: Xid 48 while listening"]
    table = CliRunner().invoke(cli, ["node-health", "--no-kernel-log", "--xid-wait", "0"])
    assert table.exit_code == 0
    assert "GPU 1 throttle_reasons: clocks held down by hw_slowdown" in table.output
    assert table.output.splitlines()[0].endswith("driver 550.90.07  NVML 12.550.90.07  2 GPUs")


@pytest.mark.skipif(not REAL_XIDS.is_file(), reason="needs ../shared (CI has it)")
def test_kernel_xids_map_to_this_hosts_gpus():
    health = NodeHealth(host="h", gpus=[GpuHealth(index=0, pci_bus_id="00000000:10:1C.0"),
                                        GpuHealth(index=1, pci_bus_id="00000000:90:1C.0")])
    found = kernel_xids(REAL_XIDS.read_text(), health)
    assert {(x["xid"], x["gpu_index"]) for x in found} >= {(63, 0), (64, 1)}
    assert all("NVRM: Xid" in x["line"] for x in found)


def test_dcgm_health_of_named_nodes_from_a_real_prometheus(tmp_path):
    from tests.metrics.test_dcgm_health import dcgm_series
    from tests.servers.prometheus import prometheus_over_text

    window = "2026-03-02T09:10:00Z/2026-03-02T09:40:00Z"
    with prometheus_over_text(tmp_path, dcgm_series()) as url:
        result = CliRunner().invoke(cli, ["node-health", "--prometheus", url, "--node",
                                          "gpu-node-02", "--since", window, "--json"])
        table = CliRunner().invoke(cli, ["node-health", "--prometheus", url, "--since", window])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(g["host"], g["gpu"], [x["xid"] for x in g["xids"]]) for g in doc["gpus"]] == \
        [("gpu-node-02", "0", []), ("gpu-node-02", "1", [48, 79])]
    assert table.exit_code == 0 and "gpu-node-02 GPU 1 Xid 48 first seen" in table.output
    assert "4 GPUs" in table.output  # all nodes without --node


def test_node_needs_prometheus():
    result = CliRunner().invoke(cli, ["node-health", "--node", "x"])
    assert result.exit_code == 2 and "--node goes with --prometheus" in result.output
