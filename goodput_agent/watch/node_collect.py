"""A bundle for a node trigger from Kubernetes (NotReady, a GPU health taint) or from a GPU
alert (DCGM Xid, throttling): what the existing collectors read about one node around the
moment it went bad, so the ordinary bundle investigation can answer "what happened to this
node?".

    k8s/nodes.json    the node as the API server has it now: conditions, taints, allocatable
    k8s/events.json   events about the node (every namespace)
    metrics/dcgm/     its DCGM exporter series over the window (collect_dcgm), with Prometheus
    incident.yaml     the question, the node and the window: an hour before the event to five
                      minutes after it

Each part is optional: a watch without Kubernetes access collects the DCGM series alone, and
one without Prometheus the Kubernetes part alone; a part that fails is missing evidence in
the manifest, as everywhere else.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from goodput_agent.collect.base import BundleWriter
from goodput_agent.collect.k8s import as_list, collect_dcgm
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.sources.errors import SourceError
from goodput_agent.sources.k8s import K8sSource

BEFORE = timedelta(hours=1)
AFTER = timedelta(minutes=5)


def node_window(at: datetime) -> TimeWindow:
    return TimeWindow(start=at - BEFORE, end=at + AFTER)


def collect_node_event(node: str, at: datetime, out_dir: Path, *, k8s: K8sSource | None = None,
                       prometheus_url: str | None = None, state: str = "",
                       timeout_s: float = 30.0) -> Path:
    """Write the node's bundle to `out_dir`; returns it."""
    window = node_window(at)
    with BundleWriter(out_dir, {"node": node}, window) as writer:
        if k8s is not None:
            _k8s_node(writer, k8s, node)
        if prometheus_url:
            collect_dcgm(writer, prometheus_url, {node}, window, timeout_s)
        what = f" ({state})" if state else ""
        writer.write_incident({"question": f"what happened to node {node}{what}?",
                               "node": node,
                               "window": {"start": window.start.isoformat(),
                                          "end": window.end.isoformat()}})
    return out_dir


def _k8s_node(writer: BundleWriter, src: K8sSource, node: str) -> None:
    try:
        nodes = src.nodes({node})
        writer.write_text("k8s/nodes.json", as_list(nodes, "v1", "Node"), source="kubernetes",
                          what=f"node {node}", query=f"GET /api/v1/nodes/{node}",
                          origin=src.where)
    except SourceError as exc:
        writer.source_error(f"node {node}", exc)
    try:
        events = src.events(src.namespace, set(), {node})
        writer.write_text("k8s/events.json", as_list(events, "v1", "Event"),
                          source="kubernetes", what=f"events about node {node}",
                          query="GET /api/v1/events?fieldSelector=involvedObject.kind=Node,"
                                f"involvedObject.name={node}", origin=src.where)
    except SourceError as exc:
        writer.source_error(f"events about node {node}", exc)
