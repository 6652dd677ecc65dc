"""Everything the failure analysis reads, gathered by the planner's tool calls."""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field

# the facts entry (not a file) where the job-log tool says how much of the bundle was read
from goodput_agent.analysis.read_whole import BUNDLE_FACTS  # noqa: F401  (re-exported)
from goodput_agent.core.events import Event
from goodput_agent.core.incident import IncidentSpec
from goodput_agent.parsing.timefmt import ClockPolicy

# Events this far outside the job's window belong to another incident.
WINDOW_MARGIN_BEFORE = timedelta(minutes=10)
WINDOW_MARGIN_AFTER = timedelta(minutes=30)


class Activity(BaseModel):
    path: str
    node: str | None
    rank: int | None
    first: datetime | None
    last: datetime | None
    format: str | None = None  # "job_log" | "kernel_log": only a job log shows the job working
    last_progress: datetime | None = None  # the last step/iteration/loss line of a job log
    last_step: int | None = None
    prior_progress: datetime | None = None  # the progress line before the last one


class Observations(BaseModel):
    events: list[Event] = Field(default_factory=list)
    rank_hosts: dict[int, str] = Field(default_factory=dict)
    rank_gpus: dict[int, str] = Field(default_factory=dict)
    facts: dict[str, dict] = Field(default_factory=dict)
    activity: list[Activity] = Field(default_factory=list)
    incident: IncidentSpec = Field(default_factory=IncidentSpec)
    clock: ClockPolicy = Field(default_factory=ClockPolicy)
    kernel_log_nodes: set[str] = Field(default_factory=set)
    job_log_nodes: set[str] = Field(default_factory=set)
    scheduler_kind: str | None = None  # "slurm" | "kubernetes"
    job_nodes: list[str] = Field(default_factory=list)
    # the nodes srun named (its task exits, node failures): Slurm's spelling where no scheduler
    # row lists the job's nodes (NCCL prints the host's own, often fully qualified, name)
    launcher_nodes: list[str] = Field(default_factory=list)
    job_id: str | None = None
    # other names of a node: a pod's name, hostname and IP all mean the node it ran on
    host_aliases: dict[str, str] = Field(default_factory=dict)
    job_pods: set[str] = Field(default_factory=set)  # the job's pods, when kubectl lists them
    latest_run_start: str | None = None  # ISO start of the job's last run (requeues)


def short_name(node: str) -> str:
    n = node.strip().lower()
    if n.replace(".", "").isdigit():
        return n
    return n.split(".")[0]


class NodeNames:
    """Maps the names different sources use for one node (gpu-03, GPU-03.cluster.local) to one."""

    def __init__(self, preferred: list[str], aliases: dict[str, str] | None = None):
        self._canon: dict[str, str] = {}
        for n in preferred:  # the first spelling wins: the scheduler's names come first
            self._canon.setdefault(short_name(n), n)
        self._alias = {short_name(a): n for a, n in (aliases or {}).items()}

    def canon(self, node: str | None) -> str | None:
        if node is None:
            return None
        key = short_name(node)
        if key in self._alias:
            return self.canon(self._alias[key]) if short_name(self._alias[key]) != key else \
                self._alias[key]
        return self._canon.setdefault(key, node)


def job_window(obs: Observations) -> tuple[datetime | None, datetime | None]:
    if obs.incident.window:
        start, end = obs.incident.window.start, obs.incident.window.end
        if start.tzinfo is None:
            start, end = obs.clock.localize(start), obs.clock.localize(end)
        return start, end
    starts, ends = [], []
    for facts in obs.facts.values():
        for job in facts.get("jobs", []) or []:
            if obs.job_id and str(job.get("job_id", "")).split(".")[0] != obs.job_id:
                continue
            for key, acc in (("start", starts), ("end", ends)):
                if ts := iso_time(job.get(key), obs):
                    acc.append(ts)
    return (min(starts) if starts else None, max(ends) if ends else None)


def iso_time(value: object, obs: Observations) -> datetime | None:
    """A scheduler's time field (ISO text or a datetime), in the bundle's zone when it has none."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        return None
    return obs.clock.localize(ts) if ts.tzinfo is None else ts


def in_window(ts: datetime | None, window: tuple[datetime | None, datetime | None]) -> bool:
    start, end = window
    if ts is None:
        return True
    if start and ts < start - WINDOW_MARGIN_BEFORE:
        return False
    return not (end and ts > end + WINDOW_MARGIN_AFTER)


def unread_share(obs: Observations) -> tuple[int, int]:
    """(files that could not be read, files in the bundle), as the job-log tool counted them."""
    facts = obs.facts.get(BUNDLE_FACTS) or {}
    return len(facts.get("bundle_unread") or []), int(facts.get("bundle_files") or 0)
