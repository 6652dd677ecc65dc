"""What the latency analysis returns: the windows compared, the numbers per window, the
configuration diff and the verdict. `LatencyResult.report_object()` is the report's `latency`
object and the `goodput latency` output."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from goodput_agent.analysis.advice import Advice
from goodput_agent.core.events import Event
from goodput_agent.metrics.source import MissingEvidence, Point, TimeWindow

NOT_ADDITIVE = ("Queue, prefill and decode are not additive parts of a percentile: the p90 of "
                "end-to-end latency is not the sum of the phases' p90s (different requests sit "
                "at each percentile), so each phase is compared on its own; only the means add "
                "up (mean e2e ~ mean queue + mean prefill + mean decode).")
GPU_UTIL_NOTE = ("GPU utilization is shown for context only and never weighed: a busy GPU can "
                 "serve slowly and an idle one can queue; the service's latency is the measure.")


class Dist(BaseModel):
    """A histogram over one window: quantiles as histogram_quantile gives them, and the mean."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    mean: float | None = None


class WindowStats(BaseModel):
    label: Literal["baseline", "incident"]
    window: TimeWindow
    # seconds
    e2e: Dist = Field(default_factory=Dist)
    queue: Dist = Field(default_factory=Dist)
    prefill: Dist = Field(default_factory=Dist)
    decode: Dist = Field(default_factory=Dist)
    ttft: Dist = Field(default_factory=Dist)
    itl: Dist = Field(default_factory=Dist)  # inter-token latency (or V0's time per token)
    tpot: Dist = Field(default_factory=Dist)  # per-request mean time per output token
    # tokens
    prompt_tokens: Dist = Field(default_factory=Dist)
    output_tokens: Dist = Field(default_factory=Dist)
    request_rate: float | None = None  # finished requests per second
    arrival_rate_est: float | None = None  # finished + growth of running and waiting
    success_rate: float | None = None  # finished without abort / all finished
    finished_by_reason: dict[str, float] = Field(default_factory=dict)  # per second
    running_mean: float | None = None
    running_max: float | None = None
    waiting_mean: float | None = None
    waiting_max: float | None = None
    waiting_growth: float | None = None  # waiting at the end minus at the start
    kv_usage_mean: float | None = None  # 0..1, mean over engines
    kv_usage_max: float | None = None
    preemption_rate: float | None = None  # per second
    gpu_util_mean: float | None = None  # over all GPUs the source has; context only
    config: dict[str, str] = Field(default_factory=dict)


class ConfigChange(BaseModel):
    key: str
    baseline: str | None
    incident: str | None
    source: str


class WindowChoice(BaseModel):
    baseline: TimeWindow
    incident: TimeWindow
    how: Literal["user", "user+adjacent", "change_point", "no_change_point"]
    change_at: datetime | None = None
    change_ratio: float | None = None  # after/before median of the detection series
    detection: str = ""  # which series and step the change was found in
    notes: list[str] = Field(default_factory=list)


class LatencyVerdict(BaseModel):
    category: str  # one of report.CATEGORIES["latency"] or "unknown"
    summary: str
    confidence: float
    deciding: dict[str, float | None] = Field(default_factory=dict)  # the numbers that decide
    would_fix: list[str] = Field(default_factory=list)
    would_not_fix: list[str] = Field(default_factory=list)
    # what to do, each remedy with the measured premise it rests on (latency_advice)
    advice: list[Advice] = Field(default_factory=list)
    evidence: list[Event] = Field(default_factory=list)  # metric_series events
    alternatives: list[tuple[str, float, str]] = Field(default_factory=list)  # cat, conf, why not
    unknowns: list[str] = Field(default_factory=list)


class LatencyResult(BaseModel):
    source: str  # "bundle" | "prometheus http://..."
    service_labels: dict[str, str]
    metrics: dict[str, str | None]  # logical key -> the name found (None: absent)
    windows: WindowChoice | None
    baseline: WindowStats | None = None
    incident: WindowStats | None = None
    ratios: dict[str, float | None] = Field(default_factory=dict)  # incident / baseline
    config_diff: list[ConfigChange] = Field(default_factory=list)
    verdict: LatencyVerdict
    missing: list[MissingEvidence] = Field(default_factory=list)
    partial: bool = False
    notes: list[str] = Field(default_factory=lambda: [NOT_ADDITIVE, GPU_UTIL_NOTE])
    # e2e percentiles over time (seconds) for the picture: {"p50": [...], "p90": [...]}
    timeline: dict[str, list[Point]] = Field(default_factory=dict)

    def report_object(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
