"""Firing alerts straight from Prometheus (`GET /api/v1/alerts`), for sites without
Alertmanager. Each poll reads the alerts the rules hold now; a firing alert becomes a trigger
once (alerts.py maps it; its key is the fingerprint of its labels and its activeAt, so an alert
that resolves and fires again is a new incident). Pending alerts (still inside their `for`)
are not incidents yet.

Which alerts: by default only those that carry the `goodput_question` label (the rules in
deploy/prometheus/goodput-alerts.yaml set it), since Prometheus holds every team's alerts;
`match` narrows further by exact label values. The cursor is the set of keys firing at the
last poll (JSON), so nothing is emitted twice while an alert keeps firing, and a restart
resumes without re-emitting. A server that does not answer is SourceDown (the core backs off).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import requests
import structlog

from goodput_agent.watch.alerts import QUESTION_LABEL, Alert, alert_trigger
from goodput_agent.watch.trigger import Poll, SourceDown, Trigger

log = structlog.get_logger(__name__)

MAX_BYTES = 32 * 1024 * 1024


class PrometheusAlertsSource:
    name = "prometheus"

    def __init__(self, url: str, *, match: dict[str, str] | None = None,
                 only_goodput_rules: bool = True, timeout_s: float = 15.0,
                 session: requests.Session | None = None):
        self.url = url.rstrip("/")
        self.match = dict(match or {})
        self.only_goodput_rules = only_goodput_rules
        self.timeout_s = timeout_s
        self.session = session or requests.Session()

    def poll(self, cursor: str | None) -> Poll:
        firing = self._firing()
        before = _decode(cursor)
        triggers: list[Trigger] = []
        now_keys = []
        for alert in firing:
            trigger = alert_trigger(alert, "prometheus", self.url)
            if trigger is None:
                continue
            now_keys.append(trigger.key)
            if trigger.key not in before:
                triggers.append(trigger)
        return Poll(triggers=triggers, cursor=json.dumps({"v": 1, "firing": sorted(now_keys)}))

    def _firing(self) -> list[Alert]:
        doc = self._get("/api/v1/alerts")
        raw = (doc.get("data") or {}).get("alerts") if isinstance(doc.get("data"), dict) else None
        if not isinstance(raw, list):
            raise SourceDown(f"prometheus at {self.url}: /api/v1/alerts has no data.alerts")
        out = []
        for item in raw:
            alert = self._alert(item)
            if alert is not None:
                out.append(alert)
        return out

    def _alert(self, item: Any) -> Alert | None:
        if not isinstance(item, dict) or item.get("state") != "firing":
            return None
        labels = {str(k): str(v) for k, v in (item.get("labels") or {}).items()}
        if self.only_goodput_rules and QUESTION_LABEL not in labels:
            return None
        if any(labels.get(k) != v for k, v in self.match.items()):
            return None
        try:
            at = datetime.fromisoformat(str(item.get("activeAt")).replace("Z", "+00:00"))
        except ValueError:
            log.info("prom_alerts.no_active_at", alertname=labels.get("alertname"))
            return None
        annotations = {str(k): str(v) for k, v in (item.get("annotations") or {}).items()}
        return Alert(labels=labels, annotations=annotations, at=at)

    def _get(self, path: str) -> dict[str, Any]:
        try:
            with self.session.get(self.url + path, timeout=self.timeout_s, stream=True) as resp:
                body = resp.raw.read(MAX_BYTES + 1, decode_content=True)
        except requests.RequestException as exc:
            raise SourceDown(f"prometheus at {self.url} unreachable: "
                             f"{type(exc).__name__}") from None
        except OSError as exc:
            raise SourceDown(f"prometheus at {self.url} unreachable: {exc}") from None
        if resp.status_code != 200:
            raise SourceDown(f"prometheus at {self.url}: HTTP {resp.status_code} on {path}")
        if len(body) > MAX_BYTES:
            raise SourceDown(f"prometheus at {self.url}: {path} answered over {MAX_BYTES} bytes")
        try:
            doc = json.loads(body)
        except ValueError:
            raise SourceDown(f"prometheus at {self.url}: {path} did not answer JSON") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            raise SourceDown(f"prometheus at {self.url}: {path} did not succeed")
        return doc


def _decode(cursor: str | None) -> set[str]:
    if not cursor:
        return set()
    try:
        state = json.loads(cursor)
    except ValueError:
        return set()
    firing = state.get("firing") if isinstance(state, dict) else None
    return {str(k) for k in firing} if isinstance(firing, list) else set()
