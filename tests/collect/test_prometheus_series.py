"""A pod's vLLM series exported from a real Prometheus (Debian's package, backfilled with
promtool from the generated case labelled as a ServiceMonitor target; tests/collect/
vllm_pod_fixture.py) into bundle files: sample for sample what was backfilled, only the pod's,
found by the pod's IP when the series carry no pod label, and a clear error when none exist."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.collect.base import BundleWriter
from goodput_agent.collect.prometheus_series import (
    CHUNK,
    collect_pod_series,
    find_pod,
    pod_matches,
)
from goodput_agent.metrics.file_series import load_series
from goodput_agent.metrics.prometheus import PrometheusSource
from goodput_agent.metrics.source import TimeWindow
from tests.collect import vllm_pod_fixture as F
from tests.servers.prometheus import PrometheusUnavailable, ensure_prometheus, running_prometheus

# wider than the case's hour and more than one CHUNK: every sample, chunk edges included
WINDOW = TimeWindow(start=datetime(2025, 6, 3, 10, 0, tzinfo=UTC),
                    end=datetime(2025, 6, 3, 13, 0, tzinfo=UTC))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Path]]]:
    try:
        ensure_prometheus()
    except PrometheusUnavailable as exc:
        pytest.skip(str(exc))
    work = tmp_path_factory.mktemp("prom")
    files = F.write_series(work / "series")
    with running_prometheus(work, files) as url:
        yield url, files


def _key(s) -> tuple:  # noqa: ANN001 - a Series
    return s.name, tuple(sorted(s.labels.items()))


def test_the_export_is_the_backfilled_samples_of_the_pod_only(served, tmp_path):
    url, files = served
    assert WINDOW.seconds > CHUNK.total_seconds()
    with BundleWriter(tmp_path / "b", {"k8s_pod": "serving/vllm-0"}) as writer:
        got = collect_pod_series(writer, url, F.vllm_pod(), WINDOW)
    assert got.error is None and got.match == {"namespace": "serving", "pod": "vllm-0"}
    assert got.models == ["llama-3.1-8b"]
    written = sorted((tmp_path / "b" / "metrics" / "vllm").glob("*.json"))
    assert len(written) == got.files and all(
        json.loads(p.read_text())["data"]["resultType"] == "matrix" for p in written)
    exported = {_key(s): s.points for s in load_series(written)}
    backfilled = {_key(s): s.points for s in load_series([files[0]])}  # vllm-0's file
    assert len(exported) == got.series == len(backfilled) > 100
    assert exported == backfilled  # same names, labels, times and values


def test_series_without_pod_labels_are_found_by_the_pods_ip(served):
    url, _ = served
    renamed = F.vllm_pod()
    renamed["metadata"]["name"] = "vllm-0-renamed"  # no series carries this pod name
    src = PrometheusSource(url, horizon=WINDOW)
    found = find_pod(src, renamed, WINDOW)
    assert found is not None
    match, models = found
    assert match == pod_matches(renamed)[2] == {"instance": r"~10\.2\.0\.5:[0-9]+"}
    assert models == ["llama-3.1-8b"]


def test_no_series_of_the_pod_is_named_as_missing(served, tmp_path):
    url, _ = served
    other = F.pod("idle-0", "10.9.9.9", [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5"}])
    with BundleWriter(tmp_path / "b", {"k8s_pod": "serving/idle-0"}) as writer:
        got = collect_pod_series(writer, url, other, WINDOW)
    assert got.series == 0 and got.error is not None
    [error] = writer.manifest.errors
    assert (error.source, error.kind) == ("prometheus", "not_found")
    assert error.what == "the vLLM series of pod serving/idle-0"
    assert 'no vllm:e2e_request_latency_seconds_count series with {namespace="serving",' \
           'pod="idle-0"}' in error.error
    assert not (tmp_path / "b" / "metrics").exists()
