"""Which of the three questions a bundle asks: from the question text, else from its content."""

from __future__ import annotations

import re

from goodput_agent.bundle import Inventory
from goodput_agent.parsing.registry import FAILURE_FORMATS, METRICS_FORMATS

_WORDS = {
    "latency": re.compile(r"\b(latenc|ttft|time to first token|p99|p95|slo|queue|serving|"
                          r"inference|throughput drop|tokens/s)", re.I),
    "slowdown": re.compile(r"\b(slow|slower|step time|regress|mfu|throughput|straggl)", re.I),
    "failure": re.compile(r"\b(fail|crash|died|dead|abort|hang|hung|stall|stuck|froze|killed|"
                          r"oom|error|exit|timeout|timed out|xid|nccl)", re.I),
}


def infer_kind(inv: Inventory) -> str:
    if inv.incident.kind in ("failure", "slowdown", "latency"):
        return inv.incident.kind
    q = inv.incident.question or ""
    formats = {f.format for f in inv.files}
    # the question decides, as long as the bundle holds what that question is answered from
    supported = {"failure": bool(formats & FAILURE_FORMATS),
                 "slowdown": "kineto_trace" in formats,
                 "latency": bool(formats & METRICS_FORMATS)}
    for kind in ("failure", "latency", "slowdown"):
        if _WORDS[kind].search(q) and supported[kind]:
            return kind
    if formats & FAILURE_FORMATS:
        return "failure"
    if "kineto_trace" in formats:
        return "slowdown"
    if formats & METRICS_FORMATS:
        return "latency"
    return "failure"
