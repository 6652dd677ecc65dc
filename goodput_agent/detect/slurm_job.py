"""A running Slurm job, observed once: its state and nodes (`scontrol show job`), its
progress (the StdOut file scontrol names, read where this runs: a login node sees the job's
shared filesystem), and, when the silence is suspect or stacks were asked for, every rank's
stack (srun --overlap, sources/stack_dumps.py). Read-only.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.analysis.live.stall import StallSettings
from goodput_agent.core.errors import BadInput
from goodput_agent.detect.assess import Observation, stall_of
from goodput_agent.detect.progress import ProgressCache, ProgressLog, read_progress
from goodput_agent.parsing.nodelist import expand_nodelist
from goodput_agent.sources.errors import SourceError
from goodput_agent.sources.stack_dumps import RankDumps, slurm_stacks


class SlurmJobNow(BaseModel):
    job_id: str
    state: str
    nodes: list[str] = Field(default_factory=list)
    tasks: int | None = None
    stdout: str | None = None
    show_job: str = ""  # scontrol's text, as evidence


class SlurmLook(BaseModel):
    """What one look at the job gathered, the observation and where each part came from."""

    job: SlurmJobNow
    observation: Observation
    progress: ProgressLog | None = None
    stacks: RankDumps | None = None
    missing: list[str] = Field(default_factory=list)


class DumpSettings(BaseModel):
    when: str = "suspect"  # always | suspect | never
    samples: int = 1
    pause_s: float = 0.3
    timeout_s: float = 60.0
    pyspy: str = "py-spy"


def _field(text: str, key: str) -> str | None:
    m = re.search(rf"(?:^|\s){key}=(\S*)", text)
    return m.group(1) if m and m.group(1) not in ("", "(null)") else None


def job_now(cli, job_id: str) -> SlurmJobNow:  # noqa: ANN001 - a sources.slurm.SlurmCLI
    out = cli.show_job(job_id)
    text = out.text
    tasks = _field(text, "NumTasks")
    return SlurmJobNow(job_id=job_id, state=_field(text, "JobState") or "UNKNOWN",
                       nodes=expand_nodelist(_field(text, "NodeList")),
                       tasks=int(tasks) if tasks and tasks.isdigit() else None,
                       stdout=_field(text, "StdOut"), show_job=text)


def look(cli, job_id: str, dumps: DumpSettings | None = None,  # noqa: ANN001 - a SlurmCLI
         settings: StallSettings | None = None, now: float | None = None,
         cache: ProgressCache | None = None) -> SlurmLook:
    """One look at a running job; BadInput when it is not running (nothing live to check).
    `cache`: the watch's, so a job's output is read once and then only what was appended."""
    dumps = dumps or DumpSettings()
    job = job_now(cli, job_id)
    if job.state != "RUNNING":
        raise BadInput(f"slurm: job {job_id} is {job.state}, not running: "
                       f"`goodput investigate --slurm-job {job_id}` explains an ended job")
    obs = Observation(job=f"slurm:{job_id}", now=now or time.time())
    result = SlurmLook(job=job, observation=obs)
    if job.stdout and Path(job.stdout).is_file():
        path = Path(job.stdout)
        log = cache.read(path) if cache is not None else read_progress(path)
        result.progress = log
        obs.progress = [m.t for m in log.marks]
        obs.steps = [float(m.step) for m in log.marks] if all(
            m.step is not None for m in log.marks) else None
        obs.phases = log.phases
    else:
        result.missing.append(f"missing evidence: the job's output {job.stdout or '(none)'} "
                              "is not readable here: no progress to judge")
    stall = stall_of(obs, settings)
    if dumps.when == "always" or (dumps.when == "suspect" and stall.suspect):
        result.stacks = _stacks(cli, job, dumps, result)
        if result.stacks is not None:
            obs.dumps = result.stacks.dumps
            obs.rank_nodes = result.stacks.rank_nodes
            obs.world_size = job.tasks
    return result


def _stacks(cli, job: SlurmJobNow, d: DumpSettings,  # noqa: ANN001
            result: SlurmLook) -> RankDumps | None:
    if not job.nodes:
        result.missing.append("missing evidence: stacks: the job names no nodes")
        return None
    try:
        stacks = slurm_stacks(job.job_id, job.nodes, samples=d.samples, pause_s=d.pause_s,
                              timeout_s=d.timeout_s, pyspy=d.pyspy, env=cli.env)
    except (SourceError, ValueError) as exc:
        result.missing.append(f"missing evidence: stacks: {exc}")
        return None
    for node, why in stacks.node_errors.items():
        result.missing.append(f"missing evidence: stacks of {node}: {why}")
    return stacks
