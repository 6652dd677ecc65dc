"""The contract of `goodput fleet --json` (schema goodput.fleet/v1)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

FLEET_SCHEMA = "goodput.fleet/v1"


class CauseLoss(BaseModel):
    """Failed jobs by the cause their investigation concluded. gpu_hours: the GPU-hours of
    those allocations (None without sacct) — an upper bound of the progress lost, since a
    checkpoint saves part of it (`goodput account` splits that finer)."""

    category: str
    failures: int
    jobs: int
    gpu_hours: float | None


class NodeFinding(BaseModel):
    node: str
    failures: int  # investigations (of distinct bundles) whose verdict names the node
    jobs: int  # distinct jobs among them
    categories: list[str]
    xids: dict[str, int]  # Xid code -> failures whose supporting evidence shows it
    investigations: list[str]
    evidence_ids: list[int]
    exposure_gpu_h: float | None = None
    rate_per_1k_gpu_h: float | None = None
    fleet_rate_per_1k_gpu_h: float | None = None  # the rest of the fleet (node left out)
    expected: float | None = None
    p_value: float | None = None
    adjusted_p: float | None = None
    named: bool = False
    why_not: str | None = None


class GroupCause(BaseModel):
    """A cause recurring within a partition or account: at least two different jobs."""

    dimension: str  # partition | account
    value: str
    category: str
    failures: int
    jobs: int
    gpu_hours: float | None


class OffenderTest(BaseModel):
    method: str
    alpha: float
    correction: str
    min_failures: int
    min_jobs: int
    nodes_tested: int
    fleet_failures: int
    fleet_exposure_gpu_h: float
    fleet_rate_per_1k_gpu_h: float | None
    node_causes: list[str]


class DrainProposal(BaseModel):
    node: str
    investigation_id: str
    action_id: int
    claim_id: int
    status: str


class FleetReport(BaseModel):
    schema_: str = Field(default=FLEET_SCHEMA, alias="schema")
    since: datetime | None
    until: datetime
    ledger: str
    exposure_source: str | None  # the sacct history read, or None
    sacct_jobs: int
    investigations: int  # concluded failure investigations in the period (one per bundle)
    causes: list[CauseLoss]
    nodes: list[NodeFinding]
    groups: list[GroupCause]
    test: OffenderTest | None
    offenders: list[str]
    notes: list[str] = Field(default_factory=list)
    proposals: list[DrainProposal] = Field(default_factory=list)

    model_config = {"populate_by_name": True}

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)
