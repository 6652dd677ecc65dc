"""Which of the three questions a bundle asks: from the question text, else from its content."""

from __future__ import annotations

import re

from goodput_agent.bundle import Inventory

_WORDS = {
    "latency": re.compile(r"\b(latenc|ttft|time to first token|p99|p95|slo|queue|serving|"
                          r"inference|throughput drop|tokens/s)", re.I),
    "slowdown": re.compile(r"\b(slow|slower|step time|regress|mfu|throughput|straggl|stall)", re.I),
    "failure": re.compile(r"\b(fail|crash|died|dead|abort|hang|hung|killed|oom|error|exit|"
                          r"timeout|timed out|xid|nccl)", re.I),
}
FAILURE_FORMATS = {"job_log", "kernel_log", "torchelastic_error", "flight_recorder", "sacct_pipe",
                   "sacct_table", "sacct_json", "scontrol_job", "k8s_list"}


def infer_kind(inv: Inventory) -> str:
    if inv.incident.kind in ("failure", "slowdown", "latency"):
        return inv.incident.kind
    q = inv.incident.question or ""
    for kind in ("failure", "latency", "slowdown"):
        if _WORDS[kind].search(q):
            return kind
    formats = {f.format for f in inv.files}
    if formats & FAILURE_FORMATS:
        return "failure"
    if "kineto_trace" in formats:
        return "slowdown"
    if formats & {"openmetrics", "prom_api_json"}:
        return "latency"
    return "failure"
