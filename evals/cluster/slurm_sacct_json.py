"""`sacct --json` (data_parser 0.0.40/0.0.41) for the job and its steps."""

from __future__ import annotations

import json
import random
from typing import Any

from goodput_agent.evals.cluster.context import Ctx, Outcome, _sizes
from goodput_agent.evals.cluster.formats import compress_hostlist


def _num(n: int | None, *, infinite: bool = False) -> dict[str, Any]:
    return {"set": n is not None, "infinite": infinite, "number": n or 0}


def _exit_json(code: str) -> dict[str, Any]:
    rc, sig = (int(x) for x in code.split(":"))
    names = {9: "KILL", 15: "TERM", 6: "ABRT", 125: ""}
    if sig:
        return {
            "status": ["SIGNALED"],
            "return_code": _num(None),
            "signal": {"id": _num(sig), "name": names.get(sig, "")},
        }
    return {
        "status": ["SUCCESS" if rc == 0 else "ERROR"],
        "return_code": _num(rc),
        "signal": {"id": _num(None), "name": ""},
    }


def _tres(ctx: Ctx, nodes: int, *, billing: bool) -> list[dict[str, Any]]:
    cpn, mem = _sizes(ctx)
    items = [
        {"type": "cpu", "name": "", "id": 1, "count": cpn * nodes},
        {"type": "mem", "name": "", "id": 2, "count": mem * 1024 * nodes},
        {"type": "node", "name": "", "id": 4, "count": nodes},
    ]
    if billing:
        items.append({"type": "billing", "name": "", "id": 5, "count": cpn * nodes})
    items.append({"type": "gres", "name": "gpu", "id": 1001, "count": ctx.gpn * nodes})
    return items


def _step(
    ctx: Ctx,
    step_id: str,
    name: str,
    state: str,
    code: str,
    nodes: list[str],
    t0: int,
    t1: int,
    tasks: int,
) -> dict[str, Any]:
    return {
        "time": {
            "elapsed": t1 - t0,
            "end": _num(t1),
            "start": _num(t0),
            "suspended": 0,
            "system": {"seconds": 1 + (t1 - t0) // 40, "microseconds": 0},
            "total": {"seconds": (t1 - t0) * 3, "microseconds": 0},
            "user": {"seconds": (t1 - t0) * 3, "microseconds": 0},
        },
        "exit_code": _exit_json(code),
        "nodes": {"count": len(nodes), "range": compress_hostlist(nodes), "list": nodes},
        "tasks": {"count": tasks},
        "pid": "",
        "CPU": {"requested_frequency": {"min": _num(0), "max": _num(0)}, "governor": ""},
        "kill_request_user": "",
        "state": [state],
        "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": _num(0)}},
        "step": {"id": step_id, "name": name},
        "task": {"distribution": "Block"},
        "tres": {
            "requested": {"max": [], "min": [], "average": [], "total": []},
            "consumed": {"max": [], "min": [], "average": [], "total": []},
            "allocated": _tres(ctx, len(nodes), billing=False),
        },
    }


def _steps(ctx: Ctx, oc: Outcome, names: list[str], start: int, end: int) -> list[dict[str, Any]]:
    """The batch, extern and srun steps."""
    spec, n = ctx.spec, len(ctx.nodes)
    tasks = n if ctx.has_agent else ctx.world
    return [
        _step(
            ctx,
            f"{spec.job_id}.batch",
            "batch",
            oc.batch_state,
            oc.batch_exit,
            names[:1],
            start,
            end,
            1,
        ),
        _step(ctx, f"{spec.job_id}.extern", "extern", "COMPLETED", "0:0", names, start, end + 1, n),
        _step(
            ctx,
            f"{spec.job_id}.0",
            "torchrun" if ctx.has_agent else "python",
            oc.step_state,
            oc.step_exit,
            names,
            start + 2,
            end,
            tasks,
        ),
    ]


def _job_time(ctx: Ctx, start: int, end: int) -> dict[str, Any]:
    limit_min = int(ctx.time_limit.total_seconds() // 60)
    return {
        "elapsed": end - start,
        "eligible": start - 95,
        "end": end,
        "planned": _num(95),
        "start": start,
        "submission": start - 95,
        "suspended": 0,
        "system": {"seconds": 0, "microseconds": 0},
        "limit": _num(limit_min),
        "total": {"seconds": 0, "microseconds": 0},
        "user": {"seconds": 0, "microseconds": 0},
    }


def _job(ctx: Ctx, oc: Outcome, rng: random.Random) -> dict[str, Any]:
    """The job's record (rng: the case's sacct source, after the parser was drawn)."""
    spec = ctx.spec
    n = len(ctx.nodes)
    cpn, mem = _sizes(ctx)
    names = sorted(node.name for node in ctx.nodes)
    start, end = int(spec.start.timestamp()), int(oc.t_end.timestamp())
    return {
        "account": "ml-research",
        "comment": {"administrator": "", "job": "", "system": ""},
        "allocation_nodes": n,
        "array": {
            "job_id": 0,
            "limits": {"max": {"running": {"tasks": 0}}},
            "task_id": _num(None),
            "task": "",
        },
        "association": {
            "account": "ml-research",
            "cluster": "hpc",
            "partition": "",
            "user": spec.user,
            "id": 42,
        },
        "block": "",
        "cluster": "hpc",
        "constraints": "h100",
        "container": "",
        "derived_exit_code": _exit_json(oc.job_exit if oc.job_state == "FAILED" else "0:0"),
        "time": _job_time(ctx, start, end),
        "exit_code": _exit_json(oc.job_exit),
        "extra": "",
        "failed_node": oc.failed_node,
        "flags": ["STARTED_ON_SCHEDULE", "START_RECEIVED"],
        "group": spec.user,
        "het": {"job_id": 0, "job_offset": _num(None)},
        "job_id": int(spec.job_id),
        "name": spec.job_name,
        "licenses": "",
        "mcs": {"label": ""},
        "nodes": compress_hostlist(names),
        "partition": spec.partition,
        "hold": False,
        "priority": _num(rng.randint(1000, 90000)),
        "qos": "normal",
        "required": {
            "CPUs": cpn * n,
            "memory_per_cpu": _num(None),
            "memory_per_node": _num(mem * 1024),
        },
        "kill_request_user": "",
        "reservation": {"id": 0, "name": ""},
        "script": "",
        "stdin_expanded": "/dev/null",
        "stdout_expanded": f"/home/{spec.user}/jobs/logs/slurm-{spec.job_id}.out",
        "stderr_expanded": "",
        "stdout": f"/home/{spec.user}/jobs/logs/slurm-%j.out",
        "stderr": "",
        "stdin": "/dev/null",
        "state": {"current": [oc.job_state], "reason": "None"},
        "steps": _steps(ctx, oc, names, start, end),
        "submit_line": f"sbatch --nodes={n} --gres=gpu:{ctx.gpn} pretrain.sbatch",
        "tres": {
            "allocated": _tres(ctx, n, billing=True),
            "requested": _tres(ctx, n, billing=True),
        },
        "used_gres": "",
        "user": spec.user,
        "wckey": {"wckey": "", "flags": []},
        "working_directory": f"/home/{spec.user}/jobs",
    }


def write_sacct_json(ctx: Ctx, oc: Outcome) -> None:
    spec = ctx.spec
    rng = random.Random(f"sacctjson:{spec.case_id}")
    parser, (major, minor, micro) = rng.choice(
        (
            ("v0.0.40", ("23", "11", "6")),
            ("v0.0.41", ("24", "05", "4")),
            ("v0.0.41", ("24", "11", "5")),
        )
    )
    job = _job(ctx, oc, rng)
    doc = {
        "jobs": [job],
        "meta": {
            "plugin": {
                "type": "openapi/slurmdbd",
                "name": "Slurm OpenAPI slurmdbd",
                "data_parser": f"data_parser/{parser}",
                "accounting_storage": "accounting_storage/slurmdbd",
            },
            "client": {"source": "/dev/pts/3", "user": spec.user, "group": spec.user},
            "command": ["sacct", "--json", "-j", spec.job_id],
            "slurm": {
                "version": {"major": major, "micro": micro, "minor": minor},
                "release": f"{major}.{minor}.{micro}",
                "cluster": "hpc",
            },
        },
        "errors": [],
        "warnings": [],
    }
    ctx.sink("slurm/sacct.json").raw = json.dumps(doc, indent=2) + "\n"
