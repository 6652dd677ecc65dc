"""After a crash between an action's start and its result: ask the cluster whether the change
happened, and record that as the action's result. Until then the action stays `executing`:
it is never approved or executed again, and a drain or cordon counts against the blast
radius (the change may have happened)."""

from __future__ import annotations

from datetime import datetime, timedelta

from goodput_agent.approval import store
from goodput_agent.approval.gate import GateRefused, record_refusal
from goodput_agent.approval.gate_checks import now_or_utc
from goodput_agent.ledger import Ledger
from goodput_agent.toolkit import MutatingTool, ToolContext, registry

GRACE = timedelta(seconds=60)  # past the tool's own timeout: its process would have recorded


def reconcile_action(ledger: Ledger, action_id: int, ctx: ToolContext, *,
                     now: datetime | None = None) -> store.Event:
    """The action's result, recorded from what the cluster shows now; GateRefused (a ledger
    row) when it is not cut off, or when the cluster cannot tell."""
    now = now_or_utc(now)
    action = store.action_row(ledger, action_id)
    evs = store.events(ledger, action_id)
    started = next((e for e in reversed(evs) if e.kind == "execution_started"), None)
    if store.status_of(evs) != "executing" or started is None:
        raise record_refusal(ledger, action, None, [f"action {action_id} is not executing: nothing "
                                             "to reconcile"], now, stage="reconcile")
    tool = registry().get(action.tool)
    assert isinstance(tool, MutatingTool)
    if now - started.occurred_at < timedelta(seconds=tool.timeout_s) + GRACE:
        raise record_refusal(ledger, action, None, [
            f"action {action_id} started executing at {started.occurred_at:%H:%M:%S %Z} and "
            "may still be running: reconcile after its timeout"], now, stage="reconcile")
    args = tool.input_model.model_validate((started.detail or {}).get("args", action.args))
    try:
        happened = tool.reconcile(ctx, args)
    except Exception as exc:  # noqa: BLE001 - a cluster that cannot answer cannot tell
        happened, why = None, f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    else:
        why = "the cluster does not show whether it ran"
    if happened is None:
        raise record_refusal(ledger, action, started.actor, [
            f"action {action_id} was cut off while executing and {why}: check by hand "
            f"({tool.name} {action.args}); it stays executing and is never run again"],
            now, stage="reconcile")
    reason = ("reconciled after a crash: the change is in place" if happened else
              "reconciled after a crash: the change did not happen")
    return store.record_event(
        ledger, action, "execution", actor=started.actor, now=now, args_hash=started.args_hash,
        evidence_digest=started.evidence_digest, approval_id=started.approval_id, ok=happened,
        reason=None if happened else reason,
        detail={**(started.detail or {}), "reconciled": True, "output": {"note": reason}})


__all__ = ["GateRefused", "reconcile_action"]
