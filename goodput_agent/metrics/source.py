"""One interface over metric series, whether they come from files in a bundle (computed here)
or from a live Prometheus (pushed down as PromQL). Analyses ask for numbers per window; they
never see where the numbers came from. Both implementations must agree within histogram
interpolation tolerance: they follow PromQL's semantics (rate() over the window, and
histogram_quantile() interpolating linearly inside the bucket)."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel

from goodput_agent.core.timespec import TimeWindow  # noqa: F401 - where the metrics code imports it


class Selector(BaseModel):
    """Which series: a metric name and exact label matches (e.g. {"model_name": "llama"})."""

    metric: str
    labels: dict[str, str] = {}

    def promql(self) -> str:
        if not self.labels:
            return self.metric
        inner = ",".join(f'{k}="{_quoted(v)}"' for k, v in sorted(self.labels.items()))
        return f"{self.metric}{{{inner}}}"


def _quoted(value: str) -> str:
    """A label value inside PromQL's double quotes (values come from the data: escape them)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Point(BaseModel):
    t: float  # unix seconds
    v: float


class MissingEvidence(BaseModel):
    """A number that could not be had, and why (server down, timeout, no such series)."""

    what: str
    why: str


class MetricsSource(Protocol):
    """Every method sums over the matching series (as `sum(...)` in PromQL would), returns None
    when no matching series has samples in the window, and raises MetricsUnavailable when the
    source itself fails (the caller records a MissingEvidence and goes on)."""

    name: str  # "bundle" | "prometheus http://..."

    def metric_names(self) -> set[str]: ...

    def label_values(self, label: str, metric: str) -> set[str]: ...

    def span(self, metric: str) -> TimeWindow | None:
        """First and last sample time of a metric (to pick windows when none are given)."""
        ...

    def quantile(self, q: float, histogram: Selector, window: TimeWindow) -> float | None:
        """histogram_quantile(q, sum by (le) (increase(<metric>_bucket[window]))) at window.end;
        `histogram.metric` is the base name without _bucket."""
        ...

    def histogram_mean(self, histogram: Selector, window: TimeWindow) -> float | None:
        """increase(_sum) / increase(_count) over the window."""
        ...

    def rate(self, counter: Selector, window: TimeWindow) -> float | None:
        """Per-second increase over the window, counter resets handled as rate() does."""
        ...

    def gauge_mean(self, gauge: Selector, window: TimeWindow) -> float | None:
        """avg_over_time(sum(gauge)) over the window."""
        ...

    def gauge_max(self, gauge: Selector, window: TimeWindow) -> float | None: ...

    def quantile_series(self, q: float, histogram: Selector, window: TimeWindow,
                        step_s: float, rate_window_s: float) -> list[Point]:
        """histogram_quantile over time (a range query): for change-point search and pictures."""
        ...

    def gauge_series(self, gauge: Selector, window: TimeWindow, step_s: float) -> list[Point]:
        ...


class MetricsUnavailable(Exception):
    """The source failed (down, timeout, HTTP error, bad query); the message is one line."""
