"""What a verification returns: a verdict on comparable measurements, or a plain statement
that the conditions were not comparable."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Verdict = Literal["recovered", "partly", "not_recovered", "regressed_elsewhere", "incomparable"]


class PhaseChange(BaseModel):
    phase: str
    healthy: float | None = None  # the good run / baseline window, when there is one
    before: float | None = None  # the incident
    after: float | None = None
    unit: str = "ms"


class VerifyResult(BaseModel):
    kind: Literal["failure", "slowdown", "latency"]
    verdict: Verdict
    summary: str
    comparable: bool
    conditions: list[str] = Field(default_factory=list)  # what was checked to be comparable
    numbers: dict[str, Any] = Field(default_factory=dict)  # the deciding numbers
    phases: list[PhaseChange] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)  # files read, with what they showed
    notes: list[str] = Field(default_factory=list)
