"""What a Kubernetes collection is asked for (K8sTarget, LatencyWindows) and the List form the
collected objects are written in: shared by collect/k8s.py, k8s_owner.py and k8s_serving.py,
which import it and never each other in the other direction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson

from goodput_agent.metrics.source import TimeWindow

DEFAULT_SINCE = timedelta(hours=6)  # as `goodput investigate --prometheus`


@dataclass
class K8sTarget:
    """What to collect: a workload (`job`, NS/NAME or NS/KIND/NAME) or one pod (NS/NAME)."""

    job: str | None = None
    pod: str | None = None
    since: timedelta | None = None  # logs: only lines newer than this
    tail_lines: int | None = 20_000  # logs: at most this many lines per container
    prometheus: str | None = None  # DCGM series of the pods' nodes over the window, from here
    prometheus_timeout_s: float = 30.0
    latency: LatencyWindows | None = None  # a vLLM pod's latency question (k8s_serving)


@dataclass
class LatencyWindows:
    """The latency question's windows, as given on the command line (all optional)."""

    search: TimeWindow | None = None  # where to look for the change (default: the last 6 h)
    baseline: TimeWindow | None = None
    incident: TimeWindow | None = None
    service: str | None = None  # the model_name, when the pod serves several

    def asked(self, now: datetime) -> TimeWindow:
        """The window the question is about (incident.yaml `window`)."""
        given = [w for w in (self.baseline, self.incident) if w is not None]
        if self.search is not None or len(given) < 2:
            given.append(self.search or TimeWindow(start=now - DEFAULT_SINCE, end=now))
        return TimeWindow(start=min(w.start for w in given), end=max(w.end for w in given))


def as_list(items: list[dict[str, Any]], api_version: str, kind: str) -> str:
    """Items as `kubectl get -o json` prints them: a List whose items carry kind/apiVersion."""
    out = [{"apiVersion": api_version, "kind": kind, **i} for i in items]
    doc = {"apiVersion": "v1", "items": out, "kind": "List", "metadata": {"resourceVersion": ""}}
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
