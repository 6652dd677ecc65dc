"""What a planner says to the loop, and what the loop tells it back."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, Field

from goodput_agent.analysis.advice import Advice
from goodput_agent.analysis.slowdown.model import Breakdown
from goodput_agent.core.events import Event
from goodput_agent.report import Alternative, ClockNote, Retry, TimelineEntry

# a model's tool-call arguments that were not a JSON object, kept as text under this key
UNPARSED_ARGS = "_unparsed_arguments"


class ToolCall(BaseModel):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class StepResult(BaseModel):
    call: ToolCall
    output: Any = None  # the tool's output model instance
    error: str | None = None
    tool_call_id: int
    duration_ms: float


class ClaimDraft(BaseModel):
    statement: str
    category: str
    confidence: float
    status: str  # hypothesis | supported | refuted
    node: str | None = None
    rank: int | None = None
    gpu: str | None = None
    supporting: list[Event] = Field(default_factory=list)
    contradicting: list[Event] = Field(default_factory=list)


class ProposalDraft(BaseModel):
    tool: str  # a mutating tool (planner/proposals.py turns anything else into advice)
    args: dict[str, Any]
    mutating: bool = True
    rationale: str


class Conclusion(BaseModel):
    """A planner's finished answer; the loop records it and renders the report from it."""

    kind: str
    claims: list[ClaimDraft]  # the first claim is the verdict
    alternatives: list[Alternative] = Field(default_factory=list)
    retry: Retry
    proposals: list[ProposalDraft] = Field(default_factory=list)
    advice: list[Advice] = Field(default_factory=list)  # for a person: no tool, no approval
    unknowns: list[str] = Field(default_factory=list)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    timeline_left_out: int = 0
    clock: ClockNote | None = None
    breakdown: Breakdown | None = None
    latency: dict[str, Any] | None = None


class Planner(Protocol):
    name: str

    def next_step(self, history: list[StepResult]) -> ToolCall | None:
        """The next tool to call, or None when the evidence is gathered."""
        ...

    def conclude(self, history: list[StepResult]) -> Conclusion: ...
