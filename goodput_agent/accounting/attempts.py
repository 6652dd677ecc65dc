"""A job's attempts: every run the scheduler started for it, with when, where and on how many GPUs.

Slurm: `sacct -D` (--duplicates) lists each run of a requeued job as its own row under the same
job id (the earlier ones in state REQUEUED, NODE_FAIL, PREEMPTED...), read with the sacct parser
the failure side uses. Kubernetes: each pod of the job is a run, and within a pod the container's
previous run (lastState.terminated) and its current one; earlier restarts than the last are only
counted by the API (restartCount), never timed, and the accounting says so.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field

from goodput_agent.core.errors import BadInput
from goodput_agent.core.timespec import rfc3339 as _ts
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.lines import iter_lines
from goodput_agent.parsing.slurm import JobRecord, normalize_state, parse_local_time
from goodput_agent.parsing.slurm.sacct_text import pipe_header, row_to_job
from goodput_agent.parsing.timefmt import ClockPolicy

SACCT_ATTEMPT_FIELDS = ("JobID,JobName,State,ExitCode,NodeList,Submit,Start,End,Elapsed,"
                        "AllocTRES,Partition,Account,User")
# the file `goodput account --slurm-job` adds to the bundle it collects
SACCT_ATTEMPTS_FILE = "slurm/sacct_attempts.txt"
GPU_RESOURCE = "nvidia.com/gpu"


class RunRecord(BaseModel):
    """One run as the scheduler recorded it (before the logs say what it did)."""

    job_id: str
    submit: datetime | None
    start: datetime
    end: datetime
    state: str
    nodes: list[str] = Field(default_factory=list)
    gpus: int | None  # None: the record does not say
    exit_code: str | None = None
    group: dict[str, str] = Field(default_factory=dict)  # partition, account, namespace
    locator: str
    run: int = 0  # which run of the job: the pods of a distributed job run together
    pod: str | None = None  # the pod whose run this is (its logs are named after it)


class Runs(BaseModel):
    runs: list[RunRecord] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def tres_gpus(tres: str | None) -> int | None:
    """The GPU count of a TRES string ("cpu=8,gres/gpu=4,mem=64G,node=1" -> 4; typed
    "gres/gpu:a100=4" counts too, the untyped total wins when both are there)."""
    if not tres:
        return None
    untyped, typed = None, 0
    for part in tres.split(","):
        key, _, value = part.partition("=")
        if not value.isdigit():
            continue
        if key == "gres/gpu":
            untyped = int(value)
        elif key.startswith("gres/gpu:"):
            typed += int(value)
    return untyped if untyped is not None else (typed or None)


def sacct_rows(path: Path, ctx: ParseContext) -> list[tuple[JobRecord, dict[str, str]]]:
    header: list[str] | None = None
    rows: list[tuple[JobRecord, dict[str, str]]] = []
    for n, line in iter_lines(path):
        if "|" not in line:
            continue
        if (new := pipe_header(line)) is not None:
            header = new
            continue
        cells = line.split("|")
        if header and len(cells) == len(header) + 1 and cells[-1].strip() == "":
            cells = cells[:-1]
        if header is None or len(cells) != len(header):
            continue
        row = dict(zip(header, cells, strict=True))
        rows.append((row_to_job(row, ctx, n, n, line[:500]), row))
    return rows


def slurm_runs(path: Path, rel: str, clock: ClockPolicy, job_id: str | None = None) -> Runs:
    """The runs in a `sacct -P` file (one per job row; steps skipped), oldest first."""
    ctx = ParseContext(rel_path=rel, clock=clock)
    out = Runs()
    for rec, row in sacct_rows(path, ctx):
        if rec.is_step or (job_id and rec.base_id != job_id):
            continue
        state, _ = normalize_state(rec.state_raw)
        if rec.start is None or rec.end is None:
            if state not in ("PENDING", "REQUEUED"):
                out.notes.append(f"{rel}:{rec.line_start}: job {rec.job_id} ({state}) has not "
                                 "ended: not counted")
            continue
        submit, _ = parse_local_time(row.get("submit"), ctx)
        gpus = tres_gpus(row.get("alloctres")) or tres_gpus(row.get("reqtres"))
        group = {k: v.strip() for k in ("partition", "account", "user")
                 if (v := row.get(k)) and v.strip()}
        code = rec.exit_code
        out.runs.append(RunRecord(
            job_id=rec.job_id or "?", submit=submit, start=rec.start, end=rec.end, state=state,
            nodes=rec.nodes, gpus=gpus, group=group,
            exit_code=None if code is None else f"{code}:{rec.signal or 0}",
            locator=f"{rel}:{rec.line_start}"))
    out.runs.sort(key=lambda r: r.start)
    for i, r in enumerate(out.runs):
        r.run = i
    return out


def _pod_gpus(pod: dict[str, Any]) -> int | None:
    total, seen = 0, False
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        value = (res.get("limits") or {}).get(GPU_RESOURCE) or \
            (res.get("requests") or {}).get(GPU_RESOURCE)
        if value is not None and str(value).isdigit():
            total, seen = total + int(value), True
    return total if seen else None


def _pod_runs(pod: dict[str, Any], rel: str, now: datetime) -> tuple[list[RunRecord], list[str]]:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    name = str(meta.get("name") or "?")
    statuses = status.get("containerStatuses") or []
    if not statuses:
        return [], [f"{rel}: pod {name} has no container status: not counted"]
    # the first container decides the pod's runs (the trainer; sidecars restart on their own)
    cs = statuses[0]
    base = {"nodes": [n] if (n := (pod.get("spec") or {}).get("nodeName")) else [], "pod": name,
            "gpus": _pod_gpus(pod), "locator": f"{rel} [pod {name}]",
            "group": {"namespace": str(meta.get("namespace") or "")}}
    runs: list[RunRecord] = []
    notes: list[str] = []
    restarts = int(cs.get("restartCount") or 0)
    last = (cs.get("lastState") or {}).get("terminated") or {}
    created = _ts(meta.get("creationTimestamp"))
    if restarts > 1:
        notes.append(f"{rel}: pod {name} restarted {restarts} times; Kubernetes keeps the times "
                     "of the last restart only: the earlier runs are counted as one stretch")
    if (ls := _ts(last.get("startedAt"))) and (le := _ts(last.get("finishedAt"))):
        runs.append(RunRecord(job_id=f"{name} run {restarts}", submit=created if restarts <= 1
                              else None, start=ls, end=le, state=str(last.get("reason") or
                                                                      "Terminated"),
                              exit_code=str(last.get("exitCode", "")), **base))
    state = cs.get("state") or {}
    now_state = state.get("terminated") or state.get("running") or {}
    if start := _ts(now_state.get("startedAt")):
        end = _ts(now_state.get("finishedAt")) or now
        what = "Running" if "running" in state else str(now_state.get("reason") or "Terminated")
        runs.append(RunRecord(job_id=f"{name} run {restarts + 1}", submit=None if runs else
                              created, start=start, end=end, state=what,
                              exit_code=str(now_state.get("exitCode", "")) or None, **base))
    return runs, notes


OK_STATES = {"COMPLETED", "Completed", "Running", "RUNNING"}


def run_window(group: list[RunRecord]) -> RunRecord:
    """The pods of one run as one record, for what concerns the run as a whole (its window,
    its cause): from the first start to the last end, a failed pod's state."""
    failed = [r for r in group if r.state not in OK_STATES]
    first = failed[0] if failed else group[0]
    submits = [r.submit for r in group if r.submit is not None]
    return first.model_copy(update={
        "submit": min(submits) if submits else None, "start": min(r.start for r in group),
        "end": max(r.end for r in group),
        "nodes": sorted({n for r in group for n in r.nodes})})


def group_pod_runs(runs: list[RunRecord]) -> list[RunRecord]:
    """Number the runs: pods whose runs overlap in time ran together, as one run of the job."""
    out = sorted(runs, key=lambda r: r.start)
    run, end = -1, None
    for r in out:
        if end is None or r.start >= end:
            run, end = run + 1, r.end
        r.run, end = run, max(end, r.end)
    return out


def k8s_runs(path: Path, rel: str, now: datetime | None = None) -> Runs:
    """The runs of the pods in a `kubectl get pods -o json` List (or one pod), oldest first;
    the pods that ran together share a run number."""
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise BadInput(f"{rel}: not a pod list ({exc})") from None
    pods = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
    out = Runs()
    for pod in pods if isinstance(pods, list) else []:
        if isinstance(pod, dict):
            runs, notes = _pod_runs(pod, rel, now or datetime.now(UTC))
            out.runs.extend(runs)
            out.notes.extend(notes)
    out.runs = group_pod_runs(out.runs)
    return out
