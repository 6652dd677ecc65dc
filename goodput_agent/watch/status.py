"""What `goodput watch status` and the web's watch page show: each source's health and lag,
the queue by state, the storm groups and the latest incidents. Read from a read-only ledger
(a snapshot while the watch holds the file)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from goodput_agent.ledger import Ledger
from goodput_agent.watch.store import STATES, group_rows, trigger_rows


class SourceHealth(BaseModel):
    source: str
    ok: bool
    last_poll_at: datetime | None = None
    last_ok_at: datetime | None = None
    last_error: str | None = None
    consecutive_failures: int = 0
    newest_event_at: datetime | None = None
    lag_s: float | None = None


class WatchStatus(BaseModel):
    sources: list[SourceHealth]
    queue: dict[str, int]
    groups: list[dict[str, Any]]
    incidents: list[dict[str, Any]]

    @property
    def healthy(self) -> bool:
        return all(s.ok for s in self.sources)


def has_watch(ledger: Ledger) -> bool:
    row = ledger.con.execute("SELECT count(*) FROM information_schema.tables "
                             "WHERE table_name = 'watch_triggers'").fetchone()
    return bool(row and row[0])


def status_from(ledger: Ledger, limit: int = 50) -> WatchStatus | None:
    if not has_watch(ledger):
        return None
    from goodput_agent.watch.store import WatchStore

    health = WatchStore.health_rows(ledger)
    counts = {s: 0 for s in STATES} | {r["status"]: int(r["n"]) for r in ledger.rows(
        "SELECT status, count(*) AS n FROM watch_triggers GROUP BY status")}
    return WatchStatus(sources=[SourceHealth(**h) for h in health], queue=counts,
                       groups=group_rows(ledger), incidents=trigger_rows(ledger, limit))


def read_status(path: Path) -> WatchStatus | None:
    from goodput_agent.ledger_reader import read_ledger

    with read_ledger(path) as (ledger, _):
        return status_from(ledger)


def age(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def when(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if at else "never"
