"""The approval gate: the only code path that executes a mutating tool.

An approval binds the tool, the hash of its arguments (canonical JSON) and the digest of the
evidence shown (claim ids + evidence digests); it is single-use and expires. Everything the gate
decides is a ledger row (table action_events): approvals, rejections, refusals with their
reason, executions with their output. Text from logs never reaches here as an instruction:
the gate acts only on an action row a person names by id.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime
from typing import Any

import structlog
from pydantic import BaseModel

from goodput_agent.approval import store
from goodput_agent.approval.gate_checks import (
    Checked,
    live_reasons,
    now_or_utc,
    policy_reasons,
)
from goodput_agent.approval.policy import Policy
from goodput_agent.approval.store import (
    Approval,
    EvidenceBinding,
    Execution,
    Rejection,
    args_hash,
    evidence_binding,
)
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import ActionRow
from goodput_agent.toolkit import (
    GATE_APPROVAL,
    GATE_TARGET,
    ActionTarget,
    MutatingTool,
    ToolContext,
)

log = structlog.get_logger(__name__)


# an action in one of these states is never approved or executed again
FINAL = ("executing", "executed", "failed", "verified", "rejected")


class GateRefused(Exception):
    """The gate said no; the refusal is already a ledger row."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ClaimShown(BaseModel):
    id: int
    category: str
    status: str
    confidence: float
    node: str | None
    statement: str
    evidence_digests: list[str]


class ActionPreview(BaseModel):
    action_id: int
    investigation_id: str
    tool: str
    args: dict[str, Any]
    args_hash: str
    rationale: str | None
    status: str
    command: str | None  # the exact command line or API call
    dry_run: str | None  # a server-side dry run's diff, or a file diff
    notes: list[str]
    allowed: bool
    reasons: list[str]  # why not (empty when allowed)
    claims: list[ClaimShown]
    evidence_digest: str
    policy: str
    expires_after_s: float


def record_refusal(ledger: Ledger, action: ActionRow, actor: str | None, reasons: list[str],
            now: datetime, **detail: Any) -> GateRefused:
    reason = "; ".join(reasons)
    store.record_event(ledger, action, "refusal", actor=actor, now=now, reason=reason,
                       args_hash=args_hash(action.args), ok=False,
                       detail={"reasons": reasons, **detail})
    log.warning("action_refused", action=action.id, tool=action.tool, reason=reason)
    return GateRefused(reason)


def preview_action(ledger: Ledger, action_id: int, policy: Policy,
                   ctx: ToolContext | None = None) -> ActionPreview:
    action = store.action_row(ledger, action_id)
    reasons, tool, args = policy_reasons(ledger, action, policy, None)
    command = dry_run = None
    notes: list[str] = []
    if tool is not None and args is not None:
        try:
            p = tool.preview(ctx or ToolContext(), args)
            command, dry_run, notes = p.command, p.dry_run, p.notes
        except Exception as exc:  # noqa: BLE001 - a failed dry run is shown, not raised
            notes.append(f"preview incomplete: {type(exc).__name__}: {exc}".splitlines()[0])
    binding = evidence_binding(ledger, action)
    texts = {c.id: c.statement or "" for c in store.claim_rows(ledger, action.claim_ids)}
    return ActionPreview(
        action_id=action_id, investigation_id=action.investigation_id, tool=action.tool,
        args=action.args, args_hash=args_hash(action.args), rationale=action.rationale,
        status=action_status(ledger, action_id), command=command, dry_run=dry_run, notes=notes,
        allowed=not reasons, reasons=reasons,
        claims=[ClaimShown(id=c.claim_id, category=c.category, status=c.status,
                           confidence=c.confidence, node=c.node,
                           statement=texts.get(c.claim_id, ""),
                           evidence_digests=c.evidence_digests) for c in binding.claims],
        evidence_digest=binding.digest, policy=policy.source,
        expires_after_s=policy.approval.expires_after.total_seconds())


def approve_action(ledger: Ledger, action_id: int, approver: str, policy: Policy, *,
                   now: datetime | None = None) -> Approval:
    now = now_or_utc(now)
    action = store.action_row(ledger, action_id)
    approver = approver.strip()
    reasons = [] if approver else ["an approval needs the approver's name"]
    state = action_status(ledger, action_id)
    if state in FINAL:
        reasons.append(f"action {action_id} is already {state}; propose it again to act again")
    more, tool, parsed = policy_reasons(ledger, action, policy, approver or None)
    reasons += more
    if reasons:
        raise record_refusal(ledger, action, approver or None, reasons, now, stage="approve")
    binding: EvidenceBinding = evidence_binding(ledger, action)
    return store.record_event(
        ledger, action, "approval", actor=approver, now=now, args_hash=args_hash(action.args),
        evidence_digest=binding.digest, expires_at=now + policy.approval.expires_after, ok=True,
        detail={"claims": [c.model_dump() for c in binding.claims], "policy": policy.source,
                "args": action.args,
                "fingerprint": tool.fingerprint(parsed) if tool and parsed else {}})


def reject_action(ledger: Ledger, action_id: int, approver: str, why: str) -> Rejection:
    from goodput_agent.errors import BadInput

    action = store.action_row(ledger, action_id)
    if not approver.strip() or not why.strip():
        raise BadInput("a rejection needs the approver's name (--as) and a reason (--why)")
    state = action_status(ledger, action_id)
    if state in ("executed", "failed", "verified", "rejected", "executing"):
        raise BadInput(f"action {action_id} is already {state}: nothing to reject")
    return store.record_event(ledger, action, "rejection", actor=approver.strip(),
                              reason=why.strip(), ok=False,
                              args_hash=args_hash(action.args))


def _valid_approval(evs: list[store.Event], tool: str, a_hash: str, ev_digest: str,
                    now: datetime) -> tuple[store.Event | None, list[str]]:
    approvals = [e for e in evs if e.kind == "approval"]
    if not approvals:
        return None, ["no approval: every mutating tool needs an explicit approval"]
    used = store.used_approvals(evs)
    why: list[str] = []
    for a in reversed(approvals):
        if a.id in used:
            why.append(f"approval {a.id} was already used (single-use)")
        elif a.tool != tool:
            why.append(f"approval {a.id} is for {a.tool}, not {tool}")
        elif a.args_hash != a_hash:
            why.append(f"approval {a.id} binds arguments {a.args_hash}, these are {a_hash}")
        elif a.evidence_digest != ev_digest:
            why.append(f"approval {a.id} was given on other evidence ({a.evidence_digest}, now "
                       f"{ev_digest})")
        elif a.expires_at is None or now >= a.expires_at:
            why.append(f"approval {a.id} expired at {a.expires_at:%Y-%m-%d %H:%M:%S %Z}")
        else:
            return a, []
    return None, why[:1]


def _under_approval(approval_id: int, checked: ActionTarget, tool: MutatingTool,
                    ctx: ToolContext, args: BaseModel) -> Any:
    # in the worker thread that runs the tool
    tokens = GATE_APPROVAL.set(approval_id), GATE_TARGET.set(checked)
    try:
        return tool.run(ctx, args)
    finally:
        GATE_TARGET.reset(tokens[1])
        GATE_APPROVAL.reset(tokens[0])


def _execution_reasons(ledger: Ledger, action: ActionRow, run_args: dict[str, Any],
                       ctx: ToolContext, policy: Policy, now: datetime
                       ) -> tuple[list[str], store.Event | None, Checked]:
    evs = store.events(ledger, action.id)
    state = store.status_of(evs)
    if state in FINAL:
        return [f"action {action.id} is already {state}: an action executes once; "
                "propose it again to act again"], None, ([], None, None)
    binding = evidence_binding(ledger, action)
    approval, reasons = _valid_approval(evs, action.tool, args_hash(run_args),
                                        binding.digest, now)
    if any(e.kind == "rejection" for e in evs):
        reasons.append("the action was rejected")
    checked = policy_reasons(ledger, action.model_copy(update={"args": run_args}), policy,
                             approval.actor if approval else None)
    reasons += checked[0]
    tool, parsed = checked[1], checked[2]
    if not reasons and tool is not None and parsed is not None:
        reasons += changed_since_approval(approval, tool, parsed)
        reasons += live_reasons(ledger, tool, parsed, ctx, policy, now)
    return reasons, approval, checked


def changed_since_approval(approval: store.Event | None, tool: MutatingTool,
                           args: BaseModel) -> list[str]:
    seen = (approval.detail or {}).get("fingerprint") if approval else None
    now = tool.fingerprint(args)
    if seen is None or seen == now:
        return []
    return [f"the target changed since approval {approval.id} ({path}: approved on "  # type: ignore[union-attr]
            f"{seen.get(path, 'absent')}, now {digest}): approve the new state"
            for path, digest in now.items() if seen.get(path) != digest] or \
        ["the target changed since the approval"]


def execute_action(ledger: Ledger, action_id: int, ctx: ToolContext, policy: Policy, *,
                   now: datetime | None = None, args: dict[str, Any] | None = None
                   ) -> Execution:
    """Run the action's tool if, and only if, a valid approval binds exactly this tool, these
    arguments (default: the action's own) and the current evidence, and the action never
    started executing before (approved -> executing -> executed|failed, once)."""
    now = now_or_utc(now)
    action = store.action_row(ledger, action_id)
    run_args = action.args if args is None else args
    reasons, approval, (_, tool, parsed) = _execution_reasons(ledger, action, run_args, ctx,
                                                             policy, now)
    if reasons or approval is None or tool is None or parsed is None:
        raise record_refusal(ledger, action, approval.actor if approval else None,
                      reasons or ["not executable"], now, stage="execute", args=run_args)
    target = tool.target(parsed)
    a_hash, digest = args_hash(run_args), approval.evidence_digest
    try:
        store.start_execution(ledger, action, approval.actor or "", approval.id, now,
                              args_hash=a_hash, evidence_digest=digest,
                              detail={"args": run_args, "target": target.model_dump()})
    except store.AlreadyStarted as exc:
        raise record_refusal(ledger, action, approval.actor, [str(exc)], now,
                             stage="execute") from None
    output, error = None, None
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            output = pool.submit(_under_approval, approval.id, target, tool, ctx, parsed
                                 ).result(timeout=tool.timeout_s)
    except FutureTimeout:
        error = f"timed out after {tool.timeout_s:g} s"
    except Exception as exc:  # noqa: BLE001 - a failed execution is a recorded row
        error = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
    ok = bool(output is not None and getattr(output, "ok", True))
    result = json.loads(output.model_dump_json()) if output is not None else None
    log.info("action_executed", action=action_id, tool=action.tool, ok=ok, error=error)
    return store.record_event(
        ledger, action, "execution", actor=approval.actor, now=datetime.now(UTC),
        args_hash=a_hash, evidence_digest=digest, approval_id=approval.id, ok=ok,
        reason=error, detail={"args": run_args, "target": target.model_dump(),
                              "output": result})


def action_status(ledger: Ledger, action_id: int) -> str:
    store.action_row(ledger, action_id)
    return store.status_of(store.events(ledger, action_id))
