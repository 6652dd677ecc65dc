"""The one record every parser emits: something a system printed, placed on a clock.

Parsers (goodput_agent.parsing) turn artifacts into Events; analyses (goodput_agent.analysis)
read Events and never look at raw files again.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class Clock(StrEnum):
    """How an event's timestamp was obtained; decides how far it can be trusted across sources."""

    absolute = "absolute"  # carried a UTC offset, or a zone we were told
    local = "local"  # wall-clock time without a zone: assumed to be the bundle's zone
    inferred_year = "inferred_year"  # wall clock without a year (syslog, glog): year inferred
    uptime = "uptime"  # seconds since boot, converted with a boot-time anchor
    carried = "carried"  # line had no time: inherited from the previous timestamped line
    none = "none"  # no usable time at all


class EventKind(StrEnum):
    # GPU and driver
    xid = "xid"
    gpu_reset_required = "gpu_reset_required"
    gpu_device_unhealthy = "gpu_device_unhealthy"
    ecc_error = "ecc_error"
    # memory
    cuda_oom = "cuda_oom"
    host_oom_kill = "host_oom_kill"
    cgroup_oom = "cgroup_oom"
    # application
    python_exception = "python_exception"
    segfault = "segfault"
    cuda_error = "cuda_error"
    exit_status = "exit_status"
    # communication
    nccl_watchdog_timeout = "nccl_watchdog_timeout"
    nccl_error = "nccl_error"
    ib_error = "ib_error"
    link_down = "link_down"
    connection_reset = "connection_reset"
    # node and scheduler
    node_not_ready = "node_not_ready"
    node_fail = "node_fail"
    job_state = "job_state"
    step_state = "step_state"
    time_limit = "time_limit"
    preempted = "preempted"
    signal = "signal"
    # torchelastic / flight recorder
    elastic_failure = "elastic_failure"
    collective_progress = "collective_progress"
    # profiler traces and metric series (the slowdown and latency questions)
    trace_span = "trace_span"
    metric_series = "metric_series"
    # anything else worth keeping
    other = "other"


class Role(StrEnum):
    """Whether an event can start a failure or only shows one that started elsewhere."""

    primary = "primary"  # a failure of its own (Xid 79, CUDA OOM, OOM kill, exception)
    symptom = "symptom"  # a consequence (NCCL timeout, connection reset, SIGTERM from the agent)
    context = "context"  # state, not failure (job state COMPLETED, a benign Xid)


class Locator(BaseModel):
    """Where in the evidence an event came from: a file and its lines, or a trace and its span
    (a metric and its time range), for evidence that has no lines."""

    path: str  # relative to the bundle root
    line_start: int  # 1-based; 0 for evidence located by `span`
    line_end: int
    span: str | None = None  # "step 12: ncclDevKernel_AllReduce @ 1234.5 us, 870 us"

    def __str__(self) -> str:
        if self.span is not None:
            return f"{self.path} [{self.span}]"
        if self.line_start == self.line_end:
            return f"{self.path}:{self.line_start}"
        return f"{self.path}:{self.line_start}-{self.line_end}"


class Event(BaseModel):
    kind: EventKind
    role: Role
    # taxonomy category this event points at when it is the first failure (None for context)
    category: str | None = None
    ts: datetime | None = None  # timezone-aware UTC when known
    clock: Clock = Clock.none
    node: str | None = None
    rank: int | None = None
    gpu: str | None = None  # PCI bus id ("0000:9b:00") or index ("3")
    summary: str
    locator: Locator
    excerpt: str
    detail: dict[str, Any] = Field(default_factory=dict)

    def sort_key(self) -> tuple[float, str, int]:
        t = self.ts.timestamp() if self.ts else float("inf")
        return (t, self.locator.path, self.locator.line_start)
