"""What the live Slurm source reads about a job: the command outputs as they are
(SlurmOutput) and the job's facts (SlurmJob), read from those outputs by the bundle's own
parsers (parsing/slurm/) so that the live and the bundle view cannot disagree.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from goodput_agent.parsing.base import ParseContext, Parser, ParseResult
from goodput_agent.parsing.slurm import (
    SACCT_JSON,
    SACCT_PIPE,
    SCONTROL_JOB,
    SCONTROL_NODE,
    SINFO_REASONS,
    SLURM_NODES_JSON,
)
from goodput_agent.parsing.timefmt import ClockPolicy
from goodput_agent.sources.errors import (
    NotFound,
    SourceError,
)

SOURCE = "slurm"


class SlurmOutput(BaseModel):
    """One command's output, as the bundle holds it."""

    name: str  # file name in the bundle's slurm/ folder
    what: str  # in words, for the manifest
    argv: list[str]
    text: str
    seconds: float = 0.0

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


class SourceProblem(BaseModel):
    """A read that failed: the missing evidence, and the typed error."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    what: str
    kind: str
    error: str
    command: str | None = None
    exc: SourceError | None = Field(default=None, exclude=True, repr=False)

    @classmethod
    def of(cls, what: str, exc: SourceError) -> SourceProblem:
        return cls(what=what, kind=exc.kind, error=exc.message, command=exc.command, exc=exc)


class SlurmStep(BaseModel):
    step_id: str
    name: str | None = None
    state: str
    exit_code: int | None = None
    signal: int | None = None
    nodes: list[str] = Field(default_factory=list)


class SlurmNode(BaseModel):
    name: str
    state: str
    reason: str | None = None
    reason_time: str | None = None


class SlurmJob(BaseModel):
    """What the scheduler says about one job, read from the outputs below."""

    job_id: str
    name: str | None = None
    state: str
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    nodes: list[str] = Field(default_factory=list)
    start: str | None = None  # ISO 8601 UTC
    end: str | None = None
    time_limit_s: float | None = None
    std_out: str | None = None  # the paths as the job wrote them (expanded)
    std_err: str | None = None
    batch_host: str | None = None
    steps: list[SlurmStep] = Field(default_factory=list)
    node_states: list[SlurmNode] = Field(default_factory=list)
    outputs: list[SlurmOutput] = Field(default_factory=list)
    problems: list[SourceProblem] = Field(default_factory=list)  # what could not be read


def expand_output_path(pattern: str | None, job: SlurmJob, user: str | None = None,
                       workdir: str | None = None) -> str | None:
    """A StdOut/StdErr pattern (%j %x %u %N %A %a %%) as the file name Slurm wrote."""
    if not pattern:
        return None
    base, _, task = job.job_id.partition("_")
    values = {"j": job.job_id.split("_")[0], "J": job.job_id, "x": job.name or "",
              "u": user or "", "N": job.batch_host or (job.nodes[0] if job.nodes else ""),
              "A": base, "a": task, "%": "%"}
    out = re.sub(r"%(\d*)([jJxuNAa%])", lambda m: values[m.group(2)].zfill(int(m.group(1) or 0)),
                 pattern)
    if workdir and not out.startswith("/"):
        out = str(Path(workdir) / out)
    return out


_PARSERS: dict[str, Parser] = {"sacct.txt": SACCT_PIPE, "sacct.json": SACCT_JSON,
                               "scontrol_job.txt": SCONTROL_JOB,
                               "scontrol_nodes.txt": SCONTROL_NODE,
                               "nodes.json": SLURM_NODES_JSON, "sinfo_R.txt": SINFO_REASONS}


def parse_output(out: SlurmOutput, clock: ClockPolicy) -> ParseResult | None:
    parser = _PARSERS.get(out.name)
    if parser is None or not out.text.strip():
        return None
    with tempfile.TemporaryDirectory(prefix="goodput-slurm-") as d:
        path = Path(d) / out.name
        path.write_text(out.text, encoding="utf-8")
        return parser.parse(path, ParseContext(rel_path=f"slurm/{out.name}", clock=clock))


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def job_from_outputs(job_id: str, outputs: list[SlurmOutput], clock: ClockPolicy) -> SlurmJob:
    """The job's facts from the outputs, the fuller source winning field by field: scontrol
    (paths, batch host) and sacct (steps, exit codes after the job left the controller)."""
    base = job_id.split(".")[0]
    merged: dict[str, Any] = {}
    steps: dict[str, SlurmStep] = {}
    nodes: dict[str, SlurmNode] = {}
    for out in outputs:
        result = parse_output(out, clock)
        if result is None:
            continue
        for j in result.facts.get("jobs", []):
            if str(j.get("job_id", "")).split(".")[0].rstrip("+") != base:
                continue
            for k, v in j.items():
                if v not in (None, "", []) and merged.get(k) in (None, "", []):
                    merged[k] = v
        for s in result.facts.get("steps", []):
            sid = str(s.get("job_id") or "")
            if sid.split(".")[0] == base and sid not in steps:
                steps[sid] = SlurmStep(step_id=sid, name=s.get("name"),
                                       state=s.get("state") or "UNKNOWN",
                                       exit_code=s.get("exit_code"), signal=s.get("signal"),
                                       nodes=s.get("nodes") or [])
        for n in result.facts.get("nodes", []):
            if n.get("name") and n["name"] not in nodes:
                nodes[n["name"]] = SlurmNode(name=n["name"], state=n.get("state") or "UNKNOWN",
                                             reason=n.get("reason"),
                                             reason_time=n.get("reason_time"))
    if not merged:
        raise NotFound(SOURCE, f"job {job_id}: neither scontrol nor sacct knows it")
    job = SlurmJob(job_id=base, name=merged.get("name"), state=merged.get("state") or "UNKNOWN",
                   exit_code=merged.get("exit_code"), signal=merged.get("signal"),
                   reason=merged.get("reason"), nodes=merged.get("nodes") or [],
                   start=_iso(merged.get("start")), end=_iso(merged.get("end")),
                   time_limit_s=merged.get("time_limit_s"), batch_host=merged.get("batch_host"),
                   steps=list(steps.values()), node_states=list(nodes.values()),
                   outputs=outputs)
    job.std_out = expand_output_path(merged.get("std_out"), job)
    job.std_err = expand_output_path(merged.get("std_err"), job)
    return job
