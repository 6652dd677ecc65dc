"""The watch's durable state, in the ledger beside the investigations it starts.

Tables (created here, when the watch opens the ledger; the ledger's own schema is untouched):
- `watch_triggers`: one row per incident, `key` unique (exactly once). status
  queued -> running -> done | failed, or grouped (a storm member: linked to its group's
  representative, not investigated on its own). `attempts` counts runs started.
- `watch_runs`: every investigation a trigger started, linked as it starts. A run killed
  mid-way keeps its row; the ledger shows that investigation `interrupted`, the re-run is linked
  beside it.
- `watch_cursors`: where each source resumes; written in the same transaction as the triggers
  it produced, so a crash loses neither or both (and both are re-read: the key dedupes).
- `watch_health`: each source's last poll: ok, last_ok_at, last_error, consecutive failures,
  newest event seen (lag = now - that).
- `watch_groups`: storm groups (see grouping.py); `watch_notifications`: each webhook sent.

Queue rows are updated in place (they are the queue, not evidence); the investigations they
start are ordinary ledger rows, appended as always.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from goodput_agent.ledger import Ledger
from goodput_agent.watch.trigger import Trigger

QUEUED, RUNNING, DONE, FAILED, GROUPED = "queued", "running", "done", "failed", "grouped"
STATES = (QUEUED, RUNNING, DONE, FAILED, GROUPED)

WATCH_DDL = """
CREATE TABLE IF NOT EXISTS watch_triggers (
    key VARCHAR PRIMARY KEY, source VARCHAR, question VARCHAR, subject VARCHAR,
    state VARCHAR, occurred_at TIMESTAMPTZ, detected_at TIMESTAMPTZ, trigger_json VARCHAR,
    status VARCHAR, attempts INTEGER, group_key VARCHAR, investigation_id VARCHAR,
    error VARCHAR, updated_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS watch_runs (
    trigger_key VARCHAR, attempt INTEGER, investigation_id VARCHAR, started_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS watch_cursors (
    source VARCHAR PRIMARY KEY, cursor VARCHAR, updated_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS watch_health (
    source VARCHAR PRIMARY KEY, ok BOOLEAN, last_poll_at TIMESTAMPTZ, last_ok_at TIMESTAMPTZ,
    last_error VARCHAR, consecutive_failures INTEGER, newest_event_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS watch_groups (
    group_key VARCHAR PRIMARY KEY, representative_key VARCHAR, signals VARCHAR,
    first_at TIMESTAMPTZ, created_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS watch_notifications (
    trigger_key VARCHAR, investigation_id VARCHAR, ok BOOLEAN, attempts INTEGER,
    error VARCHAR, sent_at TIMESTAMPTZ);
"""


def _now() -> datetime:
    return datetime.now(UTC)


def one_line(text: object, limit: int = 300) -> str:
    return " ".join(str(text).split())[:limit]


class QueuedTrigger(BaseModel):
    trigger: Trigger
    attempts: int


class WatchStore:
    """The queue and cursors over one ledger connection. Every method takes the store's lock:
    DuckDB's connection is not for concurrent use, and the workers write through cursors of
    their own (`worker_ledger`)."""

    def __init__(self, ledger: Ledger):
        self.ledger = ledger
        self.con = ledger.con
        self.lock = threading.RLock()
        self.con.execute(WATCH_DDL)

    # --- enqueue -----------------------------------------------------------------------

    def enqueue(self, source: str, triggers: list[Trigger], cursor: str | None,
                assign_group: Any = None) -> list[Trigger]:
        """Store the triggers (a key already known is ignored) and the source's cursor in one
        transaction; the triggers new to the store come back. `assign_group(con, triggers)`
        may name an open group for some of them ({key: group}; they then start `grouped`)."""
        with self.lock:
            self.con.execute("BEGIN TRANSACTION")
            try:
                new = self._insert_new(triggers, assign_group)
                if cursor is not None:
                    self.con.execute(
                        "INSERT OR REPLACE INTO watch_cursors VALUES (?, ?, ?)",
                        [source, cursor, _now()])
                self.con.execute("COMMIT")
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
        return new

    def _insert_new(self, triggers: list[Trigger], assign_group: Any) -> list[Trigger]:
        keys = [t.key for t in triggers]
        known = {r[0] for r in self.con.execute(
            "SELECT key FROM watch_triggers WHERE key IN (SELECT unnest(?::VARCHAR[]))",
            [keys]).fetchall()} if keys else set()
        new: dict[str, Trigger] = {}
        for t in sorted(triggers, key=lambda t: (t.occurred_at, t.key)):
            if t.key not in known:
                new.setdefault(t.key, t)
        groups = assign_group(self.con, list(new.values())) if assign_group and new else {}
        now = _now()
        if new:
            self.con.executemany(
                "INSERT INTO watch_triggers VALUES (?,?,?,?,?,?,?,?,?,0,?,NULL,NULL,?)",
                [[t.key, t.source, t.question, t.subject, t.state, t.occurred_at, now,
                  t.model_dump_json(), GROUPED if groups.get(t.key) else QUEUED,
                  groups.get(t.key), now] for t in new.values()])
        return list(new.values())

    def cursor(self, source: str) -> str | None:
        with self.lock:
            row = self.con.execute("SELECT cursor FROM watch_cursors WHERE source = ?",
                                   [source]).fetchone()
        return row[0] if row else None

    # --- the queue ---------------------------------------------------------------------

    def recover(self, max_attempts: int) -> int:
        """At start: a trigger left `running` by a process that died. Its last run concluded
        (killed between the conclusion and the status update): done with that investigation;
        one that has had its `max_attempts` (each start counts, so a trigger that kills the
        process every time is one): failed, parked with the reason; otherwise queued again
        (the half-written investigation stays `interrupted`)."""
        with self.lock:
            rows = self.con.execute(
                "SELECT key, attempts FROM watch_triggers WHERE status = ?",
                [RUNNING]).fetchall()
            for key, attempts in rows:
                concluded = self.con.execute(
                    "SELECT r.investigation_id FROM watch_runs r JOIN conclusions c "
                    "ON c.investigation_id = r.investigation_id WHERE r.trigger_key = ? "
                    "ORDER BY r.started_at DESC LIMIT 1", [key]).fetchone()
                if concluded:
                    self._set(key, DONE, investigation_id=concluded[0])
                elif attempts >= max_attempts:
                    self._set(key, FAILED, error=f"parked: the process died during each of its "
                                                 f"{attempts} attempts (max_attempts "
                                                 f"{max_attempts}); investigate it by hand")
                else:
                    self._set(key, QUEUED)
        return len(rows)

    def claim(self, key: str) -> QueuedTrigger | None:
        """Mark a queued trigger running (one more attempt); None when it is not queued."""
        with self.lock:
            row = self.con.execute(
                "UPDATE watch_triggers SET status = ?, attempts = attempts + 1, updated_at = ? "
                "WHERE key = ? AND status = ? RETURNING trigger_json, attempts",
                [RUNNING, _now(), key, QUEUED]).fetchone()
        if row is None:
            return None
        return QueuedTrigger(trigger=Trigger.model_validate_json(row[0]), attempts=row[1])

    def queued(self, ready_before: datetime | None = None, since: datetime | None = None,
               limit: int | None = 1000) -> list[Trigger]:
        """Queued triggers, oldest first (by when they happened, then key)."""
        sql = "SELECT trigger_json FROM watch_triggers WHERE status = ?"
        params: list[Any] = [QUEUED]
        if since is not None:
            sql += " AND occurred_at >= ?"
            params.append(since)
        if ready_before is not None:
            sql += " AND occurred_at <= ?"
            params.append(ready_before)
        sql += " ORDER BY occurred_at, key"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self.lock:
            rows = self.con.execute(sql, params).fetchall()
        return [Trigger.model_validate_json(r[0]) for r in rows]

    def link_run(self, key: str, attempt: int, investigation_id: str) -> None:
        with self.lock:
            self.con.execute("INSERT INTO watch_runs VALUES (?, ?, ?, ?)",
                             [key, attempt, investigation_id, _now()])

    def finish(self, key: str, investigation_id: str) -> None:
        with self.lock:
            self._set(key, DONE, investigation_id=investigation_id)

    def fail(self, key: str, error: str, retry: bool) -> None:
        with self.lock:
            self._set(key, QUEUED if retry else FAILED, error=one_line(error))

    def _set(self, key: str, status: str, investigation_id: str | None = None,
             error: str | None = None) -> None:
        self.con.execute(
            "UPDATE watch_triggers SET status = ?, investigation_id = COALESCE(?, "
            "investigation_id), error = COALESCE(?, error), updated_at = ? WHERE key = ?",
            [status, investigation_id, error, _now(), key])

    def group_size(self, key: str) -> int:
        """How many triggers the investigation of `key` answers (1, or its group's size)."""
        with self.lock:
            row = self.con.execute(
                "SELECT count(*) FROM watch_triggers WHERE group_key = "
                "(SELECT group_key FROM watch_triggers WHERE key = ?)", [key]).fetchone()
        return max(1, int(row[0]) if row else 1)

    def counts(self) -> dict[str, int]:
        with self.lock:
            rows = self.con.execute(
                "SELECT status, count(*) FROM watch_triggers GROUP BY status").fetchall()
        return {s: 0 for s in STATES} | {r[0]: int(r[1]) for r in rows}

    # --- health ------------------------------------------------------------------------

    def record_poll(self, source: str, error: str | None, newest: datetime | None) -> None:
        now = _now()
        with self.lock:
            old = self.con.execute(
                "SELECT last_ok_at, consecutive_failures, newest_event_at FROM watch_health "
                "WHERE source = ?", [source]).fetchone()
            last_ok, failures, seen = old if old else (None, 0, None)
            if newest is not None and (seen is None or newest > seen):
                seen = newest
            self.con.execute(
                "INSERT OR REPLACE INTO watch_health VALUES (?, ?, ?, ?, ?, ?, ?)",
                [source, error is None, now, now if error is None else last_ok,
                 one_line(error) if error else None, 0 if error is None else failures + 1,
                 seen])

    def health(self) -> list[dict[str, Any]]:
        with self.lock:
            return self.health_rows(self.ledger)

    @staticmethod
    def health_rows(ledger: Ledger) -> list[dict[str, Any]]:
        rows = ledger.rows("SELECT * FROM watch_health ORDER BY source")
        now = _now()
        for r in rows:
            seen = r["newest_event_at"]
            r["lag_s"] = (now - seen).total_seconds() if seen else None
        return rows

    # --- notifications -----------------------------------------------------------------

    def record_notification(self, key: str, investigation_id: str | None, ok: bool,
                            attempts: int, error: str | None) -> None:
        with self.lock:
            self.con.execute("INSERT INTO watch_notifications VALUES (?, ?, ?, ?, ?, ?)",
                             [key, investigation_id, ok, attempts,
                              one_line(error) if error else None, _now()])


def trigger_rows(ledger: Ledger, limit: int = 200) -> list[dict[str, Any]]:
    """The most recent triggers with their run history, for status and the web page."""
    rows = ledger.rows(
        "SELECT key, source, question, subject, state, occurred_at, detected_at, status, "
        "attempts, group_key, investigation_id, error FROM watch_triggers "
        "ORDER BY occurred_at DESC, key LIMIT ?", [limit])
    for r in rows:
        r["runs"] = ledger.rows("SELECT attempt, investigation_id, started_at FROM watch_runs "
                                "WHERE trigger_key = ? ORDER BY started_at", [r["key"]])
    return rows


def group_rows(ledger: Ledger, limit: int = 100) -> list[dict[str, Any]]:
    rows = ledger.rows(
        "SELECT g.group_key, g.representative_key, g.signals, g.first_at, "
        "count(t.key) AS members, max(r.investigation_id) AS investigation_id "
        "FROM watch_groups g LEFT JOIN watch_triggers t ON t.group_key = g.group_key "
        "LEFT JOIN watch_triggers r ON r.key = g.representative_key "
        "GROUP BY ALL ORDER BY g.first_at DESC LIMIT ?", [limit])
    for r in rows:
        r["signals"] = json.loads(r["signals"] or "[]")
    return rows
