"""The live Prometheus source against a real Prometheus (Debian's package, started here on
loopback over the generated latency cases backfilled with promtool): the same incident read
from the server and from the bundle's files gives the same verdict and the same numbers;
a server that is down, mute or refusing gives a clear message and a partial report."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from goodput_agent.analysis.latency.analyze import analyse, resolve_service
from goodput_agent.metrics.engine_args import load_engine_args
from goodput_agent.metrics.file_series import load_series
from goodput_agent.metrics.file_source import FileMetricsSource
from goodput_agent.metrics.prometheus import PrometheusSource
from goodput_agent.metrics.source import MetricsUnavailable, Selector, TimeWindow
from tests.conftest import REPO
from tests.servers.prometheus import (
    PrometheusUnavailable,
    ensure_prometheus,
    free_port,
    mute_server,
    running_prometheus,
)

CASES_DIR = REPO / "evals" / "latency_cases"
CASES = sorted(p.parent.name for p in CASES_DIR.glob("*/expected.json"))
REL_TOL = 0.01  # interpolation inside a bucket and window-edge extrapolation


@pytest.fixture(scope="module", autouse=True)
def _prometheus_installed() -> None:
    try:
        ensure_prometheus()
    except PrometheusUnavailable as exc:
        pytest.skip(str(exc))


def _metric_files(case: Path) -> list[Path]:
    return sorted(p for p in (case / "metrics").iterdir() if p.is_file())


def _search(case: Path) -> TimeWindow | None:
    spec = yaml.safe_load((case / "incident.yaml").read_text())
    w = spec.get("window")
    return TimeWindow(start=w["start"], end=w["end"]) if w else None


def _horizon(files: FileMetricsSource) -> TimeWindow:
    span = files.span("vllm:e2e_request_latency_seconds") or \
        files.span("vllm:e2e_request_latency")
    assert span is not None
    return TimeWindow(start=span.start - timedelta(hours=1), end=span.end + timedelta(hours=1))


@pytest.fixture
def served_case(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, str]]:
    case = CASES_DIR / request.param
    with running_prometheus(tmp_path, _metric_files(case)) as url:
        yield case, url


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b)) + 1e-9


def test_backfilled_series_are_queryable_at_their_times(tmp_path: Path) -> None:
    """promtool takes seconds (milliseconds would land in the far future) and drops samples
    out of order: every sampled point must come back at its own time."""
    case = CASES_DIR / CASES[0]
    series = [s for s in load_series(_metric_files(case))
              if s.name == "vllm:num_requests_running"]
    assert series and all(t < 1e11 for s in series for t, _ in s.points)
    s = series[0]
    picks = [s.points[0], s.points[len(s.points) // 2], s.points[-1]]
    sel = Selector(metric=s.name, labels=s.labels).promql()
    with running_prometheus(tmp_path, _metric_files(case)) as url:
        live = PrometheusSource(url)
        for t, v in picks:
            got = live.instant(sel, datetime.fromtimestamp(t, UTC))
            assert len(got) == 1 and float(got[0]["value"][1]) == v
            assert float(got[0]["value"][0]) == t
        before = datetime.fromtimestamp(s.points[0][0] - 1, UTC)
        assert live.instant(sel, before) == []


@pytest.mark.parametrize("served_case", CASES, indirect=True)
def test_server_and_bundle_agree(served_case: tuple[Path, str]) -> None:
    case, url = served_case
    files = FileMetricsSource.from_files(_metric_files(case), root=case)
    live = PrometheusSource(url, horizon=_horizon(files), timeout_s=10)
    revisions = [r for p in sorted((case / "config").glob("*")) if p.is_file()
                 for r in load_engine_args(p, p.name)] if (case / "config").is_dir() else []
    spec = yaml.safe_load((case / "incident.yaml").read_text())
    b = TimeWindow(**spec["baseline"]) if spec.get("baseline") else None
    i = TimeWindow(**spec["incident"]) if spec.get("incident") else None
    results = []
    for src in (files, live):
        labels = resolve_service(src, spec.get("service"))
        results.append(analyse(src, labels, b, i, search=_search(case), revisions=revisions))
    f, p = results
    assert p.missing == [] and f.missing == []
    assert p.verdict.category == f.verdict.category
    assert p.windows is not None and f.windows is not None
    assert p.windows.baseline == f.windows.baseline and p.windows.incident == f.windows.incident
    assert p.windows.change_at == f.windows.change_at
    for key, v in f.ratios.items():
        assert _close(p.ratios[key], v), (key, p.ratios[key], v)
    for which in ("baseline", "incident"):
        fw, pw = getattr(f, which), getattr(p, which)
        for phase in ("e2e", "queue", "prefill", "decode", "ttft"):
            for q in ("p50", "p90", "p99", "mean"):
                a, c = getattr(getattr(fw, phase), q), getattr(getattr(pw, phase), q)
                assert _close(c, a), (which, phase, q, c, a)
        for key in ("request_rate", "running_mean", "waiting_max", "kv_usage_max",
                    "preemption_rate", "gpu_util_mean"):
            assert _close(getattr(pw, key), getattr(fw, key)), (which, key)
        assert pw.config == fw.config


def _cli(*args: str, timeout: float = 120) -> tuple[int, dict, str, float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "goodput_agent.cli", *args, "--json"],
                          capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - t0
    return proc.returncode, json.loads(proc.stdout) if proc.stdout else {}, proc.stderr, took


def test_live_investigation_matches_the_bundle_one(tmp_path: Path) -> None:
    case = CASES_DIR / "l17-prompt-3x"
    spec = yaml.safe_load((case / "incident.yaml").read_text())
    w = spec["window"]
    ledger = str(tmp_path / "l.duckdb")
    code_b, bundle, _, _ = _cli("investigate", str(case), "--ledger", ledger)
    with running_prometheus(tmp_path, _metric_files(case)) as url:
        code_l, live, err, _ = _cli("investigate", "--prometheus", url, "--service",
                                    spec["service"], "--since", f"{w['start']}/{w['end']}",
                                    "--ledger", ledger, "--pictures", str(tmp_path / "pics"))
    assert code_b == code_l == 0, err
    assert sorted(Path(p).name for p in live["pictures"]) == [
        "kv-cache-over-time.svg", "latency-over-time.svg", "latency-phases.svg",
        "waiting-over-time.svg"]
    assert all(Path(p).parent == (tmp_path / "pics").resolve() for p in live["pictures"])
    assert live["root_cause"]["category"] == bundle["root_cause"]["category"] == "prompt_length"
    lw, bw = live["latency"]["windows"], bundle["latency"]["windows"]
    assert lw["change_ratio"] == pytest.approx(bw["change_ratio"], rel=1e-9)
    assert {**lw, "change_ratio": 0} == {**bw, "change_ratio": 0}
    assert live["latency"]["source"] == f"prometheus {url}"
    # the evidence names the server, the PromQL and the two windows
    ev = live["root_cause"]["evidence"][0]
    assert ev["source"] == url and "histogram_quantile" in ev["excerpt"]
    assert "incident" in ev["excerpt"] and "baseline" in ev["excerpt"]


def test_explicit_windows_on_the_latency_command(tmp_path: Path) -> None:
    case = CASES_DIR / "l24-output-3x"
    expected = json.loads((case / "expected.json").read_text())
    change = datetime.fromisoformat(expected["change_at"].replace("Z", "+00:00"))
    iso = "%Y-%m-%dT%H:%M:%SZ"
    base = f"{(change - timedelta(minutes=25)):{iso}}/{(change - timedelta(minutes=2)):{iso}}"
    inc = f"{(change + timedelta(minutes=3)):{iso}}/{(change + timedelta(minutes=25)):{iso}}"
    with running_prometheus(tmp_path, _metric_files(case)) as url:
        code, report, err, _ = _cli("latency", "--prometheus", url, "--baseline", base,
                                    "--incident", inc, "--ledger", str(tmp_path / "l.duckdb"))
    assert code == 0, err
    assert report["latency"]["windows"]["how"] == "user"
    assert report["root_cause"]["category"] == expected["category"]


def test_a_server_that_is_down_gives_a_partial_report_quickly(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    code, report, err, took = _cli("latency", "--prometheus", url, "--since", "1h",
                                   "--ledger", str(tmp_path / "l.duckdb"))
    assert code == 3, err
    assert report["root_cause"]["category"] == "unknown"
    assert report["latency"]["partial"] is True
    why = report["latency"]["missing"][0]["why"]
    assert url in why and "cannot connect (connection refused)" in why
    assert any("cannot connect" in u for u in report["unknowns"])
    assert took < 30


def test_a_mute_server_times_out_once_not_per_number(tmp_path: Path) -> None:
    with mute_server() as url:
        code, report, err, took = _cli("latency", "--prometheus", url, "--since", "1h",
                                       "--timeout", "1", "--ledger", str(tmp_path / "l.duckdb"))
    assert code == 3, err
    missing = report["latency"]["missing"]
    assert missing and "no answer within 1 s (3 tries)" in missing[0]["why"]
    assert took < 30  # three tries of one query, then nothing more is asked


def test_a_refusing_server_gives_its_error_and_a_partial_report(tmp_path: Path) -> None:
    """A real server that refuses every query over a window (too many samples): the 422 is
    not retried, the missing numbers are listed, and the verdict is not made up."""
    case = CASES_DIR / "l01-queueing-arrival-surge"
    spec = yaml.safe_load((case / "incident.yaml").read_text())
    w = spec["window"]
    with running_prometheus(tmp_path, _metric_files(case),
                            flags=["--query.max-samples=50"]) as url:
        code, report, err, _ = _cli("latency", "--prometheus", url, "--since",
                                    f"{w['start']}/{w['end']}", "--ledger",
                                    str(tmp_path / "l.duckdb"))
    assert code == 3, err
    lat = report["latency"]
    assert lat["partial"] is True and report["root_cause"]["category"] == "unknown"
    assert any("HTTP 422 execution" in m["why"] and "too many samples" in m["why"]
               for m in lat["missing"])


class _FlakyProxy(BaseHTTPRequestHandler):
    """Answers the first `failures` requests with a hand-written 503 (a fixture, not a
    recording), then passes requests through to the real server."""

    upstream = ""
    failures = 0
    seen = 0

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        cls = type(self)
        cls.seen += 1
        if cls.failures > 0:
            cls.failures -= 1
            body = b'{"status":"error","errorType":"unavailable","error":"fixture: overloaded"}'
            self.send_response(503)
        else:
            try:
                with urllib.request.urlopen(cls.upstream + self.path, timeout=10) as r:
                    body, status = r.read(), r.status
            except urllib.error.HTTPError as e:
                body, status = e.read(), e.code
            self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def flaky_proxy(upstream: str, failures: int) -> Iterator[tuple[str, type[_FlakyProxy]]]:
    handler = type("Flaky", (_FlakyProxy,), {"upstream": upstream, "failures": failures,
                                              "seen": 0})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{proxy.server_port}", handler
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_server_errors_are_retried_with_backoff(tmp_path: Path) -> None:
    case = CASES_DIR / CASES[0]
    horizon = _horizon(FileMetricsSource.from_files(_metric_files(case)))
    with running_prometheus(tmp_path, _metric_files(case)) as url, \
            flaky_proxy(url, failures=2) as (proxy, handler):
        live = PrometheusSource(proxy, backoff_s=0.01, horizon=horizon)
        assert "vllm:num_requests_running" in live.metric_names()
        assert handler.seen == 3  # two 503s, then the answer
        handler.failures, handler.seen = 5, 0  # more than the three tries allow
        with pytest.raises(MetricsUnavailable, match="HTTP 503 unavailable: fixture"):
            PrometheusSource(proxy, backoff_s=0.01, horizon=horizon).metric_names()
        assert handler.seen == 3


def test_a_bad_query_is_not_retried(tmp_path: Path) -> None:
    with running_prometheus(tmp_path) as url, flaky_proxy(url, failures=0) as (proxy, handler):
        with pytest.raises(MetricsUnavailable) as exc:
            PrometheusSource(proxy, backoff_s=0.01).scalar("sum(", datetime.now(UTC))
        assert handler.seen == 1
    assert "HTTP 400 bad_data" in str(exc.value) and "parse error" in str(exc.value)
