"""Live mode: the MetricsSource over a Prometheus HTTP API, every number pushed down as PromQL.

The queries are the PromQL that metrics/file_source.py reproduces over bundle files, so a bundle and
the server it came from agree within histogram interpolation:
- quantile:  histogram_quantile(q, sum by (le) (increase(<h>_bucket{...}[W])))  at the end
- rate:      sum(rate(<c>{...}[W]))
- gauges:    avg_over_time(sum(<g>{...})[W:15s]) / max_over_time(...)
- over time: range queries with the step given, chunked under Prometheus' 11,000-point limit.

Transport: prometheus-api-client's PrometheusConnect (its own urllib3 retries off), wrapped in
tenacity: 5xx, 429 and timeouts are retried with exponential backoff and jitter; 4xx (a bad
query) is not. Once the server is found down or mute, later calls fail at once with the same
reason, so a dead server costs one query's retries, not one per number.
"""

from __future__ import annotations

import ast
import json
import math
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
import structlog
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)
from urllib3.exceptions import ReadTimeoutError
from urllib3.util.retry import Retry

from goodput_agent.metrics.file_source import GAUGE_STEP_S, _family
from goodput_agent.metrics.source import MetricsUnavailable, Point, Selector, TimeWindow

log = structlog.get_logger(__name__)

MAX_POINTS = 10_000  # per range query; Prometheus refuses more than 11,000
DEFAULT_HORIZON = timedelta(hours=6)  # where to look for data when no window is given
_STATUS = re.compile(r"HTTP Status Code (\d+) \((.*)\)\s*$", re.S)


class _HttpError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _http_error(exc: PrometheusApiClientException) -> _HttpError:
    """PrometheusConnect reports a non-200 answer as 'HTTP Status Code N (b'<body>')'; the
    body is Prometheus' JSON error (errorType, error) when the server wrote it."""
    m = _STATUS.match(str(exc))
    if not m:
        return _HttpError(0, str(exc).splitlines()[0][:200])
    status, body = int(m.group(1)), m.group(2)
    try:
        raw = ast.literal_eval(body)
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    except (ValueError, SyntaxError):
        text = body
    try:
        doc = json.loads(text)
        why = f"{doc.get('errorType', 'error')}: {doc.get('error', '')}"
    except (ValueError, AttributeError):
        why = " ".join(text.split())[:200] or "no body"
    return _HttpError(status, f"HTTP {status} {why}")


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, _HttpError):
        return exc.status >= 500 or exc.status in (408, 429)
    return isinstance(exc, requests.Timeout | requests.ConnectionError)


def _duration(seconds: float) -> str:
    """A PromQL duration: whole seconds where exact, else milliseconds."""
    ms = round(seconds * 1000)
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _value(raw: Any) -> float | None:
    try:
        v = float(raw)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _family_regex(metric: str) -> str:
    return f'{{__name__=~"{re.escape(metric)}(_bucket|_count|_sum)?"}}'


class PrometheusSource:
    """See the module docstring. `horizon` bounds where `span` and `metric_names` look (default:
    the last six hours); `attempts` counts tries of one query, retries included."""

    def __init__(self, url: str, *, timeout_s: float = 30.0, horizon: TimeWindow | None = None,
                 attempts: int = 3, backoff_s: float = 0.5):
        self.url = url.rstrip("/")
        self.name = f"prometheus {self.url}"
        self.timeout_s = timeout_s
        self.attempts = attempts
        self.backoff_s = backoff_s
        if horizon is None:
            now = datetime.now(UTC).replace(microsecond=0)
            horizon = TimeWindow(start=now - DEFAULT_HORIZON, end=now)
        self.horizon = horizon
        self._down: str | None = None
        self._metric_names: frozenset[str] | None = None
        self._client = PrometheusConnect(
            url=self.url, timeout=timeout_s,  # type: ignore[arg-type]
            retry=Retry(total=0, connect=0, read=0, status=0, raise_on_status=False))

    # -- transport

    def _call(self, what: str, fn: Any) -> Any:
        if self._down is not None:
            raise MetricsUnavailable(f"{self.name}: {self._down} (not asked again: {what})")

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.info("prometheus_retry", query=what, attempt=state.attempt_number,
                     error=str(exc)[:200])

        t0 = time.perf_counter()
        try:
            for attempt in Retrying(stop=stop_after_attempt(self.attempts),
                                    wait=wait_exponential(multiplier=self.backoff_s,
                                                          max=8 * self.backoff_s)
                                    + wait_random(0, self.backoff_s),
                                    retry=retry_if_exception(_transient), reraise=True,
                                    before_sleep=before_sleep):
                with attempt:
                    try:
                        out = fn()
                    except PrometheusApiClientException as exc:
                        raise _http_error(exc) from None
        except (requests.Timeout, requests.ConnectionError) as exc:
            if _timed_out(exc):
                self._down = f"no answer within {self.timeout_s:g} s ({self.attempts} tries)"
                raise MetricsUnavailable(f"{self.name}: {self._down}: {what}") from None
            self._down = f"cannot connect ({_reason(exc)})"
            raise MetricsUnavailable(f"{self.name}: {self._down}") from None
        except _HttpError as exc:
            raise MetricsUnavailable(f"{self.name}: {exc}: {what}") from None
        except (ValueError, KeyError, TypeError) as exc:  # a 200 that is not the API's JSON
            raise MetricsUnavailable(f"{self.name}: not a Prometheus API answer "
                                     f"({type(exc).__name__}): {what}") from None
        log.debug("prometheus_query", query=what, ms=round((time.perf_counter() - t0) * 1e3, 1))
        return out

    def instant(self, promql: str, at: datetime) -> list[dict]:
        return self._call(promql, lambda: self._client.custom_query(
            promql, params={"time": at.timestamp(), "timeout": _duration(self.timeout_s)}))

    def scalar(self, promql: str, at: datetime) -> float | None:
        """The value of a query that yields one series (a sum); None where it yields none."""
        result = self.instant(promql, at)
        return _value(result[0]["value"][1]) if result else None

    def range_points(self, promql: str, window: TimeWindow, step_s: float) -> list[Point]:
        """One series' values over the window at `step_s` (a range query, chunked)."""
        points: list[Point] = []
        start, end = window.start.timestamp(), window.end.timestamp()
        chunk = step_s * (MAX_POINTS - 1)
        while start <= end:
            stop = min(end, start + chunk)
            result = self._call(f"{promql} [{_iso(start)} .. {_iso(stop)}, step {step_s:g}s]",
                                lambda a=start, b=stop: self._client.custom_query_range(
                                    promql, datetime.fromtimestamp(a, UTC),
                                    datetime.fromtimestamp(b, UTC), step=_duration(step_s),
                                    params={"timeout": _duration(self.timeout_s)}))
            for series in result[:1]:
                points.extend(Point(t=float(t), v=v) for t, raw in series["values"]
                              if (v := _value(raw)) is not None)
            start = stop + step_s
        return points

    def matrix(self, promql: str, window: TimeWindow, step_s: float) -> list[dict]:
        """Every series of one range query, as the API returns them (metric, values); the
        caller keeps the step coarse enough for the 11,000-point limit."""
        return self._call(
            f"{promql} [{window.start.isoformat()} .. {window.end.isoformat()}, step {step_s:g}s]",
            lambda: self._client.custom_query_range(
                promql, window.start, window.end, step=_duration(step_s),
                params={"timeout": _duration(self.timeout_s)}))

    @property
    def down(self) -> str | None:
        """Why the server is taken for down (later calls fail at once), or None."""
        return self._down

    # -- MetricsSource

    def origin(self, metric: str) -> str:
        return self.url

    def metric_names(self) -> set[str]:
        return set(self._names())

    def _names(self) -> frozenset[str]:
        if self._metric_names is None:
            params = {"start": self.horizon.start.timestamp(),
                      "end": self.horizon.end.timestamp()}
            self._metric_names = frozenset(self._call(
                "metric names", lambda: self._client.get_label_values("__name__", params=params)))
        return self._metric_names

    def label_values(self, label: str, metric: str) -> set[str]:
        params = {"match[]": _family_regex(metric), "start": self.horizon.start.timestamp(),
                  "end": self.horizon.end.timestamp()}
        return set(self._call(f"values of {label} on {metric}",
                              lambda: self._client.get_label_values(label, params=params)))

    def span(self, metric: str) -> TimeWindow | None:
        """First and last sample time within the horizon: timestamp() of the samples over a
        range query whose step stays inside the lookback, so no sample is skipped. timestamp()
        gives a sample's own time only on a plain selector, so each name is asked alone."""
        step = max(GAUGE_STEP_S, math.ceil(self.horizon.seconds / MAX_POINTS))
        present = self._names()
        lo, hi = math.inf, -math.inf
        for name in (n for n in _family(metric) if n in present):
            first = self.range_points(f"min(timestamp({name}))", self.horizon, step)
            last = self.range_points(f"max(timestamp({name}))", self.horizon, step)
            lo = min([lo, *(p.v for p in first)])
            hi = max([hi, *(p.v for p in last)])
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            return None
        return TimeWindow(start=datetime.fromtimestamp(lo, UTC),
                          end=datetime.fromtimestamp(hi, UTC))

    def quantile(self, q: float, histogram: Selector, window: TimeWindow) -> float | None:
        buckets = Selector(metric=f"{histogram.metric}_bucket", labels=histogram.labels)
        return self.scalar(f"histogram_quantile({q:g}, sum by (le) "
                           f"(increase({buckets.promql()}[{_duration(window.seconds)}])))",
                           window.end)

    def histogram_mean(self, histogram: Selector, window: TimeWindow) -> float | None:
        w = _duration(window.seconds)
        total = Selector(metric=f"{histogram.metric}_sum", labels=histogram.labels).promql()
        count = Selector(metric=f"{histogram.metric}_count", labels=histogram.labels).promql()
        return self.scalar(f"sum(increase({total}[{w}])) / sum(increase({count}[{w}]))",
                           window.end)

    def rate(self, counter: Selector, window: TimeWindow) -> float | None:
        return self.scalar(f"sum(rate({counter.promql()}[{_duration(window.seconds)}]))",
                           window.end)

    def _over_time(self, fn: str, gauge: Selector, window: TimeWindow) -> float | None:
        return self.scalar(f"{fn}(sum({gauge.promql()})"
                           f"[{_duration(window.seconds)}:{_duration(GAUGE_STEP_S)}])",
                           window.end)

    def gauge_mean(self, gauge: Selector, window: TimeWindow) -> float | None:
        return self._over_time("avg_over_time", gauge, window)

    def gauge_max(self, gauge: Selector, window: TimeWindow) -> float | None:
        return self._over_time("max_over_time", gauge, window)

    def quantile_series(self, q: float, histogram: Selector, window: TimeWindow,
                        step_s: float, rate_window_s: float) -> list[Point]:
        buckets = Selector(metric=f"{histogram.metric}_bucket", labels=histogram.labels)
        return self.range_points(f"histogram_quantile({q:g}, sum by (le) "
                                 f"(rate({buckets.promql()}[{_duration(rate_window_s)}])))",
                                 window, step_s)

    def gauge_series(self, gauge: Selector, window: TimeWindow, step_s: float) -> list[Point]:
        return self.range_points(f"sum({gauge.promql()})", window, step_s)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def _timed_out(exc: requests.RequestException) -> bool:
    """requests reports a read timeout as a ConnectionError when urllib3's own retries are off
    (the timeout arrives wrapped in MaxRetryError)."""
    if isinstance(exc, requests.Timeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, ReadTimeoutError | TimeoutError)


def _reason(exc: requests.RequestException) -> str:
    text = str(exc)
    for known in ("Connection refused", "Name or service not known", "No route to host",
                  "Connection reset", "Remote end closed connection"):
        if known in text:
            return known.lower()
    return type(exc).__name__
