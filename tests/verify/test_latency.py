"""Latency verification live from a real Prometheus (Debian's package, backfilled with promtool
from the generated after bundle; tests/servers/prometheus.py) agrees with the same verification
from the bundle's files."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.evals.verify_generator import latency_pairs
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.metrics.file_source import FileMetricsSource
from goodput_agent.metrics.prometheus import PrometheusSource
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.verify.latency import WARMUP
from goodput_agent.verify.run import verify_investigation
from tests.servers.prometheus import PrometheusUnavailable, ensure_prometheus, running_prometheus


def test_live_prometheus_verification_matches_the_bundle(tmp_path: Path) -> None:
    try:
        ensure_prometheus()
    except PrometheusUnavailable as exc:
        pytest.skip(str(exc))
    pairs = {p.pair_id: p for p in latency_pairs(tmp_path / "pairs", seed=7)}
    p = pairs["latency-queueing-regressed"]
    before, after = tmp_path / "pairs" / p.before, tmp_path / "pairs" / p.after
    files = sorted((after / "metrics").iterdir())
    span = FileMetricsSource.from_files(files).span("vllm:e2e_request_latency_seconds")
    assert span is not None
    window = TimeWindow(start=span.start + WARMUP, end=span.end)
    ledger = tmp_path / "l.duckdb"
    with Ledger(ledger) as lg:
        inv = investigate_bundle(before, lg).investigation_id or ""
        from_files, _ = verify_investigation(lg, inv, after)
        with running_prometheus(tmp_path / "prom", files) as url:
            live, rows = verify_investigation(
                lg, inv, None, source=PrometheusSource(url, horizon=window), window=window)
            assert live.verdict == from_files.verdict == "regressed_elsewhere"
            a, b = live.numbers["e2e_p90_s"]["after"], from_files.numbers["e2e_p90_s"]["after"]
            assert abs(a - b) <= 0.05 * b, (a, b)
            assert live.evidence[0].startswith(f"prometheus {url}") and rows
            lg.close()
            w = f"{window.start.isoformat()}/{window.end.isoformat()}"
            r = CliRunner().invoke(cli, ["verify", inv, "--prometheus", url, "--since", w,
                                         "--json", "--ledger", str(ledger)])
            assert r.exit_code == 0, r.output
            assert json.loads(r.output)["verdict"] == "regressed_elsewhere"
    assert window.end - window.start > timedelta(minutes=20)
