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
    WatchRun,
    group_rows,
    has_watch,
    health_rows,
    trigger_rows,
    watch_run,
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
    watch: WatchRun | None = None  # the latest watch process (None: a ledger from before)
    running: bool | None = None  # None: cannot tell (no record)
    state: str = "unknown"  # in words: running, stopped at ..., killed ...

    @property
    def healthy(self) -> bool:
        return all(s.ok for s in self.sources)


def status_from(ledger: Ledger, limit: int = 50) -> WatchStatus | None:
    if not has_watch(ledger):
        return None
    health = [SourceHealth(**h) for h in health_rows(ledger)]
    counts = WatchQueue(ledger).counts()
    run = watch_run(ledger)
    running, state = liveness(run, health)
    return WatchStatus(sources=health, queue=counts, groups=group_rows(ledger),
                       incidents=trigger_rows(ledger, limit), watch=run, running=running,
                       state=state)


def liveness(run: WatchRun | None, health: list[SourceHealth],
             now: datetime | None = None) -> tuple[bool | None, str]:
    """Whether the watch runs, and how that is known: it said it stopped; its process on this
    host is gone (killed: it could not say); on another host, it polled lately."""
    import os
    import socket

    if run is None:
        return None, "unknown (no watch process recorded: a watch from before this version)"
    if run.stopped_at is not None:
        how = "ran once, finished" if run.once else "stopped"
        return False, f"{how} at {when(run.stopped_at)}"
    if run.host == socket.gethostname():
        try:
            os.kill(run.pid, 0)
        except ProcessLookupError:
            return False, (f"not running: process {run.pid} is gone without saying it stopped "
                           f"(killed?), started {when(run.started_at)}")
        except PermissionError:
            pass
        return True, f"running (process {run.pid}, since {when(run.started_at)})"
    last = max((h.last_poll_at for h in health if h.last_poll_at), default=run.started_at)
    quiet = ((now or datetime.now(UTC)) - last).total_seconds()
    if quiet > 3 * run.interval_s + 60:
        return False, f"not heard from on {run.host} since {when(last)}"
    return True, f"running on {run.host} (process {run.pid}), last poll {age(quiet)} ago"


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
