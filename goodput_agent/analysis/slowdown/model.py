"""What the slowdown analyses return: per-step breakdowns on one clock, per rank and per run,
and the verdict. These are the report's `breakdown` object and the `goodput trace` output."""

from __future__ import annotations

from pydantic import BaseModel, Field

from goodput_agent.core.events import Event

# the parts of a step, in drawing order; they sum to the step time
PARTS = ("compute_us", "comm_transfer_us", "comm_wait_us", "memory_us", "idle_input_us",
         "idle_host_us", "idle_other_us")
# how people read the parts (terminal tables, pictures)
PART_LABELS = {"compute_us": "compute", "comm_transfer_us": "comm", "comm_wait_us": "wait ranks",
               "memory_us": "memory", "idle_input_us": "idle input", "idle_host_us": "idle host",
               "idle_other_us": "idle other"}


class StepBreakdown(BaseModel):
    """One step on the GPU timeline of one rank. The seven parts are disjoint and sum to
    `step_us`: overlapping work is counted once, in the order compute > comm > memory > idle."""

    step: int
    start_us: float  # trace clock
    step_us: float
    compute_us: float  # union of compute kernels (any stream)
    comm_transfer_us: float  # communication not overlapped by compute, minus comm_wait_us
    comm_wait_us: float  # exposed communication spent waiting for other ranks (0: one rank)
    memory_us: float  # memcpy/memset not overlapped by compute or communication
    idle_input_us: float  # GPU idle while the host waited for the next batch
    idle_host_us: float  # GPU idle while the host was busy (launches, syncs, CPU ops)
    idle_other_us: float  # GPU idle with no host cause found
    # overlapping views, not parts
    comm_total_us: float = 0.0  # union of communication kernels
    comm_overlapped_us: float = 0.0  # communication hidden under compute
    kernels: int = 0  # GPU ops that started in the step

    def parts(self) -> dict[str, float]:
        return {p: getattr(self, p) for p in PARTS}


class KernelFamily(BaseModel):
    """Kernels grouped by a normalized name (template arguments and shapes dropped)."""

    family: str
    kind: str  # compute | comm | memcpy | memset
    calls: int
    total_us: float
    mean_us: float


class RankBreakdown(BaseModel):
    path: str
    rank: int | None = None
    host: str | None = None
    host_source: str | None = None
    steps: list[StepBreakdown] = Field(default_factory=list)
    median_step_us: float = 0.0
    # the split of the step whose time is the median (its parts sum to its step_us)
    median_step: StepBreakdown | None = None
    # each part's mean over the steps (sums to the mean step time)
    mean_parts: dict[str, float] = Field(default_factory=dict)
    kernel_families: list[KernelFamily] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class RunBreakdown(BaseModel):
    label: str  # "baseline" | "incident"
    ranks: list[RankBreakdown] = Field(default_factory=list)


class Breakdown(BaseModel):
    """The report's `breakdown` object."""

    baseline: RunBreakdown | None = None
    incident: RunBreakdown
    notes: list[str] = Field(default_factory=list)  # definitions the numbers rest on


class FamilyChange(BaseModel):
    family: str
    kind: str
    baseline_mean_us: float
    incident_mean_us: float
    ratio: float
    calls: int


class SlowdownVerdict(BaseModel):
    category: str  # one of report.CATEGORIES["slowdown"] or "unknown"
    summary: str
    confidence: float
    rank: int | None = None
    node: str | None = None
    gpu: str | None = None
    evidence: list[Event] = Field(default_factory=list)  # trace spans and metric series
    alternatives: list[tuple[str, float, str]] = Field(default_factory=list)  # cat, conf, why not
    unknowns: list[str] = Field(default_factory=list)
    kernel_changes: list[FamilyChange] = Field(default_factory=list)
