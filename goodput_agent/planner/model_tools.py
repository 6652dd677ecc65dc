"""The tools Claude is offered: the registry's read-only tools, plus the planner's own
(read_evidence, record_claim, propose_action, finish_investigation), each defined by its pydantic
input model with its description from prompts/tools/<name>.md. No mutating tool is offered."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from goodput_agent.report import Alternative, Category, Kind, Retry
from goodput_agent.toolkit import registry, tool_description


class ReadEvidenceInput(BaseModel):
    id: int = Field(description="evidence id, e.g. 42 for [E42]")
    start: int = Field(default=1, ge=1, description="first line, 1-based")
    count: int = Field(default=60, ge=1, le=400, description="how many lines")


class RecordClaimInput(BaseModel):
    statement: str = Field(min_length=1, max_length=2000)
    category: Category
    confidence: float = Field(ge=0.0, le=1.0)
    status: Literal["hypothesis", "supported", "refuted"]
    supporting: list[int] = Field(min_length=1, description="evidence ids")
    contradicting: list[int] = Field(default_factory=list, description="evidence ids")
    node: str | None = None
    rank: int | None = None
    gpu: str | None = None


class ProposeActionInput(BaseModel):
    tool: str = Field(description="a mutating tool's name, e.g. slurm_drain_node")
    args: dict[str, Any]
    rationale: str = Field(min_length=1, max_length=2000)
    claim_ids: list[int] = Field(min_length=1)


class FinishInput(BaseModel):
    kind: Kind
    category: Category
    summary: str = Field(min_length=1, max_length=2000)
    confidence: float = Field(ge=0.0, le=1.0)
    verdict_claim_id: int | None = None
    node: str | None = None
    rank: int | None = None
    gpu: str | None = None
    alternatives: list[Alternative] = Field(default_factory=list)
    retry: Retry
    unknowns: list[str] = Field(default_factory=list)


PLANNER_TOOLS: dict[str, type[BaseModel]] = {
    "read_evidence": ReadEvidenceInput,
    "record_claim": RecordClaimInput,
    "propose_action": ProposeActionInput,
    "finish_investigation": FinishInput,
}


def _definition(name: str, model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"name": name, "description": description or name,
            "input_schema": model.model_json_schema()}


def tool_definitions(finish: bool = True) -> list[dict[str, Any]]:
    """Read-only registry tools first, then the planner's; the last one carries cache_control
    so the whole tool list is cached with the system prompt."""
    defs = [_definition(t.name, t.input_model, t.description)
            for t in sorted(registry().values(), key=lambda t: t.name) if t.read_only]
    defs += [_definition(n, m, tool_description(n)) for n, m in PLANNER_TOOLS.items()
             if finish or n != "finish_investigation"]
    defs[-1] = {**defs[-1], "cache_control": {"type": "ephemeral"}}
    return defs
