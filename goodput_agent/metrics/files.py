"""Bundle mode: metric series read from files, and the MetricsSource computed over them.

Files are OpenMetrics / Prometheus text with timestamps (seconds; milliseconds when a value is
above 1e11, as the Prometheus text format writes them), or Prometheus HTTP API responses
(`query_range` matrix or `query` vector), optionally gzipped. Both are read as streams.

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
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from itertools import accumulate
from pathlib import Path
from typing import Any

import ijson
import yaml

from goodput_agent.errors import BadInput
from goodput_agent.metrics.source import Point, Selector, TimeWindow
from goodput_agent.metrics.vllm_names import ConfigRevision, parse_engine_args
from goodput_agent.parsing.base import ParseError
from goodput_agent.parsing.lines import (
    CHUNK_BYTES,
    MAX_LINE_CHARS,
    _open,
    _without_bom,
    plain_suffix,
    read_head,
    read_whole_text,
)
from goodput_agent.parsing.openmetrics import _SAMPLE, Series, _labels

LOOKBACK_S = 300.0  # Prometheus' default lookback delta
GAUGE_STEP_S = 15.0
_MS_THRESHOLD = 1e11  # timestamps above this are milliseconds

def _text_lines(path: Path) -> Iterator[str]:
    """Every line, read in large chunks and decoded a chunk at a time (a metrics dump has
    millions of short lines); a line longer than MAX_LINE_CHARS is cut, and a chunk without
    any newline is dropped rather than held."""
    with _open(path) as fh:
        carry = b""
        first = True
        while True:
            block = fh.read(CHUNK_BYTES)
            if first:
                block, first = _without_bom(block), False
            if not block:
                if carry:
                    yield carry[:MAX_LINE_CHARS].decode("utf-8", errors="replace")
                return
            buf = carry + block
            cut = buf.rfind(b"\n")
            if cut == -1:
                carry = buf if len(buf) <= CHUNK_BYTES else b""
                continue
            carry = buf[cut + 1:]
            for line in buf[:cut].decode("utf-8", errors="replace").split("\n"):
                yield line[:MAX_LINE_CHARS].rstrip("\r")


def _ts_seconds(ts: float) -> float:
    return ts / 1000.0 if ts > _MS_THRESHOLD else ts


class _Raw:
    """A series being read: its times and values side by side (no tuple per sample)."""

    __slots__ = ("name", "labels", "t", "v")

    def __init__(self, name: str, labels: dict[str, str]):
        self.name, self.labels = name, labels
        self.t: list[float] = []
        self.v: list[float] = []

    def settle(self) -> None:
        """Sorted by time, one value per timestamp (the last read wins)."""
        t = self.t
        if all(a < b for a, b in zip(t, t[1:], strict=False)):
            return
        merged = dict(sorted(zip(t, self.v, strict=True), key=lambda p: p[0]))
        self.t, self.v = list(merged), list(merged.values())


class _Reader:
    """Accumulates samples from several files into series keyed by name and label set."""

    def __init__(self, want: Callable[[str], bool] | None, untimed_at: float | None):
        self.want = want
        self.untimed_at = untimed_at
        self.wanted: dict[str, bool] = {}
        self.by_labels: dict[tuple[str, tuple[tuple[str, str], ...]], _Raw] = {}
        self.origins: dict[str, list[str]] = {}

    def _keep(self, name: str) -> bool:
        ok = self.wanted.get(name)
        if ok is None:
            ok = self.wanted[name] = self.want is None or bool(self.want(name))
        return ok

    def series(self, name: str, labels: dict[str, str], rel: str) -> _Raw:
        key = (name, tuple(sorted(labels.items())))
        s = self.by_labels.get(key)
        if s is None:
            s = self.by_labels[key] = _Raw(name, labels)
        where = self.origins.setdefault(name, [])
        if rel not in where:
            where.append(rel)
        return s

    def text(self, path: Path, rel: str) -> None:
        # the series part of a line (name and labels, as written) is looked up first; only a
        # new one goes through the sample regex
        known: dict[str, _Raw | None] = {}
        for line in _text_lines(path):
            if not line or line[0] == "#":
                continue
            space, brace = line.find(" "), line.find("{")
            cut = line.find("}", brace) + 1 if brace != -1 and (space == -1 or brace < space) \
                else space
            if cut <= 0:
                continue
            head = line[:cut]
            s = known.get(head, False)
            if s is False:
                m = _SAMPLE.match(line)
                s = known[head] = self.series(m["name"], _labels(m["labels"]), rel) \
                    if m and self._keep(m["name"]) else None
            if s is None:
                continue
            parts = line[cut:].split(None, 2)
            try:
                value = float(parts[0])
                ts = float(parts[1]) if len(parts) > 1 and parts[1] != "#" else None
            except (ValueError, IndexError):
                continue
            if math.isnan(value):  # staleness markers and empty histograms carry no sample
                continue
            if ts is None:
                if self.untimed_at is None:
                    continue
                ts = self.untimed_at
            s.t.append(ts / 1000.0 if ts > _MS_THRESHOLD else ts)
            s.v.append(value)

    def api_json(self, path: Path, rel: str) -> None:
        n = 0
        try:
            with _open(path) as fh:
                for n, item in enumerate(ijson.items(fh, "data.result.item"), 1):  # noqa: B007
                    self._result(item, rel)
        except (ijson.JSONError, ValueError, TypeError, KeyError) as exc:
            raise ParseError(f"{rel}: not a Prometheus API response ({exc})") from None
        if n == 0:
            head = read_head(path, 4096).decode("utf-8", errors="replace")
            if '"status"' in head and '"error"' in head:
                try:
                    doc = json.loads(head)
                    why = f"{doc.get('errorType', 'error')}: {doc.get('error', '')}"
                except json.JSONDecodeError:
                    why = "the response is an error"
                raise ParseError(f"{rel}: Prometheus answered an error ({why})")
            if '"data"' not in head:
                raise ParseError(f"{rel}: not a Prometheus API response (no data.result)")

    def _result(self, item: Any, rel: str) -> None:
        if not isinstance(item, dict):
            return  # a scalar or string result carries no series
        labels = {str(k): str(v) for k, v in (item.get("metric") or {}).items()}
        name = labels.pop("__name__", "")
        if not self._keep(name):
            return
        values = item.get("values") or ([item["value"]] if item.get("value") else [])
        s = self.series(name, labels, rel)
        for pair in values:
            try:
                ts, value = float(pair[0]), float(pair[1])
            except (TypeError, ValueError, IndexError):
                continue
            if not math.isnan(value):
                s.t.append(_ts_seconds(ts))
                s.v.append(value)

    def finish(self) -> list[_Raw]:
        out = [s for s in self.by_labels.values() if s.t]
        for s in out:
            s.settle()
        return out


def _is_json(path: Path) -> bool:
    return read_head(path, 512).lstrip()[:1] in (b"{", b"[")


def _read(paths: Iterable[Path], want: Callable[[str], bool] | None, untimed_at: float | None,
          root: Path | None) -> _Reader:
    reader = _Reader(want, untimed_at)
    for path in paths:
        rel = str(path.relative_to(root)) if root and path.is_relative_to(root) else str(path)
        if not path.is_file():
            raise ParseError(f"{rel}: no such file")
        if _is_json(path):
            reader.api_json(path, rel)
        else:
            reader.text(path, rel)
    return reader


def load_series(paths: Iterable[Path], want: Callable[[str], bool] | None = None, *,
                untimed_at: float | None = None, root: Path | None = None) -> list[Series]:
    """Every series in the files (only names for which `want` is true). Samples without a
    timestamp are dropped unless `untimed_at` gives them one (a single /metrics scrape)."""
    return [Series(name=s.name, labels=s.labels, points=list(zip(s.t, s.v, strict=True)))
            for s in _read(paths, want, untimed_at, root).finish()]


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
        reader = _read(paths, want, untimed_at, root)
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


# --------------------------------------------------------------------------- engine arguments


def _when(value: Any, rel: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise BadInput(f"{rel}: {value!r} is not an ISO 8601 time") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def load_engine_args(path: Path, rel: str) -> list[ConfigRevision]:
    """Engine arguments of the service, per deployment revision.

    YAML/JSON: `{"revisions": [{"from": ISO time, "args": [argv...] | "vllm serve ..."}]}`
    (a bare list of revisions, or one mapping with `args`, also do); `from` is when the
    revision started serving (absent: always). Any other file is one command line
    (backslash continuations allowed) that applies to the whole bundle."""
    try:
        text = read_whole_text(path)
    except (OSError, EOFError) as exc:
        raise BadInput(f"{rel}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if plain_suffix(path) not in (".yaml", ".yml", ".json"):
        argv = text.replace("\\\n", " ")
        return [ConfigRevision(since=None, args=parse_engine_args(argv), source=rel)]
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        raise BadInput(f"{rel}: not valid YAML/JSON") from None
    items = doc.get("revisions", [doc]) if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise BadInput(f"{rel}: expected a list of revisions with `args`")
    out = []
    for k, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("args"), (list, str)):
            raise BadInput(f"{rel}: revision {k + 1} has no `args` (a list or a command line)")
        args = item["args"] if isinstance(item["args"], str) else [str(a) for a in item["args"]]
        out.append(ConfigRevision(since=_when(item.get("from", item.get("since")), rel),
                                  args=parse_engine_args(args), source=rel))
    return sorted(out, key=lambda r: r.since or datetime.min.replace(tzinfo=UTC))
