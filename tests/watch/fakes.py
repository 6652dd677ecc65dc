"""Test doubles that are real implementations of the watch contract: a source that replays a
list of triggers through the cursor protocol, and an investigation step that writes a real
(small) investigation into the ledger."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from goodput_agent.ledger import Ledger
from goodput_agent.report import Report, Retry, RootCause
from goodput_agent.watch.trigger import Poll, SourceDown, Trigger

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def job_trigger(n: int, nodes: list[str] | None = None, at: datetime | None = None,
                switch: str | None = None, state: str = "FAILED") -> Trigger:
    return Trigger(source="slurm", key=f"slurm:test:{n}:0", question="failure",
                   subject=str(n), state=state, occurred_at=at or T0 + timedelta(seconds=n),
                   nodes=nodes if nodes is not None else [f"node-{n}"],
                   collect={"slurm_job": str(n)},
                   labels={"switches": switch} if switch else {})


class ListSource:
    """Hands out `triggers` in pages of `page`; the cursor is how many were handed out.
    `down` set: every poll raises SourceDown."""

    def __init__(self, triggers: list[Trigger], page: int = 1000, name: str = "slurm"):
        self.name = name
        self.triggers = triggers
        self.page = page
        self.down = False
        self.polls = 0

    def poll(self, cursor: str | None) -> Poll:
        self.polls += 1
        if self.down:
            raise SourceDown("controller not answering")
        start = int(cursor or 0)
        chunk = self.triggers[start:start + self.page]
        return Poll(triggers=chunk, cursor=str(start + len(chunk)))


class RecordingInvestigation:
    """Writes an investigation (started, concluded) per trigger; counts calls per key."""

    def __init__(self, delay_s: float = 0.0, fail_keys: set[str] | None = None):
        self.delay_s = delay_s
        self.fail_keys = fail_keys or set()
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, trigger: Trigger, ledger: Ledger) -> Report:
        with self.lock:
            self.calls[trigger.key] = self.calls.get(trigger.key, 0) + 1
        inv = ledger.start_investigation(f"why did {trigger.subject} fail?", "failure",
                                         trigger.subject, "test", "0")
        time.sleep(self.delay_s)
        if trigger.key in self.fail_keys:
            raise RuntimeError(f"collector broke on {trigger.key}")
        report = Report(investigation_id=inv, kind="failure",
                        root_cause=RootCause(category="application_error",
                                             summary=f"job {trigger.subject} exited 1",
                                             confidence=0.6),
                        retry=Retry(useful=False, why="same input, same failure"))
        ledger.record_conclusion(inv, "application_error", 0.6, 0, report.to_json())
        return report
