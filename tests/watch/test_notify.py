"""Notifications against a local HTTP receiver the test starts: Slack and generic JSON forms,
untrusted text escaped, retries, and a receiver that never answers well never loses the
incident."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from goodput_agent.ledger import Ledger
from goodput_agent.watch.grouping import GroupRule
from goodput_agent.watch.notify import NotifySettings, notifier, slack_text
from goodput_agent.watch.runner import Watch, WatchOptions
from tests.watch.fakes import ListSource, RecordingInvestigation, job_trigger


class Receiver:
    def __init__(self, failures: int = 0):
        self.failures = failures  # answer 500 to this many requests first
        self.bodies: list[dict] = []
        self.requests = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                receiver.requests += 1
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.requests <= receiver.failures:
                    self.send_response(500)
                    self.end_headers()
                    return
                receiver.bodies.append(json.loads(body))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


def _watch(tmp_path: Path, settings: NotifySettings, subject: str = "4242") -> Watch:
    t = job_trigger(1)
    t.subject = subject
    ledger = Ledger(tmp_path / "ledger.duckdb")
    return Watch(ledger, [ListSource([t])], RecordingInvestigation(),
                 WatchOptions(tick_s=0.01, group=GroupRule(window_s=0, min_size=100)),
                 notifier(settings))


def test_slack_form_with_verdict_confidence_and_link(tmp_path: Path, receiver: Receiver) -> None:
    settings = NotifySettings(url=receiver.url, format="slack",
                              review_url="https://goodput.example/", backoff_s=0.01)
    w = _watch(tmp_path, settings)
    w.run(once=True)
    (body,) = receiver.bodies
    assert "application_error" in body["text"] and "4242" in body["text"]
    block = body["blocks"][0]["text"]["text"]
    inv = w.ledger.rows("SELECT investigation_id FROM watch_triggers")[0]["investigation_id"]
    assert "60%" in block and f"<https://goodput.example/inv/{inv}|" in block
    sent = w.ledger.rows("SELECT ok, attempts FROM watch_notifications")
    assert sent == [{"ok": True, "attempts": 1}]


def test_json_form(tmp_path: Path, receiver: Receiver) -> None:
    w = _watch(tmp_path, NotifySettings(url=receiver.url, format="json"))
    w.run(once=True)
    (body,) = receiver.bodies
    assert body["schema"] == "goodput.watch.notification/v1"
    assert body["category"] == "application_error" and body["confidence"] == 0.6
    assert body["subject"] == "4242" and body["review_url"] is None


def test_untrusted_text_cannot_mention_or_link(tmp_path: Path, receiver: Receiver) -> None:
    evil = "job <!channel> <https://evil.example|click> @here & \x1b[31mred"
    w = _watch(tmp_path, NotifySettings(url=receiver.url), subject=evil)
    w.run(once=True)
    text = json.dumps(receiver.bodies[0])
    assert "<!channel>" not in text and "<https://evil" not in text and "@here" not in text
    assert "\x1b" not in receiver.bodies[0]["text"]
    assert slack_text("a <b> & c") == "a &lt;b&gt; &amp; c"


def test_retries_then_delivers(tmp_path: Path) -> None:
    r = Receiver(failures=2)
    try:
        w = _watch(tmp_path, NotifySettings(url=r.url, backoff_s=0.01))
        w.run(once=True)
    finally:
        r.server.shutdown()
    assert len(r.bodies) == 1
    assert w.ledger.rows("SELECT ok, attempts FROM watch_notifications") == [
        {"ok": True, "attempts": 3}]


def test_a_failed_notification_keeps_the_incident(tmp_path: Path) -> None:
    r = Receiver(failures=100)
    try:
        w = _watch(tmp_path, NotifySettings(url=r.url, attempts=2, backoff_s=0.01))
        w.run(once=True)
    finally:
        r.server.shutdown()
    assert w.store.counts()["done"] == 1
    (sent,) = w.ledger.rows("SELECT ok, attempts, error FROM watch_notifications")
    assert sent["ok"] is False and sent["attempts"] == 2 and "HTTP 500" in sent["error"]
