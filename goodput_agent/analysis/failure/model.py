"""The failure analysis's records: candidates for the first failure, the verdict and the
alternatives it explains away."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from goodput_agent.analysis.record_levels import CONTESTED
from goodput_agent.core.events import Event, EventKind
from goodput_agent.core.failure_classes import FAILURE_CLASSES, job_level, names_where

# the classes that compete as a first failure, their weights (goodput_agent.core.failure_classes)
FAILURE_CATEGORIES = tuple(c.name for c in FAILURE_CLASSES if c.strength is not None)
STRENGTH = {c.name: c.strength for c in FAILURE_CLASSES if c.strength is not None}
BASE_CONFIDENCE = {c.name: c.base_confidence for c in FAILURE_CLASSES}
ON_NODE = names_where(on_node=True)
CONTESTED_CONFIDENCE = CONTESTED  # the scheduler's state or the cascade's timing speaks against it
GENERIC_STATE_CONFIDENCE = 0.35  # an exit code alone is a weak verdict
SCHEDULER_KINDS = (EventKind.job_state, EventKind.step_state, EventKind.preempted,
                   EventKind.time_limit, EventKind.node_fail)
JOB_LEVEL = job_level()
SYMPTOM_KINDS = (EventKind.nccl_watchdog_timeout, EventKind.connection_reset,
                 EventKind.nccl_error, EventKind.signal, EventKind.elastic_failure,
                 EventKind.ib_error)


class Alternative(BaseModel):
    category: str
    confidence: float
    why_not: str
    node: str | None = None
    rank: int | None = None
    evidence: list[Event] = Field(default_factory=list)


class FailureVerdict(BaseModel):
    category: str
    summary: str
    node: str | None = None
    rank: int | None = None
    gpu: str | None = None
    confidence: float
    evidence: list[Event] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)
    unknowns: list[str] = Field(default_factory=list)
    timeline: list[Event] = Field(default_factory=list)
    timeline_left_out: int = 0  # entries past the first ones kept in `timeline`
    clock_notes: list[str] = Field(default_factory=list)
    primary: Event | None = None


class Candidate(BaseModel):
    event: Event
    at: datetime | None  # effective time (a lost node's last sign of life, not the reason time)
    strength: float
    note: str | None = None

    @property
    def category(self) -> str:
        return self.event.category or "unknown"


def weight(e: Event) -> float:
    """How decisive an event is by its own account (parsers set detail["weight"])."""
    w = e.detail.get("weight", e.detail.get("confidence", 1.0))
    if isinstance(w, str):
        return {"low": 0.4, "medium": 0.7, "high": 1.0}.get(w.lower(), 1.0)
    try:
        return max(0.0, min(1.0, float(w)))
    except (TypeError, ValueError):
        return 1.0
