"""The watch's durable state: its queue, cursors and health in the ledger (the rows and their
transactions are goodput_agent/ledger/watch.py), as the watch's own models (Trigger)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from goodput_agent.ledger import Ledger
from goodput_agent.ledger.watch import (
    DONE,
    FAILED,
    GROUPED,
    QUEUED,
    RUNNING,
    STATES,
    NewTrigger,
    OpenGroup,
    WatchQueue,
    group_rows,
    health_rows,
    one_line,
    trigger_rows,
)
from goodput_agent.watch.trigger import Trigger


class QueuedTrigger(BaseModel):
    trigger: Trigger
    attempts: int


def _row(t: Trigger) -> NewTrigger:
    return NewTrigger(key=t.key, source=t.source, question=t.question, subject=t.subject,
                      state=t.state, occurred_at=t.occurred_at, trigger_json=t.model_dump_json())


class WatchStore:
    """The queue over the watch's ledger; every method is one short ledger session."""

    def __init__(self, ledger: Ledger):
        self.ledger = ledger
        self.queue = WatchQueue(ledger)

    def enqueue(self, source: str, triggers: list[Trigger], cursor: str | None,
                assign_group: Any = None) -> list[Trigger]:
        """Store the triggers (a key already known is ignored) and the source's cursor in one
        transaction; the triggers new to the store come back. `assign_group` (grouping's
        open_group_for) may name an open group for some (they then start `grouped`)."""
        by_key = {t.key: t for t in triggers}
        assign, window = None, None
        if assign_group is not None:
            window = assign_group.window_s

            def assign(new: list[NewTrigger], groups: list[OpenGroup]) -> dict[str, str]:
                return assign_group([by_key[n.key] for n in new], groups)
        keys = self.queue.enqueue(source, [_row(t) for t in triggers], cursor, window, assign)
        return [by_key[k] for k in keys]

    def cursor(self, source: str) -> str | None:
        return self.queue.cursor(source)

    def recover(self, max_attempts: int) -> int:
        return self.queue.recover(max_attempts)

    def claim(self, key: str) -> QueuedTrigger | None:
        found = self.queue.claim(key)
        if found is None:
            return None
        return QueuedTrigger(trigger=Trigger.model_validate_json(found[0]), attempts=found[1])

    def queued(self, ready_before: datetime | None = None, since: datetime | None = None,
               limit: int | None = 1000) -> list[Trigger]:
        return [Trigger.model_validate_json(j)
                for j in self.queue.queued(ready_before, since, limit)]

    def link_run(self, key: str, attempt: int, investigation_id: str) -> None:
        self.queue.link_run(key, attempt, investigation_id)

    def finish(self, key: str, investigation_id: str) -> None:
        self.queue.finish(key, investigation_id)

    def fail(self, key: str, error: str, retry: bool) -> None:
        self.queue.fail(key, error, retry)

    def group_size(self, key: str) -> int:
        return self.queue.group_size(key)

    def counts(self) -> dict[str, int]:
        return self.queue.counts()

    def record_poll(self, source: str, error: str | None, newest: datetime | None) -> None:
        self.queue.record_poll(source, error, newest)

    def health(self) -> list[dict[str, Any]]:
        return health_rows(self.ledger)

    @staticmethod
    def health_rows(ledger: Ledger) -> list[dict[str, Any]]:
        return health_rows(ledger)

    def record_notification(self, key: str, investigation_id: str | None, ok: bool,
                            attempts: int, error: str | None) -> None:
        self.queue.record_notification(key, investigation_id, ok, attempts, error)


__all__ = ["DONE", "FAILED", "GROUPED", "QUEUED", "RUNNING", "STATES", "QueuedTrigger",
           "WatchStore", "group_rows", "one_line", "trigger_rows"]
