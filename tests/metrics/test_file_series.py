"""Metric files are read as streams (metrics/file_series.py): OpenMetrics / Prometheus text,
Prometheus API JSON, gzipped or not; a bad file is one clear line."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.metrics.file_series import load_series
from goodput_agent.metrics.file_source import FileMetricsSource
from goodput_agent.metrics.source import Selector, TimeWindow
from goodput_agent.parsing.base import ParseError

T0 = 1_748_937_600  # 2025-06-03T08:00:00Z


def win(start_s: float, end_s: float, base: float = 0.0) -> TimeWindow:
    return TimeWindow(start=datetime.fromtimestamp(base + start_s, UTC),
                      end=datetime.fromtimestamp(base + end_s, UTC))


OM = """# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m",engine="0"} 3.0 1748937615
vllm:num_requests_waiting{model_name="m",engine="0"} 4.0 1748937600
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{model_name="m",engine="0"} 1.0 1748937600 # {trace_id="x"} 1 1
vllm:num_preemptions_total{model_name="m",engine="0"} NaN 1748937615
vllm:num_preemptions_total{model_name="m",engine="0"} 2.0 1748937630
# EOF
"""


def test_openmetrics_text_seconds_sorted(tmp_path: Path) -> None:
    f = tmp_path / "m.om"
    f.write_text(OM)
    series = {s.name: s for s in load_series([f])}
    assert series["vllm:num_requests_waiting"].points == [(T0, 4.0), (T0 + 15, 3.0)]
    assert series["vllm:num_preemptions_total"].points == [(T0, 1.0), (T0 + 30, 2.0)]
    assert series["vllm:num_requests_waiting"].labels == {"model_name": "m", "engine": "0"}


def test_milliseconds_gzip_and_the_want_filter(tmp_path: Path) -> None:
    f = tmp_path / "m.prom.gz"
    f.write_bytes(gzip.compress(b'up{job="a"} 1 1748937600000\nother 2 1748937600000\n'))
    series = load_series([f], want=lambda n: n == "up")
    assert [(s.name, s.points) for s in series] == [("up", [(T0, 1.0)])]


def test_crlf_and_a_last_line_without_newline(tmp_path: Path) -> None:
    f = tmp_path / "m.om"
    f.write_bytes(f"# TYPE x gauge\r\nx 1 {T0}\r\nx 2 {T0 + 15}".encode())
    assert load_series([f])[0].points == [(T0, 1.0), (T0 + 15, 2.0)]


def test_samples_without_time_need_one(tmp_path: Path) -> None:
    f = tmp_path / "scrape.prom"
    f.write_text("# TYPE up gauge\nup 1\n")
    assert load_series([f]) == []
    assert load_series([f], untimed_at=T0)[0].points == [(T0, 1.0)]


def test_prometheus_api_json_matrix_and_vector(tmp_path: Path) -> None:
    matrix = tmp_path / "range.json"
    matrix.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "vllm:num_requests_running", "engine": "0"},
         "values": [[T0, "2"], [T0 + 15, "5"]]}]}}))
    vector = tmp_path / "instant.json"
    vector.write_text(json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "vllm:num_requests_running", "engine": "0"},
         "value": [T0 + 30, "7"]}]}}))
    src = FileMetricsSource.from_files([matrix, vector], root=tmp_path)
    sel = Selector(metric="vllm:num_requests_running")
    assert src.gauge_max(sel, win(0, 30, T0)) == 7
    assert src.origin("vllm:num_requests_running") == "range.json, instant.json"


def test_an_error_response_is_one_clear_line(tmp_path: Path) -> None:
    f = tmp_path / "err.json"
    f.write_text('{"status":"error","errorType":"bad_data","error":"parse error at char 5"}')
    with pytest.raises(ParseError, match=r"err.json: Prometheus answered an error "
                                         r"\(bad_data: parse error at char 5\)"):
        load_series([f], root=tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text('{"status":"success","data":{"result":[{"metric":')
    with pytest.raises(ParseError, match="broken.json: not a Prometheus API response"):
        load_series([broken], root=tmp_path)
    with pytest.raises(ParseError, match="absent.om: no such file"):
        load_series([tmp_path / "absent.om"], root=tmp_path)


def test_the_same_series_across_files_is_merged(tmp_path: Path) -> None:
    a, b = tmp_path / "a.om", tmp_path / "b.om"
    a.write_text(f"x 1 {T0 + 15}\nx 9 {T0}\n")
    b.write_text(f"x 2 {T0 + 30}\nx 3 {T0 + 15}\n")
    (s,) = load_series([a, b])
    assert s.points == [(T0, 9.0), (T0 + 15, 3.0), (T0 + 30, 2.0)]
