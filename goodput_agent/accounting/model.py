"""The accounting model: where a job's GPU-hours went, attempt by attempt, segment by segment.

An attempt's segments tile its run [start, end] on the clock: every instant of the run belongs to
exactly one segment, except that a productive stretch may be split by *share* (a fraction of its
GPU-time) into productive and input stall, because a trace measures how much of a step waited for
input, not when. So per attempt: sum(segment GPU-seconds) == (end - start) x GPUs.
Queue wait (submit -> start) holds no GPUs: it is kept beside the segments, and counted as
"queueing" badput in GPU-hours of the GPUs the attempt was waiting for, never as consumed hours.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, computed_field

SegmentKind = Literal[
    "startup",  # start -> first training step (the cause says first start or restart overhead)
    "productive",  # training steps that were kept
    "input_stall",  # the share of productive time the steps waited for input (from traces)
    "checkpointing",  # save start -> saved
    "lost_progress",  # last completed checkpoint -> failure: steps redone by the next attempt
    "failure",  # failure -> end of the attempt (a hang until the timeout, the teardown)
    "unobserved",  # no progress evidence for this stretch (no step lines in the logs)
]

# badput causes that are not a failure category (a failure's own category names the rest)
QUEUEING = "queueing"
STARTUP = "startup"
RESTART_OVERHEAD = "restart_overhead"
LOST_PROGRESS = "lost_progress"
CHECKPOINTING = "checkpointing"
INPUT_STALL = "input_stall"
UNOBSERVED = "unobserved"
PRODUCTIVE = "productive"


class Segment(BaseModel):
    kind: SegmentKind
    start: datetime  # timezone-aware UTC
    end: datetime
    gpus: int = Field(ge=0)
    share: float = Field(default=1.0, gt=0.0, le=1.0)  # of the interval's GPU-time
    cause: str  # "productive", a badput cause above, or a failure category
    failure: str | None = None  # the failure category this segment is owed to, if any
    evidence: str | None = None  # locator of the line it was read from ("job.out:120")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds() * self.share

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gpu_hours(self) -> float:
        return self.seconds * self.gpus / 3600.0


class FailureCause(BaseModel):
    """Why an attempt ended early: the ledger's investigation of it."""

    category: str  # the report's root-cause category ("gpu_hardware", "unknown", ...)
    summary: str
    time: datetime | None = None  # the first failure's time, when the investigation placed it
    node: str | None = None
    investigation_id: str | None = None
    evidence: list[str] = Field(default_factory=list)  # locators


class Attempt(BaseModel):
    """One run of the job on its GPUs; the pods of a distributed Kubernetes job that ran
    together are one attempt each, sharing `run` (a Slurm run is one attempt)."""

    index: int  # 0 for the first
    run: int = 0  # which run of the job it belongs to
    job_id: str  # the scheduler's id of this attempt ("4812", "4812 restart 2", pod name)
    submit: datetime | None = None
    start: datetime
    end: datetime
    state: str  # scheduler state: COMPLETED, FAILED, NODE_FAIL, REQUEUED, OOMKilled, ...
    nodes: list[str] = Field(default_factory=list)
    gpus: int = Field(ge=0)
    exit_code: str | None = None
    group: dict[str, str] = Field(default_factory=dict)  # partition, account, user, namespace
    failure: FailureCause | None = None  # None when it completed (or was ended on purpose)
    segments: list[Segment] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def elapsed_s(self) -> float:
        return (self.end - self.start).total_seconds()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def queue_wait_s(self) -> float:
        if self.submit is None:
            return 0.0
        return max(0.0, (self.start - self.submit).total_seconds())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gpu_hours(self) -> float:
        return self.elapsed_s * self.gpus / 3600.0


class JobAccount(BaseModel):
    target: str  # "slurm-job 4812", "k8s-job train/llama", a bundle path
    attempts: list[Attempt]
    notes: list[str] = Field(default_factory=list)  # what was assumed or missing

    @computed_field  # type: ignore[prop-decorator]
    @property
    def elapsed_s(self) -> float:
        """Wall time from the first attempt's start to the last one's end (requeue waits in)."""
        if not self.attempts:
            return 0.0
        first = min(a.start for a in self.attempts)
        last = max(a.end for a in self.attempts)
        return (last - first).total_seconds()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def productive_s(self) -> float:
        """Productive wall time: per run, its productive GPU-time over its GPUs (the pods of
        one run are productive side by side, not one after the other)."""
        gpu_s: dict[int, float] = {}
        gpus: dict[int, int] = {}
        for a in self.attempts:
            gpus[a.run] = gpus.get(a.run, 0) + a.gpus
            gpu_s[a.run] = gpu_s.get(a.run, 0.0) + sum(
                s.seconds * s.gpus for s in a.segments if s.kind == "productive")
        return sum(gpu_s[r] / gpus[r] for r in gpu_s if gpus[r] > 0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def effective_training_time_ratio(self) -> float:
        return self.productive_s / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def allocated_gpu_hours(self) -> float:
        return sum(a.gpu_hours for a in self.attempts)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def productive_gpu_hours(self) -> float:
        return sum(s.gpu_hours for a in self.attempts for s in a.segments
                   if s.kind == "productive")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def goodput_fraction(self) -> float:
        """Productive GPU-hours over the GPU-hours the attempts held."""
        total = self.allocated_gpu_hours
        return self.productive_gpu_hours / total if total > 0 else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def queue_gpu_hours(self) -> float:
        return sum(a.queue_wait_s * a.gpus / 3600.0 for a in self.attempts)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def badput_gpu_hours_by_cause(self) -> dict[str, float]:
        """Held GPU-hours that were not productive, by cause, plus queueing (not held)."""
        out: dict[str, float] = {}
        for a in self.attempts:
            for s in a.segments:
                if s.kind != "productive":
                    out[s.cause] = out.get(s.cause, 0.0) + s.gpu_hours
        if self.queue_gpu_hours > 0:
            out[QUEUEING] = self.queue_gpu_hours
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def badput_gpu_hours_by_failure(self) -> dict[str, float]:
        """Held GPU-hours each failure category cost: its lost progress, its tail, the restart."""
        out: dict[str, float] = {}
        for a in self.attempts:
            for s in a.segments:
                if s.failure is not None:
                    out[s.failure] = out.get(s.failure, 0.0) + s.gpu_hours
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))
