"""Telling people: a webhook POST after each investigation, Slack-compatible
(`{"text", "blocks"}`, what an incoming webhook takes) or a generic JSON document.

What came from the watched system (job names, reasons, the verdict's own words, which quote
logs) is untrusted: control characters are shown as escapes; for Slack, `&`, `<` and `>` are
escaped (so no `<!channel>`, `<!here>` or `<@user>` mention and no link can be smuggled in) and
a bare `@channel`/`@here`/`@everyone` gets a zero-width joiner after its `@`. A POST that fails
is retried with exponential backoff; the outcome is recorded beside the incident, which a
failed notification never loses.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import requests
from pydantic import BaseModel
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt
from tenacity import wait_exponential as backoff

from goodput_agent.core.untrusted import line
from goodput_agent.report import Report
from goodput_agent.watch.runner import NotifyResult
from goodput_agent.watch.trigger import Trigger

_BROADCAST = re.compile(r"@(channel|here|everyone)\b", re.I)


class NotifySettings(BaseModel):
    url: str
    format: Literal["slack", "json"] = "slack"
    review_url: str | None = None  # base of `goodput serve`: <base>/inv/<id>
    timeout_s: float = 10.0
    attempts: int = 4
    backoff_s: float = 1.0


class NotifyFailed(Exception):
    pass


def slack_text(text: object) -> str:
    """Untrusted text for Slack mrkdwn: one visible line, no markup, no mention, no link."""
    safe = line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BROADCAST.sub("@\u200d\\1", safe)


def review_link(settings: NotifySettings, investigation_id: str | None) -> str | None:
    if not settings.review_url or not investigation_id:
        return None
    return settings.review_url.rstrip("/") + "/inv/" + investigation_id


def _facts(trigger: Trigger, report: Report, group_size: int) -> dict[str, Any]:
    rc = report.root_cause
    return {"incident": trigger.key, "source": trigger.source, "subject": trigger.subject,
            "state": trigger.state, "occurred_at": trigger.occurred_at.isoformat(),
            "verdict": rc.summary, "category": rc.category, "confidence": rc.confidence,
            "investigation_id": report.investigation_id, "grouped_incidents": group_size}


def json_payload(trigger: Trigger, report: Report, group_size: int,
                 settings: NotifySettings) -> dict[str, Any]:
    """The generic form: facts as JSON values (a JSON encoder escapes; text kept one line)."""
    facts = {k: line(v) if isinstance(v, str) else v
             for k, v in _facts(trigger, report, group_size).items()}
    return {"schema": "goodput.watch.notification/v1", **facts,
            "review_url": review_link(settings, report.investigation_id)}


def slack_payload(trigger: Trigger, report: Report, group_size: int,
                  settings: NotifySettings) -> dict[str, Any]:
    rc = report.root_cause
    what = f"{trigger.source} {trigger.subject} {trigger.state}"
    if group_size > 1:
        what += f" (and {group_size - 1} more, one cause)"
    verdict = f"{rc.category}: {rc.summary}"
    headline = f"Goodput: {slack_text(what)} — {slack_text(verdict)}"
    body = (f"*{slack_text(what)}*\n*Verdict:* {slack_text(verdict)}\n"
            f"*Confidence:* {rc.confidence:.0%}")
    link = review_link(settings, report.investigation_id)
    if link:  # our own address, built from the investigation id (ours too)
        body += f"\n<{slack_text(link)}|Review the evidence and proposed actions>"
    return {"text": headline, "blocks": [{"type": "section",
                                          "text": {"type": "mrkdwn", "text": body}}]}


def send(payload: dict[str, Any], settings: NotifySettings) -> NotifyResult:
    attempts = 0

    def post() -> None:
        nonlocal attempts
        attempts += 1
        r = requests.post(settings.url, json=payload, timeout=settings.timeout_s)
        if r.status_code >= 300:
            raise NotifyFailed(f"HTTP {r.status_code}: {line(r.text[:200])}")

    retrying = Retrying(stop=stop_after_attempt(settings.attempts),
                        wait=backoff(multiplier=settings.backoff_s, max=60),
                        retry=retry_if_exception_type((NotifyFailed, requests.RequestException)))
    try:
        retrying(post)
    except RetryError as exc:
        last = exc.last_attempt.exception()
        return NotifyResult(ok=False, attempts=attempts, error=f"{type(last).__name__}: {last}")
    return NotifyResult(ok=True, attempts=attempts)


def notifier(settings: NotifySettings):  # noqa: ANN201 - a runner.Notify
    def notify(trigger: Trigger, report: Report, group_size: int) -> NotifyResult:
        build = slack_payload if settings.format == "slack" else json_payload
        return send(build(trigger, report, group_size, settings), settings)

    return notify
