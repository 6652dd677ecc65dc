"""The report contract (`goodput investigate --json`): one JSON object, schema goodput.report/v1."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from goodput_agent.analysis.advice import Advice
from goodput_agent.analysis.slowdown.model import Breakdown
from goodput_agent.core import failure_classes

SCHEMA_ID = "goodput.report/v1"

Kind = Literal["failure", "slowdown", "latency"]

CATEGORIES: dict[str, tuple[str, ...]] = {
    "failure": failure_classes.names(),
    "slowdown": ("input_stall", "host_overhead", "straggler", "communication", "gpu_throttling"),
    "latency": ("queueing", "kv_cache_pressure", "prompt_length", "output_length"),
}
ALL_CATEGORIES = tuple(c for cs in CATEGORIES.values() for c in cs) + ("unknown",)
# the same names as a type, so the JSON schema lists them (failure classes in table order)
Category = Literal[ALL_CATEGORIES]  # type: ignore[valid-type]


class EvidenceItem(BaseModel):
    source: str  # the file (or query, or trace) the evidence came from
    locator: str  # file:line[-line], or query + time range, or trace + span
    excerpt: str
    id: int | None = None  # ledger evidence id
    time: str | None = None  # ISO 8601 UTC, when placed on the clock


class RootCause(BaseModel):
    category: Category
    summary: str
    node: str | None = None
    rank: int | None = None
    gpu: str | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[EvidenceItem] = Field(default_factory=list)


class Alternative(BaseModel):
    category: Category
    confidence: float = Field(ge=0.0, le=1.0)
    why_not: str
    node: str | None = None
    rank: int | None = None


class Retry(BaseModel):
    useful: bool | None
    why: str


class ProposedAction(BaseModel):
    id: int | None = None  # ledger action id
    tool: str
    args: dict[str, Any]
    mutating: bool
    status: Literal["proposed"] = "proposed"
    rationale: str


SECONDARY = "secondary"  # a timeline role: could start a failure, but not the culprit's


class TimelineEntry(BaseModel):
    time: str | None
    node: str | None
    rank: int | None
    kind: str
    # primary (the culprit's chain), secondary (a failure elsewhere or before, not the one
    # explained), symptom, context
    role: str
    summary: str
    locator: str


class ClockNote(BaseModel):
    assumptions: list[str]
    skew_tolerance_s: float


class Report(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    schema_: Literal["goodput.report/v1"] = Field(default=SCHEMA_ID, alias="schema")
    investigation_id: str | None = None
    kind: Kind
    question: str | None = None
    # the planner of the investigation: offline-playbook, claude or openai-compatible (a model
    # server that failed says so in `unknowns`; its question then ran offline, or the failure
    # analysis' verdict is the report)
    planner: str | None = None
    root_cause: RootCause
    alternatives: list[Alternative] = Field(default_factory=list)
    retry: Retry
    actions: list[ProposedAction] = Field(default_factory=list)
    # what a person should do that no tool executes, or a change Goodput could not make exact
    advice: list[Advice] = Field(default_factory=list)
    unread: list[str] = Field(default_factory=list)
    unread_reasons: dict[str, str] = Field(default_factory=dict)
    unknowns: list[str] = Field(default_factory=list)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    # how many later timeline entries the analysis left out of `timeline` (it keeps the first)
    timeline_left_out: int = 0
    clock: ClockNote | None = None
    # the slowdown question: per run and rank, the median step and its split on one clock
    breakdown: Breakdown | None = None
    # the latency question: windows compared and the numbers per window
    latency: dict[str, Any] | None = None
    # pictures written next to the report (SVG), absolute paths
    pictures: list[str] = Field(default_factory=list)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


def report_json_schema() -> dict[str, Any]:
    schema = Report.model_json_schema(by_alias=True)
    schema["$id"] = SCHEMA_ID
    return schema
