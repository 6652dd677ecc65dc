"""The watch's queue in the ledger, beside the investigations it starts (the watch's own models
wrap these rows: goodput_agent/watch/store.py).

- `watch_triggers`: one row per incident, `key` unique (exactly once). status queued ->
  running -> done | failed, or grouped (a storm member: linked to its group's representative).
  `attempts` counts runs started.
- `watch_runs`: every investigation a trigger started, linked as it starts.
- `watch_cursors`: where each source resumes; written in the same transaction as the triggers
  it produced, so a crash loses neither or both (and both are re-read: the key dedupes).
- `watch_health`: each source's last poll; `watch_groups`: storm groups;
  `watch_notifications`: each webhook sent.
Every method is one short session (files.py): the watch never keeps the file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from goodput_agent.ledger.core import Ledger, fetch

QUEUED, RUNNING, DONE, FAILED, GROUPED = "queued", "running", "done", "failed", "grouped"
STATES = (QUEUED, RUNNING, DONE, FAILED, GROUPED)


def _now() -> datetime:
    return datetime.now(UTC)


def one_line(text: object, limit: int = 300) -> str:
    return " ".join(str(text).split())[:limit]


class NewTrigger(BaseModel):
    key: str
    source: str
    question: str
    subject: str
    state: str
    occurred_at: datetime
    trigger_json: str


class OpenGroup(BaseModel):
    group_key: str
    signals: list[str]
    first_at: datetime


Assign = Callable[[list[NewTrigger], list[OpenGroup]], dict[str, str]]


class WatchQueue:
    def __init__(self, ledger: Ledger):
        self.ledger = ledger

    def enqueue(self, source: str, triggers: list[NewTrigger], cursor: str | None,
                window_s: float | None = None, assign: Assign | None = None) -> list[str]:
        """Store the triggers (a key already known is ignored) and the source's cursor in one
        transaction; the keys new to the queue come back. `assign(new, open_groups)` may name
        an open group (within `window_s` of them) for some: those start `grouped`."""
        with self.ledger.writing() as con:
            keys = [t.key for t in triggers]
            known = {r["key"] for r in fetch(con, "SELECT key FROM watch_triggers WHERE key IN "
                                                  "(SELECT unnest(?::VARCHAR[]))", [keys])} \
                if keys else set()
            new: dict[str, NewTrigger] = {}
            for t in sorted(triggers, key=lambda t: (t.occurred_at, t.key)):
                if t.key not in known:
                    new.setdefault(t.key, t)
            groups = assign(list(new.values()), _open_groups(con, list(new.values()), window_s)) \
                if assign and new else {}
            now = _now()
            for t in new.values():
                con.execute("INSERT INTO watch_triggers VALUES (?,?,?,?,?,?,?,?,?,0,?,NULL,NULL,?)",
                            [t.key, t.source, t.question, t.subject, t.state, t.occurred_at, now,
                             t.trigger_json, GROUPED if groups.get(t.key) else QUEUED,
                             groups.get(t.key), now])
            if cursor is not None:
                con.execute("INSERT OR REPLACE INTO watch_cursors VALUES (?, ?, ?)",
                            [source, cursor, now])
        return list(new)

    def cursor(self, source: str) -> str | None:
        rows = self.ledger.rows("SELECT cursor FROM watch_cursors WHERE source = ?", [source])
        return rows[0]["cursor"] if rows else None

    # --- the queue --------------------------------------------------------------------------

    def recover(self, max_attempts: int) -> int:
        """At start: a trigger left `running` by a process that died. Its last run concluded
        (killed between the conclusion and the status update): done with that investigation;
        one that has had its `max_attempts` (each start counts, so a trigger that kills the
        process every time is one): failed, parked with the reason; otherwise queued again."""
        with self.ledger.writing() as con:
            rows = fetch(con, "SELECT key, attempts FROM watch_triggers WHERE status = ?",
                         [RUNNING])
            for r in rows:
                concluded = fetch(con, "SELECT r.investigation_id FROM watch_runs r JOIN "
                                       "conclusions c ON c.investigation_id = r.investigation_id "
                                       "WHERE r.trigger_key = ? ORDER BY r.started_at DESC "
                                       "LIMIT 1", [r["key"]])
                if concluded:
                    _set(con, r["key"], DONE, investigation_id=concluded[0]["investigation_id"])
                elif r["attempts"] >= max_attempts:
                    _set(con, r["key"], FAILED, error=(
                        f"parked: the process died during each of its {r['attempts']} attempts "
                        f"(max_attempts {max_attempts}); investigate it by hand"))
                else:
                    _set(con, r["key"], QUEUED)
        return len(rows)

    def claim(self, key: str) -> tuple[str, int] | None:
        """Mark a queued trigger running (one more attempt): its JSON and attempts; None when
        it is not queued."""
        with self.ledger.writing() as con:
            row = con.execute(
                "UPDATE watch_triggers SET status = ?, attempts = attempts + 1, updated_at = ? "
                "WHERE key = ? AND status = ? RETURNING trigger_json, attempts",
                [RUNNING, _now(), key, QUEUED]).fetchone()
        return (row[0], int(row[1])) if row else None

    def queued(self, ready_before: datetime | None = None, since: datetime | None = None,
               limit: int | None = 1000) -> list[str]:
        """Queued triggers' JSON, oldest first (by when they happened, then key)."""
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
        return [r["trigger_json"] for r in self.ledger.rows(sql, params)]

    def link_run(self, key: str, attempt: int, investigation_id: str) -> None:
        with self.ledger.writing() as con:
            con.execute("INSERT INTO watch_runs VALUES (?, ?, ?, ?)",
                        [key, attempt, investigation_id, _now()])

    def finish(self, key: str, investigation_id: str) -> None:
        with self.ledger.writing() as con:
            _set(con, key, DONE, investigation_id=investigation_id)

    def fail(self, key: str, error: str, retry: bool) -> None:
        with self.ledger.writing() as con:
            _set(con, key, QUEUED if retry else FAILED, error=one_line(error))

    def group_size(self, key: str) -> int:
        """How many triggers the investigation of `key` answers (1, or its group's size)."""
        rows = self.ledger.rows("SELECT count(*) AS n FROM watch_triggers WHERE group_key = "
                                "(SELECT group_key FROM watch_triggers WHERE key = ?)", [key])
        return max(1, int(rows[0]["n"]) if rows else 1)

    def counts(self) -> dict[str, int]:
        rows = self.ledger.rows("SELECT status, count(*) AS n FROM watch_triggers "
                                "GROUP BY status")
        return {s: 0 for s in STATES} | {r["status"]: int(r["n"]) for r in rows}

    def make_group(self, group_key: str, representative: str, signals: list[str],
                   first_at: datetime, members: list[str]) -> None:
        """A storm: the representative stays queued, the other members become `grouped`."""
        with self.ledger.writing() as con:
            con.execute("INSERT OR IGNORE INTO watch_groups VALUES (?, ?, ?, ?, now())",
                        [group_key, representative, json.dumps(signals), first_at])
            for m in members:
                if m == representative:
                    con.execute("UPDATE watch_triggers SET group_key = ? WHERE key = ?",
                                [group_key, m])
                else:
                    con.execute("UPDATE watch_triggers SET group_key = ?, status = ? "
                                "WHERE key = ?", [group_key, GROUPED, m])

    # --- health and notifications -------------------------------------------------------------

    def record_poll(self, source: str, error: str | None, newest: datetime | None) -> None:
        now = _now()
        with self.ledger.writing() as con:
            old = con.execute("SELECT last_ok_at, consecutive_failures, newest_event_at FROM "
                              "watch_health WHERE source = ?", [source]).fetchone()
            last_ok, failures, seen = old if old else (None, 0, None)
            if newest is not None and (seen is None or newest > seen):
                seen = newest
            con.execute("INSERT OR REPLACE INTO watch_health VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [source, error is None, now, now if error is None else last_ok,
                         one_line(error) if error else None,
                         0 if error is None else failures + 1, seen])

    def record_start(self, run: WatchRun) -> None:
        """A watch started: its sources are the ones whose health counts from now on (a source
        an earlier run watched is forgotten, not kept "down" forever)."""
        with self.ledger.writing() as con:
            con.execute("DELETE FROM watch_health WHERE NOT list_contains(?::VARCHAR[], source)",
                        [run.sources])
            con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                        [WATCH_RUN_KEY, run.model_dump_json()])

    def record_stop(self) -> None:
        run = watch_run(self.ledger)
        if run is not None:
            run.stopped_at = _now()
            with self.ledger.writing() as con:
                con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                            [WATCH_RUN_KEY, run.model_dump_json()])

    def record_notification(self, key: str, investigation_id: str | None, ok: bool,
                            attempts: int, error: str | None) -> None:
        with self.ledger.writing() as con:
            con.execute("INSERT INTO watch_notifications VALUES (?, ?, ?, ?, ?, ?)",
                        [key, investigation_id, ok, attempts,
                         one_line(error) if error else None, _now()])


def _set(con: Any, key: str, status: str, investigation_id: str | None = None,
         error: str | None = None) -> None:
    con.execute("UPDATE watch_triggers SET status = ?, investigation_id = COALESCE(?, "
                "investigation_id), error = COALESCE(?, error), updated_at = ? WHERE key = ?",
                [status, investigation_id, error, _now(), key])


def _open_groups(con: Any, triggers: list[NewTrigger], window_s: float | None
                 ) -> list[OpenGroup]:
    from datetime import timedelta

    if not triggers or window_s is None:
        return []
    first = min(t.occurred_at for t in triggers)
    last = max(t.occurred_at for t in triggers)
    rows = fetch(con, "SELECT group_key, signals, first_at FROM watch_groups WHERE first_at <= ? "
                      "AND first_at >= ? ORDER BY first_at, group_key",
                 [last, first - timedelta(seconds=window_s)])
    return [OpenGroup(group_key=r["group_key"], signals=json.loads(r["signals"] or "[]"),
                      first_at=r["first_at"]) for r in rows]


# --- what `watch status` and the /watch page show ---------------------------------------------

WATCH_RUN_KEY = "watch.run"


class WatchRun(BaseModel):
    """The latest watch process on this ledger: where it runs, what it watches, whether it said
    it stopped (a killed one never does)."""

    pid: int
    host: str
    started_at: datetime
    interval_s: float
    once: bool = False
    sources: list[str] = Field(default_factory=list)
    stopped_at: datetime | None = None


def watch_run(ledger: Ledger) -> WatchRun | None:
    rows = ledger.rows("SELECT value FROM meta WHERE key = ?", [WATCH_RUN_KEY])
    return WatchRun.model_validate_json(rows[0]["value"]) if rows else None


def has_watch(ledger: Ledger) -> bool:
    return bool(ledger.rows("SELECT 1 FROM watch_triggers LIMIT 1") or
                ledger.rows("SELECT 1 FROM watch_health LIMIT 1"))


def health_rows(ledger: Ledger) -> list[dict[str, Any]]:
    rows = ledger.rows("SELECT * FROM watch_health ORDER BY source")
    now = _now()
    for r in rows:
        seen = r["newest_event_at"]
        r["lag_s"] = (now - seen).total_seconds() if seen else None
    return rows


def trigger_rows(ledger: Ledger, limit: int = 200) -> list[dict[str, Any]]:
    """The most recent triggers with their run history."""
    with ledger.reading() as con:
        rows = fetch(con, "SELECT key, source, question, subject, state, occurred_at, "
                          "detected_at, status, attempts, group_key, investigation_id, error "
                          "FROM watch_triggers ORDER BY occurred_at DESC, key LIMIT ?", [limit])
        for r in rows:
            r["runs"] = fetch(con, "SELECT attempt, investigation_id, started_at FROM "
                                   "watch_runs WHERE trigger_key = ? ORDER BY started_at",
                              [r["key"]])
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
