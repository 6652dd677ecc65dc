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
from goodput_agent.approval.approvals import already_approved_by, shortfall, standing
from goodput_agent.approval.gate_checks import (
    Checked,
    live_reasons,
    now_or_utc,
    policy_reasons,
)
from goodput_agent.approval.identity import Identity
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


def claims_shown(ledger: Ledger, action: ActionRow, binding: EvidenceBinding
                 ) -> list[ClaimShown]:
    texts = {c.id: c.statement or "" for c in store.claim_rows(ledger, action.claim_ids)}
    return [ClaimShown(id=c.claim_id, category=c.category, status=c.status,
                       confidence=c.confidence, node=c.node, statement=texts.get(c.claim_id, ""),
                       evidence_digests=c.evidence_digests) for c in binding.claims]


def preview_action(ledger: Ledger, action_id: int, policy: Policy,
                   ctx: ToolContext | None = None, who: Identity | None = None
                   ) -> ActionPreview:
    """What would run, on which evidence, and whether the policy allows it (for `who`, when
    the person who would approve is known)."""
    action = store.action_row(ledger, action_id)
    reasons, tool, args = policy_reasons(ledger, action, policy, who)
    command = dry_run = None
    notes: list[str] = []
    if tool is not None and args is not None:
        try:
            p = tool.preview(ctx or ToolContext(), args)
            command, dry_run, notes = p.command, p.dry_run, p.notes
        except Exception as exc:  # noqa: BLE001 - a failed dry run is shown, not raised
            notes.append(f"preview incomplete: {type(exc).__name__}: {exc}".splitlines()[0])
    binding = evidence_binding(ledger, action)
    return ActionPreview(
        action_id=action_id, investigation_id=action.investigation_id, tool=action.tool,
        args=action.args, args_hash=args_hash(action.args), rationale=action.rationale,
        status=action_status(ledger, action_id), command=command, dry_run=dry_run, notes=notes,
        allowed=not reasons, reasons=reasons, claims=claims_shown(ledger, action, binding),
        evidence_digest=binding.digest, policy=policy.source,
        expires_after_s=policy.approval.expires_after.total_seconds())


def approve_action(ledger: Ledger, action_id: int, who: Identity, policy: Policy, *,
                   now: datetime | None = None) -> Approval:
    """Record an approval by an authenticated person (the gate does not execute here)."""
    now = now_or_utc(now)
    action = store.action_row(ledger, action_id)
    reasons: list[str] = []
    state = action_status(ledger, action_id)
    if state in FINAL:
        reasons.append(f"action {action_id} is already {state}; propose it again to act again")
    more, tool, parsed = policy_reasons(ledger, action, policy, who)
    reasons += more
    binding: EvidenceBinding = evidence_binding(ledger, action)
    valid, _ = standing(store.events(ledger, action_id), action.tool, args_hash(action.args),
                        binding.digest, now)
    mine = already_approved_by(valid, who.person)
    if mine is not None:
        reasons.append(f"{who.person} already approved this (approval {mine.id}); a second "
                       "approval must come from another person")
    if reasons:
        raise record_refusal(ledger, action, who.person, reasons, now, stage="approve",
                             authenticated=who.model_dump())
    return store.record_event(
        ledger, action, "approval", actor=who.person, now=now, args_hash=args_hash(action.args),
        evidence_digest=binding.digest, expires_at=now + policy.approval.expires_after, ok=True,
        detail={"claims": [c.model_dump() for c in binding.claims], "policy": policy.source,
                "args": action.args, "authenticated": who.model_dump(),
                "fingerprint": tool.fingerprint(parsed) if tool and parsed else {}})


def reject_action(ledger: Ledger, action_id: int, who: Identity, why: str) -> Rejection:
    from goodput_agent.core.errors import BadInput

    action = store.action_row(ledger, action_id)
    if not why.strip():
        raise BadInput("a rejection needs a reason (--why)")
    state = action_status(ledger, action_id)
    if state in ("executed", "failed", "verified", "rejected", "executing"):
        raise BadInput(f"action {action_id} is already {state}: nothing to reject")
    return store.record_event(ledger, action, "rejection", actor=who.person,
                              reason=why.strip(), ok=False, args_hash=args_hash(action.args),
                              detail={"authenticated": who.model_dump()})


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
                       ) -> tuple[list[str], list[store.Event], Checked]:
    evs = store.events(ledger, action.id)
    state = store.status_of(evs)
    if state in FINAL:
        return [f"action {action.id} is already {state}: an action executes once; "
                "propose it again to act again"], [], ([], None, None)
    binding = evidence_binding(ledger, action)
    valid, reasons = standing(evs, action.tool, args_hash(run_args), binding.digest, now)
    if any(e.kind == "rejection" for e in evs):
        reasons.append("the action was rejected")
    checked = policy_reasons(ledger, action.model_copy(update={"args": run_args}), policy,
                             None)
    reasons += checked[0] + _approvers_still_allowed(valid, action.tool, policy)
    tool, parsed = checked[1], checked[2]
    if not reasons and tool is not None and parsed is not None:
        required = policy.tool(action.tool).approvals_for(len(tool.target(parsed).nodes))
        reasons += shortfall(valid, required, action.tool)
        reasons += changed_since_approval(valid[0] if valid else None, tool, parsed)
    if not reasons and tool is not None and parsed is not None:
        reasons += live_reasons(ledger, tool, parsed, ctx, policy, now)
    return reasons, valid, checked


def _approvers_still_allowed(valid: list[store.Event], tool: str, policy: Policy) -> list[str]:
    """Each standing approval's person, as authenticated then, allowed by the policy now."""
    out = []
    for a in valid:
        who = Identity.model_validate((a.detail or {}).get("authenticated") or
                                      {"person": a.actor or "?", "via": "login"})
        if not policy.may_approve(tool, who.person, who.groups):
            out.append(f"{who.person!r} may no longer approve {tool} (policy {policy.source})")
    return out


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
    reasons, valid, (_, tool, parsed) = _execution_reasons(ledger, action, run_args, ctx,
                                                          policy, now)
    approval = valid[0] if valid else None
    if reasons or approval is None or tool is None or parsed is None:
        raise record_refusal(ledger, action, approval.actor if approval else None,
                             reasons or ["not executable"], now, stage="execute", args=run_args)
    target = tool.target(parsed)
    a_hash, digest = args_hash(run_args), approval.evidence_digest
    approvers = {str(a.id): a.actor for a in valid}
    try:
        store.start_execution(ledger, action, approval.actor or "", approval.id, now,
                              args_hash=a_hash, evidence_digest=digest,
                              detail={"args": run_args, "target": target.model_dump(),
                                      "approvals": approvers})
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
                              "approvals": approvers, "output": result})


def action_status(ledger: Ledger, action_id: int) -> str:
    store.action_row(ledger, action_id)
    return store.status_of(store.events(ledger, action_id))
