"""sacct --json / slurmrestd (jobs and steps) and scontrol/sinfo --json, slurmrestd
nodes: epoch times, state lists, exit codes as objects.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from goodput_agent.core.events import Clock
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.json_positions import (
    JsonPath,
    JsonPositions,
    json_path_text,
    load_json_document,
    locator_for,
)
from goodput_agent.parsing.slurm.outcomes import (
    build_result,
)
from goodput_agent.parsing.slurm.records import (
    JobRecord,
    NodeRecord,
    nodes_of,
    none_if_empty,
    row_excerpt,
)
from goodput_agent.parsing.slurm.sinfo import parse_node_states

_JSON_KEEP = frozenset({"jobs", "steps", "nodes", "state", "job_state", "step", "exit_code",
                        "reason", "name", "job_id", "current"})


def _keep_slurm_path(path: JsonPath) -> bool:
    return len(path) <= 5 and all(isinstance(p, int) or p in _JSON_KEEP for p in path)


def _number(value: Any) -> float | None:
    """Slurm's {"set": true, "infinite": false, "number": N} wrappers, or a plain number."""
    if isinstance(value, dict):
        if value.get("infinite") or value.get("set") is False:
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _epoch(value: Any) -> tuple[datetime | None, Clock]:
    n = _number(value)
    if not n or n <= 0:
        return None, Clock.none
    try:
        return datetime.fromtimestamp(n, UTC), Clock.absolute
    except (OverflowError, OSError, ValueError):
        return None, Clock.none


def _json_states(value: Any) -> str:
    """{"current": ["FAILED"], "reason": ..} / ["FAILED", "REQUEUED"] / "FAILED" -> "FAILED+.."."""
    if isinstance(value, dict):
        value = value.get("current")
    if isinstance(value, list):
        return "+".join(str(v) for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _json_exit(value: Any) -> tuple[int | None, int | None, str | None]:
    """exit_code as a dict (status, return_code, signal) or a plain int -> code, signal, status."""
    if isinstance(value, bool):
        return None, None, None
    if isinstance(value, int):
        return value, None, None
    if not isinstance(value, dict):
        return None, None, None
    status = value.get("status")
    status_text = "+".join(status) if isinstance(status, list) else status \
        if isinstance(status, str) else None
    code = _number(value.get("return_code"))
    signal = value.get("signal")
    sig: float | None = None
    if isinstance(signal, dict):
        sig = _number(signal.get("id")) if "id" in signal else _number(signal.get("signal_id"))
    else:
        sig = _number(signal)
    return (int(code) if code is not None else None, int(sig) if sig else None, status_text)


def _json_nodes(value: Any) -> list[str]:
    if isinstance(value, dict):
        listed = value.get("list")
        if isinstance(listed, list) and all(isinstance(x, str) for x in listed):
            return listed
        value = value.get("range") or value.get("nodes")
    return nodes_of(value) if isinstance(value, str) else []


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _time_field(obj: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in obj:
            return obj[name]
    return None


def _json_job(job: dict[str, Any], i: int, pos: JsonPositions, ctx: ParseContext) -> JobRecord:
    path: JsonPath = ("jobs", i)
    state_key = "job_state" if "job_state" in job else "state"
    state = job.get(state_key)
    reason = as_str(job.get("state_reason")) or (as_str(state.get("reason"))
                                               if isinstance(state, dict) else None)
    code, sig, status = _json_exit(job.get("exit_code"))
    dcode, dsig, _ = _json_exit(job.get("derived_exit_code"))
    times = job.get("time") if isinstance(job.get("time"), dict) else {}
    start, start_clock = _epoch(_time_field(times, "start") or job.get("start_time"))
    end, end_clock = _epoch(_time_field(times, "end") or job.get("end_time"))
    limit = _number(_time_field(times, "limit") or job.get("time_limit"))
    elapsed = _number(times.get("elapsed"))
    if elapsed is None and start and end:
        elapsed = (end - start).total_seconds()
    lines = locator_for(pos, ctx, path + (state_key,))
    job_id = job.get("job_id")
    restarts = _number(job.get("restart_cnt"))
    return JobRecord(
        job_id=str(int(_number(job_id))) if _number(job_id) is not None else None,
        state_raw=_json_states(state), line_start=lines.line_start, line_end=lines.line_end,
        excerpt=pos.excerpt(path + (state_key,)), name=as_str(job.get("name")), exit_code=code,
        signal=sig, derived_exit_code=f"{dcode}:{dsig or 0}" if dcode is not None else None,
        reason=none_if_empty(reason), nodes=_json_nodes(job.get("nodes")), start=start,
        start_clock=start_clock, end=end, end_clock=end_clock, elapsed_s=elapsed,
        time_limit_s=limit * 60 if limit is not None else None,
        std_out=as_str(job.get("stdout_expanded")) or as_str(job.get("standard_output"))
        or as_str(job.get("stdout")),
        std_err=as_str(job.get("stderr_expanded")) or as_str(job.get("standard_error"))
        or as_str(job.get("stderr")),
        batch_host=as_str(job.get("batch_host")),
        restarts=int(restarts) if restarts is not None else None,
        failed_node=as_str(job.get("failed_node")), step=False, json_path=json_path_text(path),
        extra={"exit_status": status} if status else {})


def _json_step(step: dict[str, Any], job: JobRecord, i: int, j: int, pos: JsonPositions,
               ctx: ParseContext) -> JobRecord:
    path: JsonPath = ("jobs", i, "steps", j)
    ident = step.get("step") if isinstance(step.get("step"), dict) else {}
    raw_id = ident.get("id")
    if isinstance(raw_id, dict):  # {"job_id": 12, "step_id": "batch"}
        raw_id = f"{raw_id.get('job_id', job.job_id)}.{raw_id.get('step_id', '?')}"
    step_id = str(raw_id) if raw_id is not None else "?"
    if "." not in step_id:
        step_id = f"{job.job_id}.{step_id}"
    code, sig, status = _json_exit(step.get("exit_code"))
    times = step.get("time") if isinstance(step.get("time"), dict) else {}
    start, start_clock = _epoch(times.get("start"))
    end, end_clock = _epoch(times.get("end"))
    lines = locator_for(pos, ctx, path + ("state",))
    return JobRecord(
        job_id=step_id, state_raw=_json_states(step.get("state")), line_start=lines.line_start,
        line_end=lines.line_end, excerpt=pos.excerpt(path + ("state",)),
        name=as_str(ident.get("name")), exit_code=code, signal=sig,
        nodes=_json_nodes(step.get("nodes")), start=start, start_clock=start_clock, end=end,
        end_clock=end_clock, elapsed_s=_number(times.get("elapsed")), step=True,
        json_path=json_path_text(path), extra={"exit_status": status} if status else {})


def _json_node(node: dict[str, Any], i: int, pos: JsonPositions,
               ctx: ParseContext) -> NodeRecord | None:
    name = as_str(node.get("name")) or as_str(node.get("hostname"))
    if not name:
        return None
    path: JsonPath = ("nodes", i)
    state = node.get("state")
    states = [s.upper() for s in state if isinstance(s, str)] if isinstance(state, list) else \
        parse_node_states(state if isinstance(state, str) else None)
    for flag in node.get("state_flags") or []:  # data_parser 0.0.37: "state": "down" + flags
        if isinstance(flag, str) and flag.upper() not in states:
            states.append(flag.upper())
    reason = none_if_empty(as_str(node.get("reason")))
    ts, clock = _epoch(node.get("reason_changed_at"))
    paths = [path + ("state",)] + ([path + ("reason",)] if reason else [])
    loc = locator_for(pos, ctx, *paths)
    return NodeRecord(
        names=[name], states=states, line_start=loc.line_start, line_end=loc.line_end,
        excerpt=row_excerpt(" ".join(pos.excerpt(p) for p in paths)), reason=reason,
        reason_user=as_str(node.get("reason_set_by_user")), reason_time=ts, reason_clock=clock,
        json_path=json_path_text(path),
        extra={k: v for k, v in (("gres", as_str(node.get("gres"))),
                                 ("gres_used", as_str(node.get("gres_used")))) if v})


class _SlurmJsonParser:
    format = "slurm_json"

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        doc, text = load_json_document(path, ctx, "Slurm JSON")
        if not isinstance(doc, dict) or not (isinstance(doc.get("jobs"), list)
                                             or isinstance(doc.get("nodes"), list)):
            raise ParseError(f"{ctx.rel_path}: Slurm JSON has no 'jobs' or 'nodes' list")
        pos = JsonPositions(text, _keep_slurm_path)
        jobs: list[JobRecord] = []
        nodes: list[NodeRecord] = []
        for i, job in enumerate(doc.get("jobs") or []):
            if not isinstance(job, dict):
                continue
            record = _json_job(job, i, pos, ctx)
            jobs.append(record)
            for j, step in enumerate(job.get("steps") or []):
                if isinstance(step, dict):
                    jobs.append(_json_step(step, record, i, j, pos, ctx))
        for i, node in enumerate(doc.get("nodes") or []):
            if isinstance(node, dict) and (record_n := _json_node(node, i, pos, ctx)):
                nodes.append(record_n)
        warnings = [f"slurm reported: {_error_text(e)}" for e in doc.get("errors") or []][:10]
        return build_result(self.format, ctx, jobs, nodes, text.count("\n") + 1, warnings)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("description") or error.get("error") or error)[:200]
    return str(error)[:200]


class SacctJsonParser(_SlurmJsonParser):
    format = "sacct_json"

    def sniff(self, head: str, name: str) -> bool:
        return (head.lstrip().startswith("{") and re.search(r'"jobs"\s*:\s*\[', head) is not None
                and re.search(r'"job_id"\s*:', head) is not None)


class SlurmNodesJsonParser(_SlurmJsonParser):
    format = "slurm_nodes_json"

    def sniff(self, head: str, name: str) -> bool:
        return (head.lstrip().startswith("{") and re.search(r'"nodes"\s*:\s*\[', head) is not None
                and '"name"' in head and '"state"' in head and '"apiVersion"' not in head)
