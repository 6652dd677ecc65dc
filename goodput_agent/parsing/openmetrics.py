"""Metrics as files: OpenMetrics text with timestamps, and Prometheus HTTP API JSON responses.

This module identifies them and reads their samples into plain series; the latency and node
health analyses consume the series.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.core.events import Clock, Event, EventKind, Locator
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.head_words import holds
from goodput_agent.parsing.kernel_log import norm_pci
from goodput_agent.parsing.kernel_log.xid_catalog import lookup
from goodput_agent.parsing.lines import iter_lines, read_whole_text

_SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)(?:\s+(?P<ts>\S+))?"
)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Series(BaseModel):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    points: list[tuple[float, float]] = Field(default_factory=list)  # (unix seconds, value)


def _labels(text: str | None) -> dict[str, str]:
    return dict(_LABEL.findall(text or ""))


XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"  # DCGM exporter: the last Xid code seen on the GPU
_HOST_LABELS = ("Hostname", "hostname", "node", "kubernetes_node", "instance")


class XidSeriesReader:
    """Turns DCGM's Xid gauge into Xid events: one per GPU each time the code changes to a
    non-zero value, at the first sample that shows it."""

    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.last: dict[str, float] = {}
        self.events: list[Event] = []

    def sample(self, labels: dict[str, str], value: float, ts: float | None, line: int,
               text: str) -> None:
        gpu = norm_pci(labels["pci_bus_id"]) if labels.get("pci_bus_id") else labels.get("gpu")
        node = next((labels[k].split(":")[0] for k in _HOST_LABELS if labels.get(k)),
                    self.ctx.node_hint)
        key = f"{node}/{gpu}"
        if value == self.last.get(key) or value <= 0:
            self.last[key] = value
            return
        self.last[key] = value
        if ts is not None and ts > 1e11:
            ts /= 1000.0
        info = lookup(int(value))
        self.events.append(Event(
            kind=EventKind.xid, role=info.role, category=info.category,
            ts=datetime.fromtimestamp(ts, UTC) if ts else None,
            clock=Clock.absolute if ts else Clock.none, node=node, gpu=gpu,
            summary=f"DCGM reports Xid {int(value)} ({info.name}) on GPU {gpu}",
            locator=Locator(path=self.ctx.rel_path, line_start=line, line_end=line),
            excerpt=text[:500], detail={"xid": int(value), "weight": info.weight * 0.9,
                                        "source": "dcgm-exporter"}))


class OpenMetricsParser:
    format = "openmetrics"

    def sniff(self, head: str, name: str) -> bool:
        if not (holds(head, "# TYPE ") or holds(head, "# HELP ")):
            return False  # no line can be typed
        lines = [ln for ln in head.splitlines()[:50] if ln.strip()]
        if not lines:
            return False
        typed = sum(ln.startswith(("# TYPE ", "# HELP ")) for ln in lines)
        samples = sum(bool(_SAMPLE.match(ln)) for ln in lines if not ln.startswith("#"))
        return typed >= 1 and samples >= 1

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        series: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = {}
        xids = XidSeriesReader(ctx)
        n = 0
        for n, line in iter_lines(path):  # noqa: B007 - n is the line count afterwards
            if not line or line.startswith("#"):
                continue
            m = _SAMPLE.match(line)
            if not m:
                continue
            try:
                value = float(m["value"])
                ts = float(m["ts"]) if m["ts"] else None
            except ValueError:
                continue
            labels = _labels(m["labels"])
            if m["name"] == XID_METRIC:
                xids.sample(labels, value, ts, n, line)
            key = (m["name"], tuple(sorted(labels.items())))
            s = series.setdefault(key, Series(name=m["name"], labels=labels))
            if ts is not None and ts > 1e11:  # Prometheus text format uses milliseconds
                ts /= 1000.0
            s.points.append((ts if ts is not None else 0.0, value))
        names = sorted({s.name for s in series.values()})
        return ParseResult(format=self.format, lines_read=n, events=xids.events,
                           facts={"metric_names": names, "series": len(series)})


class PromApiJsonParser:
    format = "prom_api_json"

    def sniff(self, head: str, name: str) -> bool:
        h = head.lstrip()
        return h.startswith("{") and '"resultType"' in head and '"data"' in head

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        try:
            doc = json.loads(read_whole_text(path))
            result = doc["data"]["result"]
        except (json.JSONDecodeError, KeyError, TypeError, OSError, EOFError) as exc:
            raise ParseError(f"{ctx.rel_path}: not a Prometheus API response ({exc})") from None
        names = sorted({r.get("metric", {}).get("__name__", "") for r in result} - {""})
        xids = XidSeriesReader(ctx)
        for r in result:
            labels = {k: str(v) for k, v in (r.get("metric") or {}).items()}
            if labels.get("__name__") != XID_METRIC:
                continue
            points = r.get("values") or ([r["value"]] if r.get("value") else [])
            for ts, value in points:
                try:
                    xids.sample(labels, float(value), float(ts), 1, json.dumps(r["metric"]))
                except (TypeError, ValueError):
                    continue
        return ParseResult(format=self.format, events=xids.events,
                           facts={"metric_names": names, "series": len(result),
                                  "result_type": doc["data"].get("resultType")})


PARSERS = (PromApiJsonParser(), OpenMetricsParser())
