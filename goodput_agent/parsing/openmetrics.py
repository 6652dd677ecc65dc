"""Metrics as files: OpenMetrics text with timestamps, and Prometheus HTTP API JSON responses.

This module identifies them and reads their samples into plain series; the latency and node
health analyses consume the series.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.lines import iter_lines

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


class OpenMetricsParser:
    format = "openmetrics"

    def sniff(self, head: str, name: str) -> bool:
        lines = [ln for ln in head.splitlines()[:50] if ln.strip()]
        if not lines:
            return False
        typed = sum(ln.startswith(("# TYPE ", "# HELP ")) for ln in lines)
        samples = sum(bool(_SAMPLE.match(ln)) for ln in lines if not ln.startswith("#"))
        return typed >= 1 and samples >= 1

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        series: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = {}
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
            key = (m["name"], tuple(sorted(labels.items())))
            s = series.setdefault(key, Series(name=m["name"], labels=labels))
            if ts is not None and ts > 1e11:  # Prometheus text format uses milliseconds
                ts /= 1000.0
            s.points.append((ts if ts is not None else 0.0, value))
        names = sorted({s.name for s in series.values()})
        return ParseResult(format=self.format, lines_read=n,
                           facts={"metric_names": names, "series": len(series)})


class PromApiJsonParser:
    format = "prom_api_json"

    def sniff(self, head: str, name: str) -> bool:
        h = head.lstrip()
        return h.startswith("{") and '"resultType"' in head and '"data"' in head

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        try:
            doc = json.loads(path.read_text(encoding="utf-8", errors="replace"))
            result = doc["data"]["result"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ParseError(f"{ctx.rel_path}: not a Prometheus API response ({exc})") from None
        names = sorted({r.get("metric", {}).get("__name__", "") for r in result} - {""})
        return ParseResult(format=self.format,
                           facts={"metric_names": names, "series": len(result),
                                  "result_type": doc["data"].get("resultType")})


PARSERS = (PromApiJsonParser(), OpenMetricsParser())
