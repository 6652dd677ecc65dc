"""The scheduler's own rows for a job (not its steps) and when it ended the job: read by the
cascade's dating (causal.py) and by the log's rhythm (progress_series.py) alike."""

from __future__ import annotations

from datetime import datetime

from goodput_agent.core.events import Event, EventKind

from .model import SCHEDULER_KINDS
from .observations import Observations, iso_time


def job_rows(events: list[Event]) -> list[Event]:
    """The scheduler's rows for the job itself (not its steps), whatever state they report."""
    return [e for e in events if e.kind in SCHEDULER_KINDS and e.kind != EventKind.step_state
            and "state" in e.detail and not e.detail.get("step")]


def scheduler_end(events: list[Event], obs: Observations) -> datetime | None:
    """When the scheduler says it ended the job, or None."""
    ends = [ts for e in job_rows(events) if (ts := iso_time(e.detail.get("end"), obs))]
    return max(ends) if ends else None


def ended_unfinished(events: list[Event], obs: Observations) -> datetime | None:
    """When the scheduler ended the job in any state but COMPLETED (cancelled, timed out,
    failed), or None."""
    rows = job_rows(events)
    if not rows:
        return None
    last = max(rows, key=lambda e: str(e.detail.get("end") or ""))
    if str(last.detail.get("state", "")).upper().startswith("COMPLETED"):
        return None
    return scheduler_end(events, obs)
