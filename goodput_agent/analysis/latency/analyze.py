"""Why did an LLM service's latency rise: queueing, KV-cache pressure, longer prompts or longer
outputs. Works on any MetricsSource (bundle files or a live Prometheus) with vLLM's metrics.

Per window it reads the request-phase histograms (queue, prefill, decode, TTFT, inter-token),
lengths, concurrency, KV-cache usage, preemptions and configuration; the verdict is decided on
those numbers alone (GPU utilization is context, never weighed), in this order:
1. kv_cache_pressure: the cache is (near) full and preemptions rose, or it holds the
   waiting requests back;
2. prompt_length / output_length: the requests changed (longer prompts with slower prefill and
   TTFT; longer outputs with longer decode while inter-token latency holds);
3. queueing: the time in the queue grew with the waiting queue (more arrivals, or less capacity
   such as a lower max_num_seqs) while the requests stayed the same;
otherwise unknown, saying what did change.

Modules beside it: measure (the numbers of one window), facts (the two windows compared, the
evidence), decide (the verdict); this one chooses the windows and puts them together.
"""

from __future__ import annotations

import math

from goodput_agent.analysis.abstention import UNREAD
from goodput_agent.metrics.source import MetricsSource, MissingEvidence, Point, Selector, TimeWindow
from goodput_agent.metrics.vllm_names import METRICS, ConfigRevision, resolve_all

from .changepoint import RATE_WINDOW_S, STEP_S, choose_windows, find_change
from .decide import config_diff, decide
from .facts import Evidence, Facts, ratio
from .measure import Ask, resolve_service, window_stats
from .model import LatencyResult, LatencyVerdict, WindowChoice

__all__ = ["analyse", "resolve_service", "source_failed"]

ESSENTIAL = ("e2e", "queue", "prefill", "decode", "ttft", "itl", "prompt_tokens",
             "output_tokens", "running", "waiting", "kv_usage", "preemptions")


def _partial_result(ask: Ask, labels: dict[str, str], names: dict[str, str | None],
                    windows: WindowChoice | None, why: str,
                    timeline: dict[str, list[Point]] | None = None) -> LatencyResult:
    return LatencyResult(source=ask.source.name, service_labels=labels, metrics=names,
                         windows=windows, missing=ask.missing, partial=True,
                         timeline=timeline or {},
                         verdict=LatencyVerdict(category="unknown", summary=why, confidence=UNREAD,
                                                unknowns=[why]))


def source_failed(source: MetricsSource, what: str, why: str) -> LatencyResult:
    """The result when the source fails before any number is had (down, mute, refusing)."""
    ask = Ask(source)
    ask.missing.append(MissingEvidence(what=what, why=why))
    return _partial_result(ask, {}, {}, None, f"the metrics source failed: {why}")


def _intersect(span: TimeWindow, search: TimeWindow | None) -> TimeWindow | None:
    if search is None:
        return span
    start, end = max(span.start, search.start), min(span.end, search.end)
    return TimeWindow(start=start, end=end) if end > start else None


def analyse(source: MetricsSource, service_labels: dict[str, str],
            baseline: TimeWindow | None = None, incident: TimeWindow | None = None, *,
            search: TimeWindow | None = None,
            revisions: list[ConfigRevision] | None = None) -> LatencyResult:
    """Compare a baseline and an incident window of one service. Windows left None are chosen
    from the change point of the e2e latency within `search` (default: all the data)."""
    ask = Ask(source)
    revisions = revisions or []
    found = ask("metric names", source.metric_names)
    if found is None:
        return _partial_result(ask, service_labels, {}, None,
                               "the metrics source failed: no numbers at all")
    names = resolve_all(found)
    for key in ESSENTIAL:
        if names[key] is None:
            ask.missing.append(MissingEvidence(
                what=METRICS[key].what, why=f"no {' or '.join(METRICS[key].names)} in the source"))
    e2e = names["e2e"]
    if e2e is None:
        return _partial_result(ask, service_labels, names, None,
                               "no end-to-end latency histogram: latency cannot be compared")
    sel = Selector(metric=e2e, labels=service_labels)
    span = ask(f"time span of {e2e}", lambda: source.span(e2e))
    span = _intersect(span, search) if span else None
    timeline: dict[str, list[Point]] = {}
    step, rate_window = STEP_S, RATE_WINDOW_S
    if span is not None:
        # at most ~720 points; every sample in some point's rate window
        step = max(STEP_S, math.ceil(span.seconds / 720 / STEP_S) * STEP_S)
        rate_window = max(RATE_WINDOW_S, 2 * step)
        for q in (0.5, 0.9):
            timeline[f"p{int(q * 100)}"] = ask(
                f"histogram_quantile({q}, rate({e2e}_bucket[{rate_window:.0f}s])) over time",
                lambda q=q: source.quantile_series(q, sel, span, step, rate_window), e2e) or []
        for key in ("waiting", "kv_usage"):  # the load beside it, for the pictures
            if gauge := names[key]:
                timeline[key] = ask(f"{gauge} over time", lambda g=gauge: source.gauge_series(
                    Selector(metric=g, labels=service_labels), span, step), gauge) or []
    windows = None
    if baseline and incident:
        windows = WindowChoice(baseline=baseline, incident=incident, how="user")
    elif span is not None:
        change = None
        if not (baseline or incident):
            change = find_change([timeline.get("p50", []), timeline.get("p90", [])],
                                 rate_window)
        windows = choose_windows(span, change, baseline, incident,
                                 detection=f"p50 and p90 of {e2e}, {step:.0f}s step, "
                                           f"{rate_window:.0f}s rate window")
    if windows is None:
        return _partial_result(ask, service_labels, names, None,
                               "not enough latency data to compare two windows", timeline)
    b = window_stats(ask, names, service_labels, windows.baseline, "baseline", revisions)
    i = window_stats(ask, names, service_labels, windows.incident, "incident", revisions)
    diff = config_diff(b, i, revisions, names["cache_config"])
    facts = Facts(b, i)
    verdict = decide(facts, Evidence(ask, names, service_labels, b, i), diff, ask.missing)
    if ask.missing:
        verdict.unknowns.append(f"partial: {len(ask.missing)} number(s) could not be had "
                                "(listed under missing)")
    ratios = {"e2e_p50": facts.e2e_p50, "e2e_p90": facts.e2e_p90,
              "queue_p90": ratio(i.queue.p90, b.queue.p90), "prefill_p90": facts.prefill_p90,
              "decode_p90": facts.decode_p90, "ttft_p90": facts.ttft_p90, "itl": facts.itl,
              "prompt_tokens_mean": facts.prompt, "output_tokens_mean": facts.output,
              "arrival_rate": facts.rate}
    return LatencyResult(source=source.name, service_labels=service_labels, metrics=names,
                         windows=windows, baseline=b, incident=i, ratios=ratios,
                         config_diff=diff, verdict=verdict, missing=ask.missing,
                         partial=bool(ask.missing), timeline=timeline)

