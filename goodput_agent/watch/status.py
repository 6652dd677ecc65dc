"""What `goodput watch status` and the web's watch page show: each source's health and lag,
the queue by state, the storm groups and the latest incidents. Read in one read session of the
ledger, while the watch runs or after it stopped."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from goodput_agent.ledger import Ledger
from goodput_agent.ledger.watch import (
    WatchQueue,
    group_rows,
    has_watch,
    health_rows,
    trigger_rows,
)


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


def status_from(ledger: Ledger, limit: int = 50) -> WatchStatus | None:
    if not has_watch(ledger):
        return None
    health = health_rows(ledger)
    counts = WatchQueue(ledger).counts()
    return WatchStatus(sources=[SourceHealth(**h) for h in health], queue=counts,
                       groups=group_rows(ledger), incidents=trigger_rows(ledger, limit))


def read_status(path: Path) -> WatchStatus | None:
    from goodput_agent.ledger.reader import read_ledger

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
