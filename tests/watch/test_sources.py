"""The flags build the sources: each kind of source from its own flags, a Kubernetes API that
is down at start a source that backs off (not a crash), the Alertmanager receiver started
through the watch's sink, bad addresses one line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from goodput_agent.core.errors import BadInput
from goodput_agent.watch.sources import (
    SourceOptions,
    build_sources,
    listen_address,
    start_receivers,
)
from goodput_agent.watch.trigger import SourceDown
from tests.watch.test_alertmanager import XID, Sink, alert, payload, post


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_each_flag_builds_its_source() -> None:
    opts = SourceOptions(k8s=True, prometheus_url="http://127.0.0.1:1")
    assert [s.name for s in build_sources(opts)] == ["kubernetes", "prometheus"]
    assert opts.any and not SourceOptions().any
    assert SourceOptions(alertmanager_listen="127.0.0.1:0").any


def test_an_unreachable_api_server_is_a_failed_poll_not_a_failed_start(tmp_path: Path) -> None:
    (k8s,) = build_sources(SourceOptions(k8s=True, kubeconfig=tmp_path / "missing"))
    with pytest.raises(SourceDown):
        k8s.poll(None)


def test_the_receiver_hands_alerts_to_the_named_sink() -> None:
    sinks: dict[str, Sink] = {}

    def sink(name: str) -> Sink:
        return sinks.setdefault(name, Sink())

    port = _dead_port()
    stops = start_receivers(SourceOptions(alertmanager_listen=f"127.0.0.1:{port}"), sink)
    try:
        status, _ = post(f"http://127.0.0.1:{port}/alertmanager",
                         payload(alert(XID, "2026-12-04T05:00:00Z")))
    finally:
        for stop in stops:
            stop()
    assert status == 200
    (got,) = sinks["alertmanager"].got
    assert got.source == "alertmanager" and got.collect["node"] == "gpu-node-07"


@pytest.mark.parametrize("text", ["9095", "host:port", "h:70000", ""])
def test_bad_listen_addresses_are_bad_input(text: str) -> None:
    with pytest.raises(BadInput):
        listen_address(text)
    assert listen_address("[::1]:9095") == ("::1", 9095)


def _watch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "goodput_agent.cli", "watch", *args],
                          capture_output=True, text=True, timeout=120)


def test_a_dead_prometheus_is_a_down_source_in_status(tmp_path: Path) -> None:
    ledger = tmp_path / "l.duckdb"
    url = f"http://127.0.0.1:{_dead_port()}"
    run = _watch("--prometheus", url, "--once", "--timeout", "2", "--ledger", str(ledger))
    assert run.returncode == 4, run.stderr
    assert "Traceback" not in run.stderr
    status = _watch("status", "--json", "--ledger", str(ledger))
    (prom,) = [s for s in json.loads(status.stdout)["sources"] if s["source"] == "prometheus"]
    assert prom["ok"] is False and prom["last_error"]


def test_a_bad_listen_flag_is_one_line_exit_2(tmp_path: Path) -> None:
    run = _watch("--alertmanager-listen", "nowhere", "--once", "--ledger",
                 str(tmp_path / "l.duckdb"))
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "HOST:PORT" in run.stderr
