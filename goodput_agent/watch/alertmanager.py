"""An Alertmanager webhook receiver (`--alertmanager-listen HOST:PORT`): Alertmanager's standard
`webhook_configs` integration POSTs its payload (version "4": receiver, status, alerts[] with
labels, annotations, startsAt, endsAt, fingerprint, generatorURL) here; each firing alert
becomes a Trigger (alerts.py) and is handed to the TriggerSink, which returns once the
triggers are stored durably. Only then the answer is 200; if the sink raised, it is 500, so
Alertmanager sends the notification again. Resolved alerts are not incidents. A body that is
too large, not JSON or not the payload is a 400 with one line; nothing here can crash the
receiver.

Re-sends (Alertmanager repeats a group every `repeat_interval`, and retries) carry the same
fingerprint and startsAt, so the same key: the receiver remembers the last keys the sink took
and does not hand them over again (the ledger's unique key covers a restart).

A stdlib HTTP server in a thread: a handful of small POSTs a minute needs no event loop, and
it stops with the process. The Prometheus to ask about a latency alert is the one given to the
receiver (`--prometheus URL`), never the alert's generatorURL: an alert's text does not choose
where goodput connects.

    # alertmanager.yml
    receivers:
      - name: goodput
        webhook_configs:
          - url: http://goodput-watch.goodput.svc:9095/alertmanager
            send_resolved: false
"""

from __future__ import annotations

import hmac
import json
import re
import threading
from collections import OrderedDict
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog
from pydantic import BaseModel, Field, ValidationError

from goodput_agent.core import untrusted
from goodput_agent.watch.alerts import Alert, alert_trigger
from goodput_agent.watch.trigger import Trigger, TriggerSink

log = structlog.get_logger(__name__)

MAX_BODY = 1024 * 1024
DRAIN_LIMIT = 16 * MAX_BODY  # beyond this an oversized body is not read, just refused
REMEMBERED_KEYS = 10_000
MAX_DEPTH = 16  # the payload nests 4 deep; deeper is refused before the JSON parser sees it
MAX_ALERTS = 1_000  # Alertmanager's own max_alerts default is 0 (all); a group rarely has more
READ_TIMEOUT_S = 10.0  # a client that stops sending mid-request is dropped


class WebhookAlert(BaseModel):
    status: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: datetime  # noqa: N815 - the payload's own field names
    endsAt: datetime | None = None  # noqa: N815
    generatorURL: str = ""  # noqa: N815
    fingerprint: str = ""


class WebhookPayload(BaseModel):
    version: str
    receiver: str = ""
    status: str = ""
    alerts: list[WebhookAlert]


class BadPayload(ValueError):
    """A request the receiver refuses (400), with its one-line reason."""


def nesting_depth(body: bytes) -> int:
    """The deepest bracket nesting of a JSON text, strings skipped (no recursion)."""
    depth = deepest = 0
    for m in _BRACKETS.finditer(body):
        tok = m.group()
        if tok in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif tok in (b"]", b"}"):
            depth -= 1
    return deepest


_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def payload_triggers(body: bytes, prometheus_url: str = "") -> list[Trigger]:
    """The triggers of one webhook body (firing alerts only); BadPayload if it is not one."""
    if nesting_depth(body) > MAX_DEPTH:
        raise BadPayload(f"the body nests deeper than {MAX_DEPTH} levels: not a webhook payload")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise BadPayload("the body is not JSON") from None
    try:
        payload = WebhookPayload.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise BadPayload(f"not an Alertmanager webhook payload: {where}: "
                         f"{first.get('msg')}") from None
    if payload.version != "4":
        raise BadPayload(f"webhook payload version {payload.version[:20]!r}, expected '4'")
    if len(payload.alerts) > MAX_ALERTS:
        raise BadPayload(f"{len(payload.alerts)} alerts in one notification, over {MAX_ALERTS} "
                         "(set max_alerts in the webhook config)")
    out: dict[str, Trigger] = {}
    for item in payload.alerts:
        if item.status != "firing":
            continue
        alert = Alert(labels=item.labels, annotations=item.annotations, at=item.startsAt,
                      fingerprint=item.fingerprint, generator_url=item.generatorURL)
        trigger = alert_trigger(alert, "alertmanager", prometheus_url)
        if trigger is not None:
            out.setdefault(trigger.key, trigger)
    return list(out.values())


class AlertmanagerReceiver:
    """`start()` serves on host:port in a daemon thread; `stop()` shuts it down. `port` 0
    takes a free port (read `.port` after start)."""

    def __init__(self, host: str, port: int, sink: TriggerSink, *, prometheus_url: str = "",
                 path: str = "/alertmanager", token: str | None = None,
                 read_timeout_s: float = READ_TIMEOUT_S):
        self.host, self.port, self.sink = host, port, sink
        self.read_timeout_s = read_timeout_s
        # Alertmanager sends it as `Authorization: Bearer <token>` (http_config.authorization
        # with credentials_file); without one, whoever reaches the port can queue incidents
        self.token = token
        self.prometheus_url = prometheus_url
        self.path = path
        self.accepted: OrderedDict[str, None] = OrderedDict()  # keys the sink took, recent
        self.lock = threading.Lock()
        self.requests = 0
        self.failures = 0  # sink errors (answered 500)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    def start(self) -> None:
        handler = type("Handler", (_Handler,), {"receiver": self,
                                                "timeout": self.read_timeout_s})
        self._server = ThreadingHTTPServer((self.host, self.port), handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="alertmanager-receiver")
        self._thread.start()
        log.info("alertmanager.listening", url=self.url, authenticated=self.token is not None)
        if self.token is None and self.host not in ("127.0.0.1", "::1", "localhost"):
            log.warning("alertmanager.unauthenticated", url=self.url,
                        hint="anyone who reaches this port can queue investigations: give "
                             "--alertmanager-token-file and a NetworkPolicy")

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        scheme, _, given = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                                  self.token.encode())

    def receive(self, body: bytes) -> int:
        """Handle one POST body; the HTTP status to answer (BadPayload: the caller's 400)."""
        triggers = payload_triggers(body, self.prometheus_url)
        with self.lock:  # one hand-over at a time: a re-send waits for the first to finish
            self.requests += 1
            new = [t for t in triggers if t.key not in self.accepted]
            if new:
                try:
                    self.sink(new)
                except Exception:  # the sink's failure is the sender's cue to retry
                    self.failures += 1
                    log.exception("alertmanager.sink_failed", alerts=len(new))
                    return 500
                for t in new:
                    self.accepted[t.key] = None
                while len(self.accepted) > REMEMBERED_KEYS:
                    self.accepted.popitem(last=False)
        return 200


class _Handler(BaseHTTPRequestHandler):
    receiver: AlertmanagerReceiver
    protocol_version = "HTTP/1.1"
    timeout: float | None = READ_TIMEOUT_S  # socket timeout: a stalled sender is cut off

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        if self.path.split("?", 1)[0].rstrip("/") not in (self.receiver.path.rstrip("/"), ""):
            self._answer(404, "not found: POST to " + self.receiver.path)
            return
        if not self.receiver.authorized(self.headers.get("Authorization")):
            self.close_connection = True
            self._answer(401, "a valid bearer token is required (--alertmanager-token-file)")
            return
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            self.close_connection = True
            self._answer(400, "a Content-Length is required")
            return
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            self._discard(length)
            self._answer(400, f"the body is over {MAX_BODY} bytes")
            return
        body = self.rfile.read(length)
        try:
            code = self.receiver.receive(body)
        except BadPayload as exc:
            self._answer(400, str(exc))
            return
        self._answer(code, "ok" if code == 200 else "could not store the alerts; send again")

    def do_GET(self) -> None:  # noqa: N802
        self._answer(200 if self.path.rstrip("/") in ("/healthz", "/-/healthy") else 404,
                     "ok" if self.path.rstrip("/") in ("/healthz", "/-/healthy") else
                     "not found")

    def _discard(self, length: int) -> None:
        """Read an oversized body (up to DRAIN_LIMIT) before answering, so the sender is still
        reading when the 400 comes rather than failing its write on a closed socket."""
        left = min(max(length, 0), DRAIN_LIMIT)
        while left > 0:
            chunk = self.rfile.read(min(left, 64 * 1024))
            if not chunk:
                return
            left -= len(chunk)

    def _answer(self, code: int, text: str) -> None:
        data = (untrusted.line(text)[:300] + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - structlog instead
        return
