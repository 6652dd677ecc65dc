"""A pod's vLLM series from Prometheus into a bundle, sample for sample.

Which series are the pod's: the labels Prometheus' Kubernetes discovery gives a target —
`namespace` and `pod` (Prometheus Operator ServiceMonitor/PodMonitor targets, and the
`kubernetes-pods` job of the Prometheus Helm chart), `kubernetes_namespace` and
`kubernetes_pod_name` (older relabelings), or an `instance` at the pod's IP — tried in that
order; the first that has `vllm:e2e_request_latency_seconds` series in the window is used.

How they are exported: the raw samples, as instant queries of a range selector
(`{__name__=~"vllm:.+",namespace="NS",pod="P"}[2h]` at each chunk's end), which Prometheus
answers as a matrix of the stored samples at their own times (a query_range would resample
them onto its step grid). The answers are merged (a sample on a chunk edge is kept once) and
written per metric family as `metrics/vllm/<family>.json` in the query API's JSON (`status`,
`data.resultType: matrix`, `data.result`), which the bundle's metric reader reads losslessly;
each file's manifest entry names the selector and the time range.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import orjson

from goodput_agent.collect.base import BundleWriter
from goodput_agent.metrics.prometheus import PrometheusSource
from goodput_agent.metrics.source import MetricsUnavailable, Selector, TimeWindow
from goodput_agent.metrics.vllm_names import METRICS, MODEL_LABEL

SOURCE = "prometheus"
CHUNK = timedelta(hours=2)  # one range selector's span: bounded answers
PROBE = METRICS["e2e"].names[0] + "_count"
_FAMILY = re.compile(r"_(bucket|count|sum)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class PodSeries:
    """What was found for the pod: the label match, the models it serves, the files written,
    and what went wrong (None: nothing)."""

    match: dict[str, str] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    files: int = 0
    series: int = 0
    error: str | None = None


def pod_matches(pod: dict[str, Any]) -> list[dict[str, str]]:
    """The label matches that can select a pod's series, most common first."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    out = [{"namespace": ns, "pod": name},
           {"kubernetes_namespace": ns, "kubernetes_pod_name": name}]
    if ip := status.get("podIP"):
        out.append({"instance": f"~{re.escape(str(ip))}:[0-9]+"})
    return out


def _matchers(match: dict[str, str]) -> str:
    """Label matchers; a value starting with ~ is a regex (only the instance match is)."""
    parts = []
    for k, v in match.items():
        if v.startswith("~"):
            parts.append(f'{k}=~"{v[1:].replace(chr(92), chr(92) * 2)}"')
        else:
            parts.append(Selector(metric="x", labels={k: v}).promql()[2:-1])
    return ",".join(parts)


def _seconds(delta: timedelta) -> str:
    return f"{max(1, int(delta.total_seconds()))}s"


def find_pod(src: PrometheusSource, pod: dict[str, Any], window: TimeWindow
             ) -> tuple[dict[str, str], list[str]] | None:
    """The first label match with vLLM latency series in the window, and their models."""
    for match in pod_matches(pod):
        query = (f"group by ({MODEL_LABEL}) (last_over_time({PROBE}{{{_matchers(match)}}}"
                 f"[{_seconds(window.end - window.start)}]))")
        result = src.instant(query, window.end)
        if result:
            models = sorted({str((r.get("metric") or {}).get(MODEL_LABEL, "")) for r in result}
                            - {""})
            return match, models
    return None


def _chunks(window: TimeWindow) -> list[datetime]:
    ends, t = [], window.start
    while t < window.end:
        t = min(t + CHUNK, window.end)
        ends.append(t)
    return ends


def export(writer: BundleWriter, src: PrometheusSource, match: dict[str, str],
           window: TimeWindow, what: str) -> tuple[int, int]:
    """Every vllm: series of `match` over the window, raw; returns (files, series)."""
    selector = f'{{__name__=~"vllm:.+",{_matchers(match)}}}'
    merged: dict[tuple[tuple[str, str], ...], dict[float, Any]] = {}
    start = window.start
    for end in _chunks(window):
        for r in src.instant(f"{selector}[{_seconds(end - start)}]", end):
            key = tuple(sorted((str(k), str(v)) for k, v in (r.get("metric") or {}).items()))
            values = merged.setdefault(key, {})
            for ts, value in r.get("values") or []:
                values[float(ts)] = value
        start = end
    families: dict[str, list[dict[str, Any]]] = {}
    for key, values in sorted(merged.items()):
        labels = dict(key)
        family = _FAMILY.sub("", labels.get("__name__", ""))
        families.setdefault(family, []).append(
            {"metric": labels, "values": [[t if t % 1 else int(t), v]
                                          for t, v in sorted(values.items())]})
    query = (f"{selector}: raw samples from {window.start.isoformat()} to "
             f"{window.end.isoformat()} (instant queries of the range selector, "
             f"{_seconds(CHUNK)} chunks)")
    for family, result in families.items():
        doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        rel = f"metrics/vllm/{_UNSAFE.sub('_', family).strip('_') or 'vllm'}.json"
        writer.write_text(rel, orjson.dumps(doc).decode(), source=SOURCE,
                          what=f"{family} of {what} ({len(result)} series)", query=query,
                          origin=src.url)
    return len(families), len(merged)


def collect_pod_series(writer: BundleWriter, url: str, pod: dict[str, Any],
                       window: TimeWindow, timeout_s: float = 30.0) -> PodSeries:
    """Find the pod's vLLM series and write them; a failing server or no series becomes an
    error in the manifest (the report's missing evidence) and in the answer. A server this
    collection already found down (the DCGM series) is not asked again."""
    meta = pod.get("metadata") or {}
    ref = f"{meta.get('namespace')}/{meta.get('name')}"
    what = f"the vLLM series of pod {ref}"
    out = PodSeries()
    src = PrometheusSource(url, timeout_s=timeout_s, horizon=window)
    tried = " or ".join("{" + _matchers(m) + "}" for m in pod_matches(pod))
    down = next((e.error for e in writer.manifest.errors
                 if e.source == SOURCE and e.kind == "unreachable"), None)
    if down is not None:
        out.error = f"not asked: already found down: {down}"
        writer.error(SOURCE, f"{what} ({PROBE}, vllm:* with {tried})", "unreachable",
                     out.error)
        return out
    try:
        found = find_pod(src, pod, window)
        if found is None:
            out.error = (f"no {PROBE} series with {tried} from {window.start.isoformat()} to "
                         f"{window.end.isoformat()}")
            writer.error(SOURCE, what, "not_found", out.error, origin=url)
            return out
        out.match, out.models = found
        out.files, out.series = export(writer, src, out.match, window, f"pod {ref}")
    except MetricsUnavailable as exc:
        out.error = str(exc)
        writer.error(SOURCE, f"{what} ({PROBE}, vllm:* with {tried})",
                     "unreachable" if src.down else "error", out.error, origin=url)
    return out
