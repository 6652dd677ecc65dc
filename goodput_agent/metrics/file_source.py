"""Bundle mode's MetricsSource: the numbers computed over metric series read from a bundle's
files (metrics/file_series.py reads them; metrics/prometheus.py is the live source that asks
Prometheus the same questions).

The numbers follow PromQL (Prometheus 2.x) so that a bundle and a live server agree:
- `rate`/`increase` over [start, end] (both ends inclusive), counter resets added back, and
  the result extrapolated to the window edges as `extrapolatedRate` does (to at most half a
  sample interval past the outer samples, never below zero for a counter);
- `histogram_quantile` over `sum by (le) (increase(<h>_bucket[W]))`: buckets sorted and made
  monotonic, linear interpolation inside the bucket, the highest finite bound when the rank
  falls in +Inf, no answer without a +Inf bucket or without observations;
- gauges are `sum(...)` evaluated every GAUGE_STEP_S seconds (steps aligned to multiples of
  the step, a sample counts for LOOKBACK_S after it), then averaged or maxed: this is
  `avg_over_time(sum(g)[W:15s])` / `max_over_time(sum(g)[W:15s])`.

A bundle's engine arguments are metrics/engine_args.py.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from itertools import accumulate
from pathlib import Path

from goodput_agent.metrics.file_series import read_series
from goodput_agent.metrics.source import Point, Selector, TimeWindow
from goodput_agent.parsing.openmetrics import Series

LOOKBACK_S = 300.0  # Prometheus' default lookback delta
GAUGE_STEP_S = 15.0


# --------------------------------------------------------------------------- the source


class _Ser:
    """One series prepared for window queries: times, values, and values with counter resets
    added back (so an increase is one subtraction)."""

    __slots__ = ("labels", "t", "v", "adj", "le")

    def __init__(self, labels: dict[str, str], t: list[float], v: list[float]):
        self.labels, self.t, self.v = labels, t, v
        offsets = accumulate((prev if cur < prev else 0.0 for prev, cur in
                              zip(self.v, self.v[1:], strict=False)), initial=0.0)
        self.adj = [v + off for v, off in zip(self.v, offsets, strict=True)]
        le = labels.get("le")
        try:
            self.le = float(le) if le is not None else None
        except ValueError:
            self.le = None

    def increase(self, start: float, end: float, counter: bool = True) -> float | None:
        i, j = bisect_left(self.t, start), bisect_right(self.t, end)
        n = j - i
        if n < 2:
            return None
        t0, t1 = self.t[i], self.t[j - 1]
        sampled = t1 - t0
        if sampled <= 0:
            return None
        first = self.v[i]
        delta = self.adj[j - 1] - self.adj[i] if counter else self.v[j - 1] - first
        to_start, to_end = t0 - start, end - t1
        avg = sampled / (n - 1)
        if counter and delta > 0 and first >= 0:
            to_start = min(to_start, sampled * (first / delta))
        threshold = avg * 1.1
        interval = sampled + (to_start if to_start < threshold else avg / 2) + \
            (to_end if to_end < threshold else avg / 2)
        return delta * interval / sampled

    def at(self, t: float) -> float | None:
        k = bisect_right(self.t, t) - 1
        if k < 0 or t - self.t[k] > LOOKBACK_S:
            return None
        return self.v[k]


def bucket_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float | None:
    """Prometheus' bucketQuantile over (upper bound, cumulative count) pairs; None where
    Prometheus answers NaN (no +Inf bucket, fewer than two buckets, no observations)."""
    merged: dict[float, float] = {}
    for le, count in buckets:
        merged[le] = merged.get(le, 0.0) + count
    if math.isnan(q):
        return None
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    les = sorted(merged)
    if len(les) < 2 or les[-1] != math.inf:
        return None
    counts = list(accumulate((merged[le] for le in les), max))  # made monotonic
    observations = counts[-1]
    if observations <= 0:
        return None
    rank = q * observations
    b = bisect_left(counts, rank)
    if b == len(les) - 1:
        return les[-2]
    if b == 0 and les[0] <= 0:
        return les[0]
    lo, hi, count = 0.0, les[b], counts[b]
    if b > 0:
        lo = les[b - 1]
        count -= counts[b - 1]
        rank -= counts[b - 1]
    return lo + (hi - lo) * (rank / count) if count > 0 else hi


def _grid(start: float, end: float, step: float, aligned: bool) -> Iterator[float]:
    t = math.ceil(start / step) * step if aligned else start
    while t <= end + 1e-9:
        yield t
        t += step


def _family(metric: str) -> tuple[str, ...]:
    return (metric, f"{metric}_bucket", f"{metric}_count", f"{metric}_sum")


class FileMetricsSource:
    """MetricsSource over series held in memory (see the module docstring for semantics)."""

    name = "bundle"

    def __init__(self, series: Iterable[Series], origins: dict[str, list[str]] | None = None):
        self._by_name: dict[str, list[_Ser]] = {}
        for s in series:
            if s.points:
                ts, vs = zip(*sorted(s.points), strict=True)
                self._add(s.name, _Ser(s.labels, list(ts), list(vs)))
        self._origins = origins or {}

    def _add(self, name: str, s: _Ser) -> None:
        self._by_name.setdefault(name, []).append(s)

    @classmethod
    def from_files(cls, paths: Iterable[Path], *, root: Path | None = None,
                   want: Callable[[str], bool] | None = None,
                   untimed_at: float | None = None) -> FileMetricsSource:
        reader = read_series(paths, want, untimed_at, root)
        source = cls((), reader.origins)
        for s in reader.finish():
            source._add(s.name, _Ser(s.labels, s.t, s.v))
        return source

    def origin(self, metric: str) -> str:
        """The bundle file(s) a metric came from, for evidence locators."""
        where = next((self._origins[n] for n in _family(metric) if n in self._origins), None)
        return ", ".join(where) if where else self.name

    # -- protocol

    def metric_names(self) -> set[str]:
        return set(self._by_name)

    def label_values(self, label: str, metric: str) -> set[str]:
        return {s.labels[label] for n in _family(metric) for s in self._by_name.get(n, ())
                if label in s.labels}

    def span(self, metric: str) -> TimeWindow | None:
        ss = [s for n in _family(metric) for s in self._by_name.get(n, ())]
        if not ss:
            return None
        lo, hi = min(s.t[0] for s in ss), max(s.t[-1] for s in ss)
        if hi <= lo:
            return None
        return TimeWindow(start=datetime.fromtimestamp(lo, UTC),
                          end=datetime.fromtimestamp(hi, UTC))

    def quantile(self, q: float, histogram: Selector, window: TimeWindow) -> float | None:
        start, end = window.start.timestamp(), window.end.timestamp()
        return self._quantile_at(q, self._select(f"{histogram.metric}_bucket", histogram.labels),
                                 start, end)

    def histogram_mean(self, histogram: Selector, window: TimeWindow) -> float | None:
        total = self.increase(Selector(metric=f"{histogram.metric}_sum",
                                       labels=histogram.labels), window)
        count = self.increase(Selector(metric=f"{histogram.metric}_count",
                                       labels=histogram.labels), window)
        if total is None or not count:
            return None
        return total / count

    def increase(self, counter: Selector, window: TimeWindow) -> float | None:
        start, end = window.start.timestamp(), window.end.timestamp()
        incs = [x for s in self._select(counter.metric, counter.labels)
                if (x := s.increase(start, end)) is not None]
        return sum(incs) if incs else None

    def rate(self, counter: Selector, window: TimeWindow) -> float | None:
        inc = self.increase(counter, window)
        return None if inc is None else inc / window.seconds

    def gauge_mean(self, gauge: Selector, window: TimeWindow) -> float | None:
        vals = self._gauge_values(gauge, window, GAUGE_STEP_S, aligned=True)
        return sum(p.v for p in vals) / len(vals) if vals else None

    def gauge_max(self, gauge: Selector, window: TimeWindow) -> float | None:
        vals = self._gauge_values(gauge, window, GAUGE_STEP_S, aligned=True)
        return max(p.v for p in vals) if vals else None

    def quantile_series(self, q: float, histogram: Selector, window: TimeWindow,
                        step_s: float, rate_window_s: float) -> list[Point]:
        buckets = self._select(f"{histogram.metric}_bucket", histogram.labels)
        out = []
        for t in _grid(window.start.timestamp(), window.end.timestamp(), step_s, False):
            v = self._quantile_at(q, buckets, t - rate_window_s, t)
            if v is not None and math.isfinite(v):
                out.append(Point(t=t, v=v))
        return out

    def gauge_series(self, gauge: Selector, window: TimeWindow, step_s: float) -> list[Point]:
        return self._gauge_values(gauge, window, step_s, aligned=False)

    # -- helpers

    def _select(self, metric: str, labels: dict[str, str]) -> list[_Ser]:
        items = labels.items()
        return [s for s in self._by_name.get(metric, ())
                if all(s.labels.get(k) == v for k, v in items)]

    @staticmethod
    def _quantile_at(q: float, buckets: list[_Ser], start: float, end: float) -> float | None:
        pairs = [(s.le, x) for s in buckets
                 if s.le is not None and (x := s.increase(start, end)) is not None]
        return bucket_quantile(q, pairs) if pairs else None

    def _gauge_values(self, gauge: Selector, window: TimeWindow, step: float,
                      aligned: bool) -> list[Point]:
        ss = self._select(gauge.metric, gauge.labels)
        out = []
        for t in _grid(window.start.timestamp(), window.end.timestamp(), step, aligned):
            vals = [v for s in ss if (v := s.at(t)) is not None]
            if vals:
                out.append(Point(t=t, v=sum(vals)))
        return out
