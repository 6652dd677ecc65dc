"""Did the service's latency recover: percentiles after the fix against the incident window
(and the healthy baseline window), at comparable load — the same arrival rate and the same
prompt/output length mix within a tolerance — reusing the latency analysis's window numbers."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from goodput_agent.analysis.latency.model import WindowStats
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.verify.model import PhaseChange, VerifyResult
from goodput_agent.verify.stats import grade

LOAD_TOLERANCE = 0.25  # arrival rate and mean lengths within ±25% of the incident's
SIGNIFICANT = 0.10  # e2e p90 must fall by this share of the incident's to count
REGRESSION = 1.25  # a phase p90 this much above both the incident and baseline
WARMUP = timedelta(minutes=2)  # dropped from the start of the after window (restarts)
PHASES = ("queue", "prefill", "decode", "ttft", "itl")


def window_of(source: Any, e2e: str, window: TimeWindow | None) -> TimeWindow | None:
    """The after window: the one given, else the whole span of the e2e latency, less warm-up."""
    if window is not None:
        return window
    span = source.span(e2e)
    if span is None:
        return None
    return TimeWindow(start=span.start + min(WARMUP, (span.end - span.start) / 5), end=span.end)


def stats_of(source: Any, revisions: list, labels: dict[str, str],
             window: TimeWindow | None) -> tuple[WindowStats | None, str]:
    """The after window's numbers from any metrics source (bundle files or a live Prometheus)."""
    from goodput_agent.analysis.latency.measure import Ask, window_stats
    from goodput_agent.metrics.vllm_names import resolve_all

    names = resolve_all(source.metric_names())
    if names["e2e"] is None:
        return None, f"{source.name}: no end-to-end latency histogram"
    w = window_of(source, names["e2e"], window)
    if w is None:
        return None, f"{source.name}: no latency samples"
    st = window_stats(Ask(source), names, labels, w, "incident", revisions)
    return st, f"{source.name}: {names['e2e']} from {w.start:%Y-%m-%d %H:%M:%S} to " \
               f"{w.end:%H:%M:%S} UTC"


def after_stats(after: Path, labels: dict[str, str]) -> tuple[WindowStats | None, str]:
    from goodput_agent.bundle import open_bundle
    from goodput_agent.toolkit import ToolContext
    from goodput_agent.tools.latency_metrics import bundle_source

    with open_bundle(after) as b:
        source, revisions = bundle_source(ToolContext(bundle=b))
        st, where = stats_of(source, revisions, labels, None)
    return st, f"{after} ({where})"


def _rate(st: WindowStats) -> float | None:
    return st.arrival_rate_est if st.arrival_rate_est is not None else st.request_rate


def _close(a: float | None, b: float | None) -> bool | None:
    if a is None or b is None:
        return None
    return abs(a - b) <= LOAD_TOLERANCE * max(abs(b), 1e-9)


def verify(report: dict[str, Any], after: Path | None = None, *, source: Any = None,
           window: TimeWindow | None = None) -> VerifyResult:
    """Against an after bundle, or a live source (`source`, e.g. PrometheusSource) over
    `window` (default: all it has, less warm-up)."""
    lat = report.get("latency") or {}
    if not lat.get("incident"):
        return VerifyResult(kind="latency", verdict="incomparable", comparable=False,
                            summary="the investigation holds no latency windows to compare with")
    before = WindowStats.model_validate(lat["incident"])
    healthy = WindowStats.model_validate(lat["baseline"]) if lat.get("baseline") else None
    labels = lat.get("service_labels") or {}
    st, where = (stats_of(source, [], labels, window) if source is not None
                 else after_stats(after, labels) if after is not None else (None, "no after data"))
    if st is None or st.e2e.p90 is None or before.e2e.p90 is None:
        return VerifyResult(kind="latency", verdict="incomparable", comparable=False,
                            summary=f"no latency percentiles to compare ({where})")
    conditions, why_not = [], []
    checks = (("arrival rate (req/s)", _rate(before), _rate(st)),
              ("mean prompt tokens", before.prompt_tokens.mean, st.prompt_tokens.mean),
              ("mean output tokens", before.output_tokens.mean, st.output_tokens.mean))
    for label, b, a in checks:
        same = _close(a, b)
        shown = (f"{b:.3g}" if b is not None else "?", f"{a:.3g}" if a is not None else "?")
        conditions.append(f"{label}: incident {shown[0]}, after {shown[1]}"
                          + ("" if same is not None else " (not measured: not checked)"))
        if same is False:
            why_not.append(f"{label} differs beyond ±{LOAD_TOLERANCE:.0%} "
                           f"({shown[0]} vs {shown[1]})")
    if why_not:
        return VerifyResult(kind="latency", verdict="incomparable", comparable=False,
                            summary="not comparable: " + "; ".join(why_not) + " — no verdict "
                            "(compare at the same load, or stratify by it)",
                            conditions=conditions, evidence=[where])
    b90, a90 = before.e2e.p90, st.e2e.p90
    h90 = healthy.e2e.p90 if healthy else None
    verdict, share = grade(b90, a90, h90, significant=b90 - a90 > SIGNIFICANT * b90)
    phases = []
    for key in ("e2e", *PHASES):
        phases.append(PhaseChange(
            phase=f"{key} p90", unit="s", before=getattr(before, key).p90,
            after=getattr(st, key).p90, healthy=getattr(healthy, key).p90 if healthy else None))
    grown = [p.phase for p in phases[1:] if p.after is not None and p.before is not None
             and p.after > REGRESSION * max(p.before, p.healthy or 0.0)]
    text = (f"e2e p90 {b90:.3g} s in the incident, {a90:.3g} s after"
            + (f" (baseline {h90:.3g} s; {share:.0%} of the excess removed)"
               if h90 is not None and share is not None else ""))
    fell = [p.phase for p in phases[1:] if p.after is not None and p.before is not None
            and p.after * REGRESSION < p.before]
    if grown and fell:  # the cause went away and the latency moved to another phase
        verdict = "regressed_elsewhere"
        text += (f"; {', '.join(fell)} fell, but {', '.join(grown)} rose above both the "
                 "incident and the baseline")
    return VerifyResult(kind="latency", verdict=verdict, comparable=True, summary=text,
                        conditions=conditions, phases=phases, evidence=[where],
                        numbers={"e2e_p90_s": {"healthy": h90, "before": b90, "after": a90},
                                 "e2e_p50_s": {"healthy": healthy.e2e.p50 if healthy else None,
                                               "before": before.e2e.p50, "after": st.e2e.p50},
                                 "excess_removed": share})
