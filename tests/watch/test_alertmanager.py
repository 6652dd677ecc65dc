"""The Alertmanager webhook receiver, started on 127.0.0.1: Alertmanager-format POSTs (the
webhook payload, version "4") become triggers in the sink once; resolved alerts are not
incidents; a sink failure is a 500 (Alertmanager retries); bad bodies are a one-line 400."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from goodput_agent.watch.alertmanager import MAX_BODY, AlertmanagerReceiver
from goodput_agent.watch.alerts import Alert, alert_trigger, fingerprint

PROM = "http://prometheus.monitoring:9090"


def alert(labels: dict[str, str], starts: str, status: str = "firing") -> dict:
    return {"status": status, "labels": labels, "annotations": {"summary": "it broke"},
            "startsAt": starts,
            "endsAt": "0001-01-01T00:00:00Z" if status == "firing" else "2026-12-04T06:00:00Z",
            "generatorURL": "http://prometheus:9090/graph?g0.expr=x",
            "fingerprint": fingerprint(labels)}


XID = {"alertname": "GpuXidError", "Hostname": "gpu-node-07", "gpu": "3", "xid": "79",
       "goodput_question": "node", "severity": "critical"}
LATENCY = {"alertname": "VllmE2eLatencyAboveSlo", "model_name": "llama-70b", "job": "vllm",
           "goodput_question": "latency", "goodput_window": "5m"}
RESOLVED = {"alertname": "GpuClockThrottled", "Hostname": "gpu-node-08", "gpu": "1",
            "goodput_question": "node"}


def payload(*alerts: dict, status: str = "firing") -> bytes:
    return json.dumps({"version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0,
                       "status": status, "receiver": "goodput", "groupLabels": {},
                       "commonLabels": {}, "commonAnnotations": {},
                       "externalURL": "http://alertmanager:9093", "alerts": list(alerts)}).encode()


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Sink:
    def __init__(self):
        self.got, self.fail = [], False

    def __call__(self, triggers):
        if self.fail:
            raise RuntimeError("ledger is locked")
        self.got += triggers


@contextmanager
def receiver(sink) -> Iterator[AlertmanagerReceiver]:
    r = AlertmanagerReceiver("127.0.0.1", 0, sink, prometheus_url=PROM)
    r.start()
    try:
        yield r
    finally:
        r.stop()


def test_firing_alerts_become_triggers_once():
    sink = Sink()
    with receiver(sink) as r:
        body = payload(alert(XID, "2026-12-04T05:00:00Z"),
                       alert(LATENCY, "2026-12-04T05:30:00.5Z"),
                       alert(RESOLVED, "2026-12-04T04:00:00Z", status="resolved"))
        assert post(r.url, body) == (200, "ok\n")
        assert len(sink.got) == 2  # the resolved one is not an incident
        node = next(t for t in sink.got if t.question == "node")
        latency = next(t for t in sink.got if t.question == "latency")
        assert (node.question, node.subject, node.nodes) == ("node", "gpu-node-07",
                                                              ["gpu-node-07"])
        assert node.collect == {"node": "gpu-node-07", "gpu": "3", "prometheus_url": PROM}
        assert node.key == f"alert:{fingerprint(XID)}:2026-12-04T05:00:00+00:00"
        assert node.source == "alertmanager"
        assert latency.collect == {
            "prometheus_url": PROM, "prometheus_service": "llama-70b",
            "window_start": "2026-12-04T05:25:00.500000+00:00",
            "window_end": "2026-12-04T05:30:00.500000+00:00",
            "baseline_start": "2026-12-04T05:20:00.500000+00:00",
            "baseline_end": "2026-12-04T05:25:00.500000+00:00"}
        assert "goodput_question" not in latency.labels

        assert post(r.url, body)[0] == 200  # Alertmanager's repeat: same fingerprint+startsAt
        assert len(sink.got) == 2
        # resolved, then firing again: a new startsAt, a new incident
        assert post(r.url, payload(alert(XID, "2026-12-04T07:00:00Z")))[0] == 200
        assert [t.key for t in sink.got[2:]] == \
            [f"alert:{fingerprint(XID)}:2026-12-04T07:00:00+00:00"]


def test_a_sink_failure_is_a_500_and_the_resend_is_delivered():
    sink = Sink()
    with receiver(sink) as r:
        sink.fail = True
        body = payload(alert(XID, "2026-12-04T05:00:00Z"))
        code, text = post(r.url, body)
        assert code == 500 and text.count("\n") == 1
        assert r.failures == 1
        sink.fail = False
        assert post(r.url, body)[0] == 200
        assert [t.subject for t in sink.got] == ["gpu-node-07"]


def test_bad_bodies_are_one_line_400s_and_the_receiver_keeps_serving():
    sink = Sink()
    with receiver(sink) as r:
        cases = [b"not json{", json.dumps({"version": "4"}).encode(),
                 json.dumps({"version": "3", "alerts": []}).encode(),
                 json.dumps({"version": "4", "alerts": [{"status": "firing",
                                                         "labels": {"\x1b[31m": 1}}]}).encode(),
                 json.dumps([1, 2]).encode()]
        for body in cases:
            code, text = post(r.url, body)
            assert code == 400 and text.endswith("\n") and text.count("\n") == 1, (body, text)
            assert "\x1b" not in text
        big = b"x" * (MAX_BODY + 1)
        code, text = post(r.url, big)
        assert code == 400 and "over" in text
        assert post(r.url.replace("/alertmanager", "/elsewhere"),
                    payload(alert(XID, "2026-12-04T05:00:00Z")))[0] == 404
        with urllib.request.urlopen(f"http://127.0.0.1:{r.port}/healthz", timeout=5) as resp:
            assert resp.status == 200
        assert sink.got == []


def test_fingerprint_is_alertmanagers():
    # prometheus/common model: TestMetricToFingerprint / TestLabelsToSignature vectors
    assert int(fingerprint({}), 16) == 14695981039346656037
    assert int(fingerprint({"name": "garland, briggs", "fear": "love is not enough"}), 16) == \
        5799056148416392346


def test_alerts_without_the_label_map_by_what_they_name():
    at = datetime.fromisoformat("2026-12-04T05:00:00+00:00")
    by_model = alert_trigger(Alert(labels={"alertname": "Slow", "model_name": "m"}, at=at),
                             "alertmanager")
    by_host = alert_trigger(Alert(labels={"alertname": "Hot", "instance": "10.0.0.7:9400"},
                                  at=at), "alertmanager")
    nothing = alert_trigger(Alert(labels={"alertname": "Watchdog"}, at=at), "alertmanager")
    assert by_model is not None and by_model.question == "latency"
    # without goodput_window: the default 10 minutes
    assert by_model.collect["window_start"] == (at - timedelta(minutes=10)).isoformat()
    assert by_host is not None and (by_host.question, by_host.nodes) == ("node", ["10.0.0.7"])
    assert nothing is None


def test_deep_nesting_is_a_one_line_400_not_a_recursion_error():
    sink = Sink()
    with receiver(sink) as r:
        for body in (b"[" * 100_000 + b"]" * 100_000, b'{"version": "4", "alerts": ' +
                     b"[" * 50 + b"]" * 50 + b"}"):
            code, text = post(r.url, body)
            assert code == 400 and "nests deeper than" in text and text.count("\n") == 1
        assert post(r.url, payload(alert(XID, "2026-12-04T05:00:00Z")))[0] == 200
    assert len(sink.got) == 1


def test_a_token_is_required_when_one_is_configured():
    sink = Sink()
    token = "s3cret-token-for-the-receiver"
    r = AlertmanagerReceiver("127.0.0.1", 0, sink, prometheus_url=PROM, token=token)
    r.start()
    try:
        body = payload(alert(XID, "2026-12-04T05:00:00Z"))
        for headers in ({}, {"Authorization": "Bearer wrong-token-value-xx"},
                        {"Authorization": f"Basic {token}"}):
            code, text = post(r.url, body, headers)
            assert code == 401 and "bearer token" in text
        assert sink.got == []
        assert post(r.url, body, {"Authorization": f"Bearer {token}"})[0] == 200
        assert len(sink.got) == 1
    finally:
        r.stop()


def test_a_sender_that_stalls_mid_request_is_cut_off():
    import socket

    r = AlertmanagerReceiver("127.0.0.1", 0, Sink(), prometheus_url=PROM, read_timeout_s=0.5)
    r.start()
    try:
        with socket.create_connection(("127.0.0.1", r.port), timeout=30) as s:
            s.sendall(b"POST /alertmanager HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
            # the server closes the connection once its read times out: recv sees the end
            assert s.recv(1024) == b""
        assert post(r.url, payload(alert(XID, "2026-12-04T05:00:00Z")))[0] == 200
    finally:
        r.stop()


def test_too_many_alerts_in_one_notification_are_refused():
    sink = Sink()
    with receiver(sink) as r:
        alerts = [alert({**XID, "gpu": str(i)}, "2026-12-04T05:00:00Z") for i in range(1001)]
        code, text = post(r.url, payload(*alerts))
        assert code == 400 and "over 1000" in text
    assert sink.got == []
