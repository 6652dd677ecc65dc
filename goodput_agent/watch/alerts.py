"""A firing alert as a Trigger: shared by the Prometheus poller (prom_source.py) and the
Alertmanager webhook receiver (alertmanager.py).

Which question: the alert's `goodput_question` label (deploy/prometheus/goodput-alerts.yaml
sets it on every rule: "node" for DCGM Xid and throttling, "latency" for vLLM end-to-end
latency); an alert without it is a latency question when it names a model (`model_name`), a
node question when it names a host (`Hostname`, `node`, `kubernetes_node`, `instance`), and is
skipped otherwise (nothing to investigate).

Windows of a latency question: the alert time T (Prometheus' activeAt, Alertmanager's
startsAt) ends the incident window, which is as long as the range the rule measured (the
`goodput_window` label, e.g. "5m", default 10m): at T the rule found that range bad. The
baseline is the same length just before it. Both go into `collect`, with the service and the
Prometheus to ask: what `goodput latency --prometheus URL --service S --baseline --incident`
(investigate_prometheus) needs.

Keys: `alert:<fingerprint>:<T>`, the fingerprint being Alertmanager's (FNV-1a 64 over the
sorted label pairs, as prometheus/common model.LabelSet.Fingerprint computes it, so both paths
name an alert the same way). An alert that resolves and fires again has a new T: a new incident.
Every label and annotation is untrusted text: carried, never acted on.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field

from goodput_agent.watch.trigger import Question, SourceName, Trigger

QUESTION_LABEL = "goodput_question"
WINDOW_LABEL = "goodput_window"
DEFAULT_WINDOW = timedelta(minutes=10)
MAX_WINDOW = timedelta(days=1)
HOST_LABELS = ("Hostname", "hostname", "node", "kubernetes_node", "instance")
SERVICE_LABELS = ("model_name", "service", "job")
_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_FNV_OFFSET, _FNV_PRIME, _SEPARATOR = 14695981039346656037, 1099511628211, 0xFF


class Alert(BaseModel):
    """One alert, as either path reports it."""

    labels: dict[str, str]
    annotations: dict[str, str] = Field(default_factory=dict)
    at: datetime  # activeAt (Prometheus) or startsAt (Alertmanager)
    fingerprint: str = ""
    generator_url: str = ""


def fingerprint(labels: dict[str, str]) -> str:
    """model.LabelSet.Fingerprint() as Alertmanager prints it (%016x)."""
    h = _FNV_OFFSET
    for name in sorted(labels):
        for part in (name, labels[name]):
            for byte in part.encode():
                h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
            h = ((h ^ _SEPARATOR) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def _duration(text: str | None) -> timedelta | None:
    m = _DURATION.match((text or "").strip())
    if not m:
        return None
    value = timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2)])
    return value if timedelta(0) < value <= MAX_WINDOW else None


def _first(labels: dict[str, str], names: tuple[str, ...]) -> str:
    return next((labels[n] for n in names if labels.get(n)), "")


def host(labels: dict[str, str]) -> str:
    """The node an alert names; `instance` loses its port (host:9400 → host)."""
    name = _first(labels, HOST_LABELS)
    if name and name == labels.get("instance") and not name.startswith("["):
        name = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
    return name


def question_of(labels: dict[str, str]) -> Question | None:
    asked = labels.get(QUESTION_LABEL)
    if asked in ("failure", "latency", "node"):
        return asked  # type: ignore[return-value]
    if labels.get("model_name"):
        return "latency"
    if host(labels):
        return "node"
    return None


def alert_trigger(alert: Alert, source: SourceName, prometheus_url: str = "") -> Trigger | None:
    """The trigger for a firing alert, or None when it names nothing to investigate."""
    labels = alert.labels
    question = question_of(labels)
    if question is None:
        return None
    at = alert.at if alert.at.tzinfo else alert.at.replace(tzinfo=UTC)
    at = at.astimezone(UTC)
    fp = alert.fingerprint or fingerprint(labels)
    name = labels.get("alertname", "alert")
    detail = alert.annotations.get("summary") or alert.annotations.get("description") or ""
    common = {"source": source, "key": f"alert:{fp}:{at.isoformat()}", "state": "firing",
              "occurred_at": at, "detail": detail,
              "labels": {k: v for k, v in labels.items() if k != QUESTION_LABEL}}
    if question == "latency":
        service = _first(labels, SERVICE_LABELS)
        length = _duration(labels.get(WINDOW_LABEL)) or DEFAULT_WINDOW
        collect = {"prometheus_service": service,
                   "window_start": (at - length).isoformat(), "window_end": at.isoformat(),
                   "baseline_start": (at - 2 * length).isoformat(),
                   "baseline_end": (at - length).isoformat()}
        if prometheus_url:
            collect["prometheus_url"] = prometheus_url
        return Trigger(**common, question="latency", subject=f"{name} {service}".strip(),
                       collect=collect)
    node = host(labels)
    collect = {"node": node} if node else {}
    if prometheus_url:
        collect["prometheus_url"] = prometheus_url
    if labels.get("gpu"):
        collect["gpu"] = labels["gpu"]
    return Trigger(**common, question=question, subject=node or name,
                   nodes=[node] if node else [], collect=collect)
