"""Node and GPU health around a job's window, from DCGM exporter series in Prometheus.

One instant query per field at the window's end, grouped by (Hostname, gpu), pushed down as
PromQL (metrics/dcgm_names.py says which reduction each field takes):
    max by (Hostname, gpu) (max_over_time(F{Hostname=~"n1|n2"}[W]))
    min by (Hostname, gpu) (min_over_time(...))
    sum by (Hostname, gpu) (increase(...[W]))
and, for the Xid gauge (the last code seen), its raw samples over the window (a range
selector), so every distinct code is kept with the first time it was seen. Each query and its
window is kept as evidence; a field with no series is "absent", a failing server is an error
that the caller reports as missing evidence.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from goodput_agent.metrics.dcgm_names import FIELDS, GPU_LABEL, HOST_LABEL, DcgmField, Reduce
from goodput_agent.metrics.prometheus import PrometheusSource
from goodput_agent.metrics.source import MetricsUnavailable, TimeWindow


class XidSeen(BaseModel):
    xid: int
    first_seen: datetime


class GpuWindowHealth(BaseModel):
    host: str
    gpu: str
    uuid: str | None = None
    model: str | None = None
    values: dict[str, float] = Field(default_factory=dict)  # field key -> reduced value
    xids: list[XidSeen] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)


class DcgmWindowHealth(BaseModel):
    window: TimeWindow
    source: str
    gpus: list[GpuWindowHealth] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)  # each query, as evidence
    absent: list[str] = Field(default_factory=list)  # fields with no series
    errors: list[str] = Field(default_factory=list)


def _duration(window: TimeWindow) -> str:
    return f"{max(1, int(window.seconds))}s"


def host_matcher(hosts: set[str] | None) -> str:
    """`{Hostname=~"a|b"}` (names escaped as regex literals, quotes escaped for PromQL)."""
    if not hosts:
        return ""
    alternatives = "|".join(re.escape(h) for h in sorted(hosts))
    escaped = alternatives.replace("\\", "\\\\").replace('"', '\\"')
    return f'{{{HOST_LABEL}=~"{escaped}"}}'


def field_query(f: DcgmField, hosts: set[str] | None, window: TimeWindow) -> str:
    sel, w, by = host_matcher(hosts), _duration(window), f"by ({HOST_LABEL}, {GPU_LABEL})"
    if f.reduce == Reduce.max:
        return f"max {by} (max_over_time({f.name}{sel}[{w}]))"
    if f.reduce == Reduce.min:
        return f"min {by} (min_over_time({f.name}{sel}[{w}]))"
    if f.reduce == Reduce.increase:
        return f"sum {by} (increase({f.name}{sel}[{w}]))"
    return f"{f.name}{sel}[{w}]"  # raw samples (last_codes)


def gpu_health(src: PrometheusSource, window: TimeWindow,
               hosts: set[str] | None = None) -> DcgmWindowHealth:
    """Every GPU of `hosts` (all hosts when None) that DCGM reported in the window."""
    out = DcgmWindowHealth(window=window, source=src.name)
    gpus: dict[tuple[str, str], GpuWindowHealth] = {}

    def gpu_of(metric: dict[str, Any]) -> GpuWindowHealth:
        key = (str(metric.get(HOST_LABEL, "?")), str(metric.get(GPU_LABEL, "?")))
        if key not in gpus:
            gpus[key] = GpuWindowHealth(host=key[0], gpu=key[1])
        g = gpus[key]
        g.uuid = g.uuid or metric.get("UUID")
        g.model = g.model or metric.get("modelName")
        return g

    for f in FIELDS:
        query = field_query(f, hosts, window)
        out.queries.append(f"{query} @ {window.end.isoformat()}")
        try:
            result = src.instant(query, window.end)
        except MetricsUnavailable as exc:
            out.errors.append(str(exc))
            if src.down is not None:  # the server is gone: the rest would fail the same
                break
            continue
        if not result:
            out.absent.append(f.name)
            continue
        for series in result:
            g = gpu_of(series.get("metric") or {})
            if f.reduce == Reduce.last_codes:
                _codes(g, series.get("values") or [])
            else:
                g.values[f.key] = float(series["value"][1])
    for g in gpus.values():
        g.problems = problems(g)
    out.gpus = sorted(gpus.values(), key=lambda g: (g.host, _num(g.gpu)))
    return out


def _codes(g: GpuWindowHealth, values: list[list[Any]]) -> None:
    seen = {x.xid for x in g.xids}
    for t, raw in values:
        code = int(float(raw))
        if code and code not in seen:
            seen.add(code)
            g.xids.append(XidSeen(xid=code, first_seen=datetime.fromtimestamp(float(t), UTC)))


def _num(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (1 << 30, text)


def problems(g: GpuWindowHealth) -> list[str]:
    out = [f"Xid {x.xid} first seen {x.first_seen.isoformat()}" for x in g.xids]
    for f in FIELDS:
        value = g.values.get(f.key)
        if f.alarm is not None and value is not None and value >= f.alarm:
            unit = f" {f.unit}" if f.unit else ""
            verb = "reached" if f.reduce == Reduce.max else "rose by"
            out.append(f"{f.what} {verb} {value:g}{unit} ({f.name})")
    return out


# raw series a bundle keeps: the Xid gauge (read as Xid events) and what the throttle
# analysis reads (clock, reasons, power, temperature)
RAW_METRICS = ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_SM_CLOCK",
               "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
               "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP")
MAX_POINTS = 10_000


def raw_query(metric: str, hosts: set[str] | None) -> str:
    return f"{metric}{host_matcher(hosts)}"


def range_answer(src: PrometheusSource, metric: str, hosts: set[str] | None,
                 window: TimeWindow) -> tuple[dict[str, Any] | None, str]:
    """Every series of `metric` on `hosts` over the window as the query_range API answers it
    (the JSON a bundle's metric files may hold), and the query text; None when no series."""
    step = max(15, -(-int(window.seconds) // MAX_POINTS))
    query = raw_query(metric, hosts)
    what = f"{query} [{window.start.isoformat()} .. {window.end.isoformat()}, step {step}s]"
    result = src.matrix(query, window, step)
    if not result:
        return None, what
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}, what
