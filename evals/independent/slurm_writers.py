"""Slurm's own outputs: sacct -P (columns in the order the user asked), sacct --json in the
Slurm 23.02+ shape, scontrol show job|node and the slurmstepd lines in a job's output."""

from __future__ import annotations

import json
import random
from datetime import datetime

from .model import Job

SACCT_COLUMNS = ("JobID", "JobName", "State", "ExitCode", "DerivedExitCode", "NodeList",
                 "Start", "End", "Elapsed")


def _slurm_time(job: Job, t: datetime) -> str:
    return job.local(t).strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: float) -> str:
    s = int(seconds)
    d, s = divmod(s, 86400)
    text = f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{d}-{text}" if d else text


def sacct_pipe(job: Job, state: str, exit_code: str, end: datetime,
               steps: list[tuple[str, str, str]], rng: random.Random) -> str:
    """steps: (suffix, state, exit code) rows below the job's row."""
    cols = list(SACCT_COLUMNS)
    if rng.random() < 0.4:
        cols.remove("DerivedExitCode")
        cols.insert(2, cols.pop(cols.index("NodeList")))
    rows = [("", "train", state, exit_code)] + [(s, n, st, ec) for s, n, st, ec in
                                                 [(a, a.lstrip("."), b, c) for a, b, c in steps]]
    lines = ["|".join(cols)]
    for suffix, name, st, ec in rows:
        values = {"JobID": job.job_id + suffix, "JobName": name, "State": st, "ExitCode": ec,
                  "DerivedExitCode": "0:0", "NodeList": job.nodelist(),
                  "Start": _slurm_time(job, job.start), "End": _slurm_time(job, end),
                  "Elapsed": _elapsed((end - job.start).total_seconds())}
        lines.append("|".join(values[c] for c in cols))
    return "\n".join(lines) + "\n"


def _code(ec: str) -> dict:
    ret, sig = (int(x) for x in ec.split(":"))
    return {"status": ["SIGNALED" if sig else ("SUCCESS" if ret == 0 else "ERROR")],
            "return_code": {"set": not sig, "infinite": False, "number": ret},
            "signal": {"id": {"set": bool(sig), "infinite": False, "number": sig},
                       "name": {9: "KILL", 15: "TERM"}.get(sig, "")}}


def sacct_json(job: Job, state: str, exit_code: str, end: datetime, limit_min: int,
               reason: str = "None") -> str:
    start, stop = int(job.start.timestamp()), int(end.timestamp())
    record = {
        "job_id": int(job.job_id), "name": "train", "nodes": job.nodelist(),
        "state": {"current": [state], "reason": reason}, "exit_code": _code(exit_code),
        "derived_exit_code": _code("0:0"),
        "time": {"elapsed": stop - start, "start": start, "end": stop, "submission": start - 40,
                 "limit": {"set": True, "infinite": False, "number": limit_min}},
        "steps": [{"step": {"id": f"{job.job_id}.0", "name": "python"}, "state": [state],
                   "exit_code": _code(exit_code),
                   "nodes": {"count": len(job.hosts), "range": job.nodelist(),
                             "list": job.hosts},
                   "time": {"start": {"set": True, "infinite": False, "number": start},
                            "end": {"set": True, "infinite": False, "number": stop}}}],
    }
    return json.dumps({"jobs": [record], "meta": {"slurm": {"release": "24.11.1"}},
                       "errors": [], "warnings": []}, indent=2)


def scontrol_job(job: Job, state: str, reason: str, exit_code: str, end: datetime,
                 limit: str) -> str:
    return (f"JobId={job.job_id} JobName=train\n   UserId=mlops(4021) GroupId=mlops(4021)\n"
            f"   JobState={state} Reason={reason} Dependency=(null)\n"
            f"   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode={exit_code}\n"
            f"   RunTime={_elapsed((end - job.start).total_seconds())} TimeLimit={limit}\n"
            f"   StartTime={_slurm_time(job, job.start)} EndTime={_slurm_time(job, end)}\n"
            f"   Partition=gpu AllocNode:Sid=login01:1234\n   NodeList={job.nodelist()}\n"
            f"   BatchHost={job.hosts[0]}\n   NumNodes={len(job.hosts)} "
            f"NumCPUs={len(job.hosts) * 64} NumTasks={job.world}\n"
            f"   StdOut=/home/mlops/logs/train-{job.job_id}.out\n")


def scontrol_node(host: str, state: str, reason: str, when: str) -> str:
    return (f"NodeName={host} Arch=x86_64 CoresPerSocket=32\n   Gres=gpu:8\n"
            f"   State={state} ThreadsPerCore=2\n   Partitions=gpu\n"
            f"   Reason={reason} [slurm@{when}]\n")


def stepd_cancel(job: Job, host: str, t: datetime, why: str) -> str:
    return (f"slurmstepd: error: *** JOB {job.job_id} ON {host} CANCELLED AT "
            f"{_slurm_time(job, t)} DUE TO {why} ***")
