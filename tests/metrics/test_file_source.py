"""The bundle-mode source computes PromQL's numbers (metrics/file_source.py).

The PromQL expectations below are Prometheus' own (promql/testdata/histograms.test and
functions.test): the series are written in their `load` notation and evaluated the same way.
Only cases whose answers Prometheus 2.x and 3.x agree on are used (3.x made ranges left-open
and caps the zero cut-off at half a sample interval)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

import pytest

from goodput_agent.metrics.file_source import FileMetricsSource, bucket_quantile
from goodput_agent.metrics.source import Selector, TimeWindow
from goodput_agent.parsing.openmetrics import Series

T0 = 1_748_937_600  # 2025-06-03T08:00:00Z


def win(start_s: float, end_s: float, base: float = 0.0) -> TimeWindow:
    return TimeWindow(start=datetime.fromtimestamp(base + start_s, UTC),
                      end=datetime.fromtimestamp(base + end_s, UTC))


def load(spec: str, step_s: float) -> list[Series]:
    """Prometheus' test `load` notation: `name{labels} 0+10x10 1 2` (start+step x count)."""
    out = []
    for line in filter(str.strip, spec.splitlines()):
        m = re.match(r"\s*([^{\s]+)(?:\{(.*)\})?\s+(.*)", line)
        assert m
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        pts: list[float] = []
        for tok in m.group(3).split():
            if mm := re.fullmatch(r"(-?[\d.]+)([+-][\d.]+)x(\d+)", tok):
                a, d, n = float(mm.group(1)), float(mm.group(2)), int(mm.group(3))
                pts += [a + d * k for k in range(n + 1)]
            else:
                pts.append(float(tok))
        out.append(Series(name=m.group(1), labels=labels,
                          points=[(k * step_s, v) for k, v in enumerate(pts)]))
    return out


INCREASE = """
http_requests_total{path="/foo"} 0+10x10
http_requests_total{path="/bar"} 0+18x5 0+18x5
http_requests_total{path="/bumms"} 1+10x10
"""


@pytest.mark.parametrize(("path", "want"), [("/foo", 100), ("/bar", 162), ("/bumms", 101)])
def test_increase_extrapolates_as_prometheus(path: str, want: float) -> None:
    # eval instant at 50m increase(http_requests_total[100m])
    src = FileMetricsSource(load(INCREASE, 300))
    sel = Selector(metric="http_requests_total", labels={"path": path})
    assert src.increase(sel, win(-3000, 3000)) == pytest.approx(want)


def test_a_counter_that_goes_down_was_reset() -> None:
    # load 5m: 0 1 2 3 2 3 4; eval instant at 30m increase(...[30m]) -> 7
    src = FileMetricsSource(load('http_requests_total{path="/foo"} 0 1 2 3 2 3 4', 300))
    assert src.increase(Selector(metric="http_requests_total"), win(0, 1800)) == \
        pytest.approx(7)


@pytest.mark.parametrize(("start", "want"), [("0m", 0.5), ("1m", 0.55), ("2m", 0.6)])
def test_zero_cutoff_on_the_left(start: str, want: float) -> None:
    # load 4m; eval instant at 10m rate(testcounter_zero_cutoff_total[20m])
    first = {"0m": 0, "1m": 60, "2m": 120}[start]
    series = load(f'testcounter_zero_cutoff_total{{start="{start}"}} {first}+240x10', 240)
    src = FileMetricsSource(series)
    assert src.rate(Selector(metric="testcounter_zero_cutoff_total"), win(-600, 600)) == \
        pytest.approx(want)


def test_rate_is_per_second_and_sums_the_series() -> None:
    # calculate_rate_window_total 0+80x10 at 50m over 50m -> 0.2666...
    src = FileMetricsSource(load("""
        calculate_rate_window_total{x="a"} 0+80x10
        calculate_rate_window_total{x="b"} 0+80x10
    """, 300))
    assert src.rate(Selector(metric="calculate_rate_window_total"), win(0, 3000)) == \
        pytest.approx(2 * 0.26666666666666666)
    assert src.rate(Selector(metric="calculate_rate_window_total", labels={"x": "b"}),
                    win(0, 3000)) == pytest.approx(0.26666666666666666)


def test_no_rate_from_one_sample_or_no_series() -> None:
    src = FileMetricsSource(load("c_total 0+1x10", 300))
    assert src.rate(Selector(metric="c_total"), win(2990, 3000)) is None
    assert src.rate(Selector(metric="absent_total"), win(0, 3000)) is None


HISTOGRAMS = """
testhistogram_bucket{le="0.1", start="positive"} 0+5x10
testhistogram_bucket{le=".2", start="positive"} 0+7x10
testhistogram_bucket{le="1e0", start="positive"} 0+11x10
testhistogram_bucket{le="+Inf", start="positive"} 0+12x10
testhistogram_bucket{le="-.2", start="negative"} 0+1x10
testhistogram_bucket{le="-0.1", start="negative"} 0+2x10
testhistogram_bucket{le="0.3", start="negative"} 0+2x10
testhistogram_bucket{le="+Inf", start="negative"} 0+3x10
request_duration_seconds_bucket{job="job1", instance="ins1", le="0.1"} 0+1x10
request_duration_seconds_bucket{job="job1", instance="ins1", le="0.2"} 0+3x10
request_duration_seconds_bucket{job="job1", instance="ins1", le="+Inf"} 0+4x10
request_duration_seconds_bucket{job="job1", instance="ins2", le="0.1"} 0+2x10
request_duration_seconds_bucket{job="job1", instance="ins2", le="0.2"} 0+5x10
request_duration_seconds_bucket{job="job1", instance="ins2", le="+Inf"} 0+6x10
request_duration_seconds_bucket{job="job2", instance="ins1", le="0.1"} 0+3x10
request_duration_seconds_bucket{job="job2", instance="ins1", le="0.2"} 0+4x10
request_duration_seconds_bucket{job="job2", instance="ins1", le="+Inf"} 0+6x10
request_duration_seconds_bucket{job="job2", instance="ins2", le="0.1"} 0+4x10
request_duration_seconds_bucket{job="job2", instance="ins2", le="0.2"} 0+7x10
request_duration_seconds_bucket{job="job2", instance="ins2", le="+Inf"} 0+9x10
"""


@pytest.mark.parametrize(("q", "labels", "want"), [
    (0.2, {"start": "positive"}, 0.048),
    (0.5, {"start": "positive"}, 0.15),
    (0.8, {"start": "positive"}, 0.72),
    (0.2, {"start": "negative"}, -0.2),
    (0.5, {"start": "negative"}, -0.15),
    (0.8, {"start": "negative"}, 0.3),  # the rank falls in +Inf: the highest finite bound
    (0.3, {}, 0.075),  # sum by (le) over all four job/instance series
    (0.5, {}, 0.1277777777777778),
    (0.5, {"job": "job1"}, 0.14),
    (0.3, {"job": "job2"}, 0.0642857142857143),
    (0.5, {"job": "job2", "instance": "ins2"}, 0.1166666666666667),
])
def test_histogram_quantile_as_prometheus(q: float, labels: dict[str, str],
                                          want: float) -> None:
    # eval instant at 50m histogram_quantile(q, sum(rate(<h>_bucket[5m])) by (le))
    src = FileMetricsSource(load(HISTOGRAMS, 300))
    metric = "testhistogram" if "start" in labels else "request_duration_seconds"
    got = src.quantile(q, Selector(metric=metric, labels=labels), win(2700, 3000))
    assert got == pytest.approx(want)


def test_bucket_quantile_edge_cases() -> None:
    assert bucket_quantile(0.5, [(1.0, 5), (2.0, 10)]) is None  # no +Inf bucket
    assert bucket_quantile(0.5, [(1.0, 0), (math.inf, 0)]) is None  # no observations
    assert bucket_quantile(0.5, [(math.inf, 4)]) is None  # one bucket only
    assert bucket_quantile(-0.1, [(1.0, 1), (math.inf, 2)]) == -math.inf
    assert bucket_quantile(1.5, [(1.0, 1), (math.inf, 2)]) == math.inf
    # non-monotonic counts (scrape skew) are raised to the running maximum, as Prometheus does
    assert bucket_quantile(0.5, [(1.0, 6), (2.0, 4), (math.inf, 8)]) == pytest.approx(2 / 3)
    # buckets with the same bound (a "1" and a "1.0" label) are merged
    assert bucket_quantile(0.5, [(1.0, 2), (1.0, 2), (math.inf, 4)]) == pytest.approx(0.5)


def test_histogram_mean_and_quantile_series() -> None:
    src = FileMetricsSource(load(HISTOGRAMS + """
        request_duration_seconds_sum{job="job1"} 0+0.5x10
        request_duration_seconds_count{job="job1"} 0+4x10
    """, 300))
    sel = Selector(metric="request_duration_seconds")
    assert src.histogram_mean(sel, win(0, 3000)) == pytest.approx(0.125)
    pts = src.quantile_series(0.5, sel, win(600, 3000), 300, 300)
    assert [p.t for p in pts] == [600.0 + 300 * k for k in range(9)]
    assert all(p.v == pytest.approx(0.1277777777777778) for p in pts)


def test_gauges_sum_the_series_and_forget_after_the_lookback() -> None:
    src = FileMetricsSource([
        Series(name="g", labels={"engine": "0"}, points=[(0, 1), (15, 3), (30, 5)]),
        Series(name="g", labels={"engine": "1"}, points=[(0, 10), (15, 10), (30, 10)]),
        Series(name="g", labels={"engine": "2"}, points=[(1000, 7), (1015, 9)]),
    ])
    sel = Selector(metric="g")
    assert src.gauge_mean(sel, win(0, 30)) == pytest.approx((11 + 13 + 15) / 3)
    assert src.gauge_max(sel, win(0, 30)) == 15
    assert src.gauge_max(Selector(metric="g", labels={"engine": "0"}), win(0, 30)) == 5
    # the two first series are gone 5 minutes after their last sample
    pts = src.gauge_series(sel, win(300, 1020), 360)
    assert [(p.t, p.v) for p in pts] == [(300.0, 15.0), (1020.0, 9.0)]
    assert src.gauge_mean(sel, win(400, 900)) is None


def test_names_labels_and_span() -> None:
    src = FileMetricsSource(load(HISTOGRAMS, 300))
    assert "request_duration_seconds_bucket" in src.metric_names()
    assert src.label_values("job", "request_duration_seconds") == {"job1", "job2"}
    span = src.span("request_duration_seconds")
    assert span is not None and span.seconds == 3000
    assert src.span("nothing") is None
