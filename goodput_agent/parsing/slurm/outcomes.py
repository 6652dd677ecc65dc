"""What a job or node state means (decided once, here), and the events and facts
every Slurm format produces from its records.
"""

from __future__ import annotations

import re
from typing import Any

from goodput_agent.core.events import Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseResult
from goodput_agent.parsing.slurm.records import (
    EXTERNAL_SIGNALS,
    FAILURE_RANK,
    MAX_EVENTS_PER_ROW,
    SIGNAL_NAMES,
    JobRecord,
    NodeRecord,
    Outcome,
    iso_of,
    normalize_state,
)


def classify_job_state(state: str, by_uid: int | None, signal: int | None) -> Outcome:
    """What one job or step state means on its own."""
    if state == "OUT_OF_MEMORY":
        return Outcome(Role.primary, "host_oom")
    if state in ("TIMEOUT", "DEADLINE"):
        return Outcome(Role.primary, "time_limit", EventKind.time_limit)
    if state == "PREEMPTED":
        return Outcome(Role.primary, "preempted", EventKind.preempted)
    if state in ("NODE_FAIL", "BOOT_FAIL"):
        return Outcome(Role.primary, "node_failure", EventKind.node_fail)
    if state == "FAILED":
        if signal in EXTERNAL_SIGNALS:
            return Outcome(Role.symptom, note=f"killed by {SIGNAL_NAMES[signal]}")
        # the program itself failed; why is in its own log, so this weighs little
        return Outcome(Role.primary, "application_error", weight="low")
    if state == "CANCELLED" and by_uid == 0:
        return Outcome(Role.symptom, note="cancelled by root/slurm")
    return Outcome(Role.context)


def settle_outcomes(records: list[JobRecord]) -> list[Outcome]:
    """Per-row outcomes, where FAILED/CANCELLED rows of a job that has a more specific failure
    (a step OUT_OF_MEMORY, the job TIMEOUT or NODE_FAIL) become symptoms of that failure."""
    own: list[Outcome] = []
    strongest: dict[str, str] = {}
    for r in records:
        state, by_uid = normalize_state(r.state_raw)
        outcome = classify_job_state(state, by_uid, r.signal)
        own.append(outcome)
        cat = outcome.category
        if r.base_id and outcome.role == Role.primary and cat and cat != "application_error":
            best = strongest.get(r.base_id)
            if best is None or FAILURE_RANK[cat] > FAILURE_RANK[best]:
                strongest[r.base_id] = cat
    settled = []
    for r, outcome in zip(records, own, strict=True):
        state, _ = normalize_state(r.state_raw)
        best = strongest.get(r.base_id or "")
        if best and state in ("FAILED", "CANCELLED") and outcome.category != best:
            outcome = Outcome(Role.symptom, best, outcome.kind,
                              note=f"consequence of {best} in job {r.base_id}")
        settled.append(outcome)
    return settled


_NODE_FAIL_REASON = re.compile(
    r"not respond|kill task failed|node[_ ]fail|unexpectedly reboot|boot[_ ]fail|"
    r"unable to contact|lost contact|heartbeat", re.IGNORECASE)
_GPU_REASON = re.compile(
    r"\bgpus?\b|\bxid\b|fell off|nvlink|nvidia|\bdcgm|\bnvml|\bgres/gpu|\bhbm\b", re.IGNORECASE)
_PLANNED_REASON = re.compile(r"maint|upgrade|reboot (?:requested|issued)|power[ _]?sav|scheduled"
                             r"|reserved|testing|burn[- ]?in|decommission", re.IGNORECASE)
_DOWN_STATES = {"DOWN", "FAIL", "FAILING", "NOT_RESPONDING"}
_PLANNED_STATES = {"MAINT", "REBOOT_REQUESTED", "REBOOT_ISSUED", "PLANNED", "POWERED_DOWN",
                   "POWER_DOWN", "POWERING_DOWN", "POWERING_UP", "FUTURE", "CLOUD"}
_HEALTHY_STATES = {"IDLE", "ALLOCATED", "MIXED", "COMPLETING", "RESERVED", "RESV", "CLOUD",
                   "POWERED_DOWN", "POWERING_UP", "FUTURE", "PLANNED", "BLOCKED", "DYNAMIC_NORM"}


def classify_node(states: list[str], reason: str | None) -> Outcome:
    """A node's state flags and reason: node_failure when it went down, context otherwise.

    A reason naming a GPU ("gpu xid 79", "GPU fell off the bus") on a drained node stays
    context (the driver's own lines decide); on a node that went DOWN it is gpu_hardware.
    """
    reason = reason or ""
    flags = set(states)
    if flags & _PLANNED_STATES or (reason and _PLANNED_REASON.search(reason)):
        return Outcome(Role.context, note="planned state")
    down = bool(flags & _DOWN_STATES)
    if reason and _GPU_REASON.search(reason):
        if down:
            return Outcome(Role.primary, "gpu_hardware", EventKind.node_fail,
                           note="reason names a GPU")
        return Outcome(Role.context, note="reason names a GPU")
    if down or (reason and _NODE_FAIL_REASON.search(reason)):
        return Outcome(Role.primary, "node_failure", EventKind.node_fail)
    return Outcome(Role.context)


def _node_is_notable(record: NodeRecord) -> bool:
    return bool(record.reason) or not set(record.states) <= _HEALTHY_STATES


def _job_summary(r: JobRecord, state: str) -> str:
    what = "step" if r.is_step else "job"
    parts = [f"Slurm {what} {r.job_id or '?'} {r.state_raw.strip() or state}"]
    if r.exit_code is not None or r.signal is not None:
        parts.append(f"exit {r.exit_code if r.exit_code is not None else '?'}:{r.signal or 0}")
    if r.signal in SIGNAL_NAMES:
        parts.append(SIGNAL_NAMES[r.signal])
    if r.reason:
        parts.append(f"reason {r.reason}")
    if r.nodes:
        shown = ",".join(r.nodes[:4]) + (f",+{len(r.nodes) - 4}" if len(r.nodes) > 4 else "")
        parts.append(f"on {shown}")
    return " ".join(parts)


def job_events(records: list[JobRecord], ctx: ParseContext) -> list[Event]:
    events = []
    for r, outcome in zip(records, settle_outcomes(records), strict=True):
        state, by_uid = normalize_state(r.state_raw)
        kind = outcome.kind or (EventKind.step_state if r.is_step else EventKind.job_state)
        ts, clock = (r.end, r.end_clock) if r.end else (r.start, r.start_clock)
        node = r.failed_node or (r.nodes[0] if len(r.nodes) == 1 else None)
        detail: dict[str, Any] = {
            "job_id": r.job_id, "step": r.is_step, "state": state, "exit_code": r.exit_code,
            "signal": r.signal, "signal_name": SIGNAL_NAMES.get(r.signal or 0),
            "reason": r.reason, "nodes": r.nodes, "start": iso_of(r.start), "end": iso_of(r.end),
            "elapsed_s": r.elapsed_s, "name": r.name, "cancelled_by_uid": by_uid,
            "derived_exit_code": r.derived_exit_code, "time_limit_s": r.time_limit_s,
            "failed_node": r.failed_node, "json_path": r.json_path, "weight": outcome.weight,
            "note": outcome.note,
            # the scheduler has not started it: nothing ran, so nothing in it failed
            "never_started": state == "PENDING" and not r.is_step and r.start is None or None,
            **r.extra}
        events.append(Event(
            kind=kind, role=outcome.role, category=outcome.category, ts=ts, clock=clock,
            node=node, summary=_job_summary(r, state),
            locator=Locator(path=ctx.rel_path, line_start=r.line_start, line_end=r.line_end),
            excerpt=r.excerpt, detail={k: v for k, v in detail.items() if v not in (None, "")}))
    return events


def node_events(records: list[NodeRecord], ctx: ParseContext) -> list[Event]:
    events: list[Event] = []
    seen_failures: set[str] = set()
    for r in records:
        outcome = classify_node(r.states, r.reason)
        if outcome.role == Role.context and not _node_is_notable(r):
            continue
        state = "+".join(r.states)
        detail: dict[str, Any] = {"state": state, "reason": r.reason, "reason_user": r.reason_user,
                                  "reason_time": iso_of(r.reason_time), "nodes": r.names,
                                  "json_path": r.json_path, "note": outcome.note,
                                  "node_record": True, **r.extra}
        if outcome.note == "reason names a GPU":
            detail["suggests"] = "gpu_hardware"
        detail = {k: v for k, v in detail.items() if v not in (None, "", [])}
        per_node = outcome.role == Role.primary and 1 < len(r.names) <= MAX_EVENTS_PER_ROW
        targets: list[str | None] = list(r.names) if per_node else \
            [r.names[0] if len(r.names) == 1 else None]
        for name in targets:
            if outcome.role == Role.primary and name:
                if name in seen_failures:
                    continue  # the same node listed again (another partition, another table)
                seen_failures.add(name)
            label = name or f"{len(r.names)} nodes"
            summary = " ".join(x for x in ("Slurm node", label, state) if x)
            events.append(Event(
                kind=outcome.kind or EventKind.other, role=outcome.role,
                category=outcome.category, ts=r.reason_time, clock=r.reason_clock, node=name,
                summary=summary + (f": {r.reason}" if r.reason else ""),
                locator=Locator(path=ctx.rel_path, line_start=r.line_start,
                                line_end=r.line_end),
                excerpt=r.excerpt, detail=detail))
    return events


def _job_fact(r: JobRecord) -> dict[str, Any]:
    state, _ = normalize_state(r.state_raw)
    return {"job_id": r.job_id, "state": state, "nodes": r.nodes, "start": iso_of(r.start),
            "end": iso_of(r.end), "exit_code": r.exit_code, "signal": r.signal,
            "reason": r.reason, "std_out": r.std_out, "std_err": r.std_err, "name": r.name,
            "elapsed_s": r.elapsed_s, "time_limit_s": r.time_limit_s,
            "batch_host": r.batch_host, "restarts": r.restarts}


def build_result(fmt: str, ctx: ParseContext, jobs: list[JobRecord], nodes: list[NodeRecord],
                 lines_read: int, warnings: list[str] | None = None) -> ParseResult:
    node_facts: dict[str, dict[str, Any]] = {}
    for r in nodes:
        for name in r.names:
            node_facts.setdefault(name, {"name": name, "state": "+".join(r.states),
                                         "reason": r.reason,
                                         "reason_time": iso_of(r.reason_time)})
    facts: dict[str, Any] = {"jobs": [_job_fact(r) for r in jobs if not r.is_step],
                             "steps": [_job_fact(r) for r in jobs if r.is_step],
                             "nodes": list(node_facts.values())}
    events = job_events(jobs, ctx) + node_events(nodes, ctx)
    return ParseResult(format=fmt, events=events, facts=facts, lines_read=lines_read,
                       warnings=warnings or [])
