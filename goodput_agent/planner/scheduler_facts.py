"""Typed scheduler facts: what the parsers of sacct/scontrol, kubectl and kernel logs say about
the job's layout (its runs, nodes, pods, and which host ran which srun task), read once from the
parsers' per-file fact mappings into pydantic models so the failure verdict and the planners
never walk dictionaries."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class JobFact(BaseModel):
    """One job record of the scheduler (sacct, scontrol, slurmrestd): steps are not included."""

    model_config = ConfigDict(extra="ignore")
    source: str = ""  # the bundle file that said it
    job_id: str
    name: str | None = None  # the job's name (sacct JobName, scontrol JobName)
    state: str | None = None
    nodes: list[str] = Field(default_factory=list)
    start: str | None = None  # ISO text as the scheduler printed it (zone may be missing)
    end: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    batch_host: str | None = None

    @field_validator("job_id", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str:  # noqa: ANN401 - sacct ids come as int or text
        return str(v)

    @field_validator("start", "end", mode="before")
    @classmethod
    def _iso(cls, v: Any) -> str | None:  # noqa: ANN401 - datetime or text
        return v.isoformat() if hasattr(v, "isoformat") else (str(v) if v else None)

    @property
    def base_id(self) -> str:
        """The job's id without its step (`48213.0` → `48213`)."""
        return self.job_id.split(".")[0]

    @property
    def is_step(self) -> bool:
        return "." in self.job_id


class PodFact(BaseModel):
    """One pod of the job (kubectl get pods -o json)."""

    model_config = ConfigDict(extra="ignore")
    source: str = ""
    name: str | None = None
    namespace: str | None = None
    node: str | None = None
    phase: str | None = None
    rank: int | None = None
    hostname: str | None = None
    pod_ip: str | None = None


# a pod's phase (JSON) or STATUS (get pods) that says nothing failed
HEALTHY_PHASES = frozenset({"Running", "Completed", "Succeeded", "Pending", "ContainerCreating",
                            "PodInitializing", "Terminating"})


class SchedulerFacts(BaseModel):
    """Every file's layout facts, merged: jobs, pods, kernel-log hosts and srun task hosts."""

    jobs: list[JobFact] = Field(default_factory=list)
    pods: list[PodFact] = Field(default_factory=list)
    kernel_log_hosts: list[str] = Field(default_factory=list)
    srun_task_hosts: dict[int, str] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)  # the files, in the bundle's order

    @classmethod
    def from_files(cls, per_file: dict[str, dict[str, Any]]) -> SchedulerFacts:
        out = cls()
        out.sources = list(per_file)
        for path, facts in per_file.items():
            out.jobs += [JobFact.model_validate({**j, "source": path})
                         for j in facts.get("jobs") or []
                         if isinstance(j, dict) and j.get("job_id") is not None]
            out.pods += [PodFact.model_validate({**p, "source": path})
                         for p in facts.get("pods") or [] if isinstance(p, dict)]
            out.kernel_log_hosts += [h for h in facts.get("hosts") or []
                                     if isinstance(h, str) and h not in out.kernel_log_hosts]
            for task, host in (facts.get("srun_task_hosts") or {}).items():
                out.srun_task_hosts.setdefault(int(task), str(host))
        return out

    def job_nodes(self, job_id: str | None) -> list[str]:
        """The job's nodes as the scheduler names them, in first-seen order (pods' nodes too)."""
        nodes: list[str] = []
        for source in self.sources:
            for job in self.jobs:
                if job.source == source and not (job_id and job.base_id != job_id):
                    nodes += job.nodes
            nodes += [p.node for p in self.pods if p.source == source and p.node]
        return list(dict.fromkeys(nodes))

    def latest_run_start(self, job_id: str | None) -> str | None:
        """The start of the job's last run, when the scheduler shows it more than once."""
        starts = sorted({j.start for j in self.jobs if j.start and not j.is_step
                         and (not job_id or j.job_id.split("_")[0] == job_id)})
        return starts[-1] if len(starts) > 1 else None

    def first_job_id(self) -> str | None:
        return self.jobs[0].base_id if self.jobs else None

    def only_failing_pod(self) -> PodFact | None:
        """The one pod of the job not running or done (Evicted, OOMKilled, CrashLoopBackOff,
        Error), with the node it is bound to; None when none or several are."""
        failing = {p.name: p for p in self.pods if p.name and p.node
                   and p.phase and p.phase not in HEALTHY_PHASES}
        return next(iter(failing.values())) if len(failing) == 1 else None

    def host_aliases(self, scheduler_names: set[str]) -> dict[str, str]:
        """A pod's name, hostname and IP all mean the node it ran on (except names the
        scheduler itself uses as nodes: Slurm on Kubernetes)."""
        aliases: dict[str, str] = {}
        for pod in self.pods:
            if not pod.node:
                continue
            for alias in (pod.name, pod.hostname, pod.pod_ip):
                if alias and alias not in scheduler_names:
                    aliases[alias] = pod.node
        return aliases
