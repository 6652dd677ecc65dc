"""Fail-slow among a job's nodes, computed by the user's Prometheus: one range query per
metric, each node's median over 30 s (`quantile_over_time(0.5, m[30s])`), averaged over the
node's GPUs (`avg by (<node label>)`), at every poll of the last 40 s. Only one number per
node and time comes back (512 nodes x 5 points per metric), never the raw samples; the peer
comparison (analysis/live/failslow.py) runs on those.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import numpy as np
from pydantic import BaseModel, Field

from goodput_agent.analysis.live.failslow import FailSlowVerdict, judge_failslow
from goodput_agent.metrics.source import TimeWindow

WINDOW = "30s"
STEP_S = 10.0
SPAN_S = 40.0  # every poll of the last 40 s (5 points)
NODE_LABEL = "Hostname"  # dcgm-exporter's
# short name -> the metric as dcgm-exporter names it (default-counters.csv / dcp-metrics)
DCGM = {"sm_clock": "DCGM_FI_DEV_SM_CLOCK", "power": "DCGM_FI_DEV_POWER_USAGE",
        "temp": "DCGM_FI_DEV_GPU_TEMP", "sm_active": "DCGM_FI_PROF_SM_ACTIVE",
        "nvlink_bw": "DCGM_FI_PROF_NVLINK_TX_BYTES", "pcie_bw": "DCGM_FI_PROF_PCIE_TX_BYTES"}


class FailSlowQuery(BaseModel):
    metric: str  # short name
    promql: str
    window: TimeWindow
    nodes_answered: int = 0
    error: str | None = None


class FailSlowResult(BaseModel):
    verdict: FailSlowVerdict
    queries: list[FailSlowQuery] = Field(default_factory=list)
    at: datetime


def _regex(nodes: list[str]) -> str:
    """An RE2 alternation of the names, inside a PromQL double-quoted string: regex
    metacharacters escaped for RE2, and that backslash escaped again for the string."""
    def one(name: str) -> str:
        name = re.sub(r'([.^$*+?()\[\]{}|\\])', r"\\\\\1", name)
        return name.replace('"', '\\"')
    return "|".join(one(n) for n in nodes)


def queries(nodes: list[str], node_label: str = NODE_LABEL,
            extra: dict[str, str] | None = None) -> dict[str, str]:
    """metric short name -> PromQL. `extra`: more metrics by short name (step_time, ib_bw)
    as the site exports them, each with `node_label` naming the node."""
    match = f'{node_label}=~"{_regex(nodes)}"'
    names = {**DCGM, **(extra or {})}
    return {short: f"avg by ({node_label}) (quantile_over_time(0.5, {name}{{{match}}}"
                   f"[{WINDOW}]))" for short, name in names.items()}


def matrix_to_series(result: list[dict], nodes: list[str], times: np.ndarray,
                     node_label: str = NODE_LABEL) -> np.ndarray:
    """A range query's answer -> values[time, node] (NaN where a node had no point)."""
    out = np.full((len(times), len(nodes)), np.nan)
    index = {n: i for i, n in enumerate(nodes)}
    for series in result:
        j = index.get(series.get("metric", {}).get(node_label, ""))
        if j is None:
            continue
        ts = np.array([float(t) for t, _ in series["values"]])
        vs = np.array([float(v) for _, v in series["values"]])
        k = np.searchsorted(times, ts)
        ok = (k < len(times)) & (np.abs(times[np.minimum(k, len(times) - 1)] - ts) < 1e-6)
        out[k[ok], j] = vs[ok]
    return out


def failslow(source, nodes: list[str], at: datetime | None = None,  # noqa: ANN001
             node_label: str = NODE_LABEL, extra: dict[str, str] | None = None
             ) -> FailSlowResult:
    """`source`: a metrics.prometheus.PrometheusSource (its matrix(): a range query)."""
    at = (at or datetime.now(UTC)).replace(microsecond=0)
    window = TimeWindow(start=at - timedelta(seconds=SPAN_S), end=at)
    times = np.arange(window.start.timestamp(), at.timestamp() + 1e-6, STEP_S)
    series: dict[str, np.ndarray] = {}
    done: list[FailSlowQuery] = []
    for short, promql in queries(nodes, node_label, extra).items():
        q = FailSlowQuery(metric=short, promql=promql, window=window)
        try:
            values = matrix_to_series(source.matrix(promql, window, STEP_S), nodes, times,
                                      node_label)
        except Exception as exc:  # noqa: BLE001 - a failed query is a missing metric
            q.error = f"{type(exc).__name__}: {exc}"[:300]
            done.append(q)
            continue
        q.nodes_answered = int((~np.isnan(values).all(axis=0)).sum())
        done.append(q)
        if q.nodes_answered:
            series[short] = values
    return FailSlowResult(verdict=judge_failslow(nodes, series), queries=done, at=at)
