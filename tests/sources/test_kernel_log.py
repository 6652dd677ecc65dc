"""This host's kernel log over a window: journalctl -k, else dmesg cut to the window; bounded;
one error naming both when neither can be read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goodput_agent.bundle import scan
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.sources.errors import NotInstalled, SourceError
from goodput_agent.sources.kernel_log import KernelLog, _line_time, in_window, job_window

# `dmesg --time-format iso` as util-linux 2.38 prints it (Debian bookworm)
DMESG = """\
2026-12-03T04:13:15,314017+00:00 random: crng reseeded due to virtual machine fork
2026-12-03T09:59:58,100000+00:00 NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.
 continuation of the line before
2026-12-03T10:20:00,000000+00:00 eth0: link up
"""


def _w(a: str, b: str) -> TimeWindow:
    return TimeWindow(start=datetime.fromisoformat(a), end=datetime.fromisoformat(b))


def test_dmesg_lines_are_cut_to_the_window() -> None:
    got = in_window(DMESG, _w("2026-12-03T09:50:00+00:00", "2026-12-03T10:10:00+00:00"))
    assert got.splitlines() == [DMESG.splitlines()[1], DMESG.splitlines()[2]]
    assert _line_time("2026-12-03T10:20:00,5+0100 x") == datetime(2026, 12, 3, 9, 20, 0,
                                                                     tzinfo=UTC)


def test_job_window_has_margins_and_is_never_empty() -> None:
    t = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    w = job_window(t, t)
    assert (w.start, w.end) == (t - timedelta(minutes=10), t + timedelta(minutes=5))


def test_no_tools_is_one_error_naming_both(tmp_path: Path) -> None:
    kl = KernelLog(env={"PATH": str(tmp_path)})
    with pytest.raises(NotInstalled) as err:
        kl.read(_w("2026-12-03T09:00:00+00:00", "2026-12-03T10:00:00+00:00"))
    assert "journalctl: not installed here; dmesg: not installed here" in str(err.value)


def test_this_hosts_log_is_read_bounded_and_readable_as_a_bundle(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    window = TimeWindow(start=now - timedelta(days=30), end=now + timedelta(minutes=1))
    try:
        out = KernelLog(max_bytes=2000).read(window)
    except SourceError as exc:  # a host where neither may be read: the error names both
        assert "journalctl" in exc.message and "dmesg" in exc.message
        return
    assert out.argv[0] in ("journalctl", "dmesg") and out.name in ("kern.log", "dmesg.txt")
    assert len(out.text.encode()) <= 2000
    times = [t for t in map(_line_time, out.text.splitlines()) if t is not None]
    assert times and all(window.start <= t <= window.end for t in times)
    node = tmp_path / "nodes" / "gpu-node-01"
    node.mkdir(parents=True)
    (node / out.name).write_text(out.text)
    inv = scan(tmp_path)
    assert [(f.format, f.node_hint) for f in inv.files] == [("kernel_log", "gpu-node-01")]
