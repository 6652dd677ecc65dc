"""The NVIDIA device plugin's own log (Go's standard logger) is read for its XidCriticalError
lines whatever the file is called, on the bundle's clock. Lines written here in the plugin's
format (k8s-device-plugin's health check: "XidCriticalError: Xid=%d on Device=%s, the device
will go unhealthy.")."""

from datetime import UTC, datetime
from pathlib import Path

from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.kernel_log import PARSER
from goodput_agent.parsing.registry import identify

LOG = """2026/11/02 09:00:01 Starting FS watcher.
2026/11/02 09:00:01 Starting OS watcher.
2026/11/02 09:00:01 Retreiving plugins.
2026/11/02 09:00:02 Starting GRPC server for 'nvidia.com/gpu'
2026/11/02 09:00:02 Registered device plugin for 'nvidia.com/gpu' with Kubelet
2026/11/02 09:41:17 XidCriticalError: Xid=79 on Device=GPU-0f3c2a11-5b2e-4c1e-9d77-3a1b2c3d4e5f, \
the device will go unhealthy.
2026/11/02 09:41:17 'nvidia.com/gpu' device marked unhealthy: \
GPU-0f3c2a11-5b2e-4c1e-9d77-3a1b2c3d4e5f
"""


def test_a_device_plugin_log_under_any_name_is_read(tmp_path: Path) -> None:
    path = tmp_path / "plugin-pod.txt"
    path.write_text(LOG)
    assert identify(LOG, path.name) is PARSER
    res = PARSER.parse(path, ParseContext(rel_path="k8s/plugin-pod.txt"))
    xids = [e for e in res.events if e.detail.get("xid") == 79]
    assert xids and xids[0].ts == datetime(2026, 11, 2, 9, 41, 17, tzinfo=UTC)
    assert xids[0].locator.line_start == 6


def test_a_rank_log_that_mentions_xids_in_prose_is_not_claimed() -> None:
    head = "step 10 loss 2.1\nwhat is Xid 79? see the docs\nstep 11 loss 2.0\n"
    assert identify(head, "rank0.log") is not PARSER
