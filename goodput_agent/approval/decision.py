"""One decision model for every surface (the action page, the queue, `goodput actions`, the
API): an action's status, the policy it is judged by, who may approve it and how many must,
what would make a refusal pass, and which buttons can succeed for the person asking.

An open action (proposed, approved by too few, refused) is judged now against the policy the
surface runs with. An action that started executing, ran, failed, was verified or rejected is
never judged again: its view is what the ledger recorded — the command or API call, the diff,
the output and exit status, who approved it, how they were authenticated and under which
policy, and the verification.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from goodput_agent.approval import store
from goodput_agent.approval.approvals import standing
from goodput_agent.approval.gate import ActionPreview, claims_shown, preview_action
from goodput_agent.approval.gate_checks import now_or_utc
from goodput_agent.approval.identity import Identity
from goodput_agent.approval.policy import Policy
from goodput_agent.approval.policy_fix import PolicyFix, policy_fix
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import ActionRow
from goodput_agent.toolkit import MutatingTool, ToolContext, registry

OPEN = ("proposed", "approved", "refused")


class Approver(BaseModel):
    person: str
    via: str
    detail: str | None = None
    at: datetime
    policy: str | None = None  # the policy the approval was given under


class CommandRun(BaseModel):
    argv: list[str]
    rc: int | None
    stdout: str = ""
    stderr: str = ""


class RunRecord(BaseModel):
    """What ran, exactly as the ledger recorded it."""

    started_at: datetime | None = None
    finished_at: datetime | None = None
    ok: bool | None = None  # None: started, no result recorded (running, or cut off)
    command: str | None = None
    commands: list[CommandRun] = Field(default_factory=list)
    diff: str | None = None  # a config change's diff of the file it wrote
    response: Any = None  # an API call's answer
    error: str | None = None
    approvers: list[Approver] = Field(default_factory=list)
    rejected: str | None = None  # who rejected it, and why
    verifications: list[dict[str, Any]] = Field(default_factory=list)


class ActionView(ActionPreview):
    executable: bool  # a mutating tool with arguments it accepts
    approvers: list[str] = Field(default_factory=list)  # who may approve (groups expanded)
    approvals_required: int = 1
    approved_by: list[str] = Field(default_factory=list)  # standing approvals' people
    approval_expires_at: datetime | None = None  # the first standing approval's expiry
    fix: PolicyFix | None = None
    ran: RunRecord | None = None
    can_approve: bool = False  # the Approve button: it can succeed for this person
    can_reject: bool = False
    why_not_approve: str | None = None


def _executable(action: ActionRow) -> tuple[bool, MutatingTool | None]:
    tool = registry().get(action.tool)
    if not isinstance(tool, MutatingTool):
        return False, None
    try:
        tool.input_model.model_validate(action.args)
    except ValidationError:
        return False, tool
    return True, tool


def _approvers(policy: Policy, tool: str) -> list[str]:
    out = []
    for entry in policy.tool(tool).approvers:
        members = ", ".join(policy.groups.get(entry.removeprefix("group:"), [])) or \
            "as the sign-on proxy asserts"
        out.append(f"{entry} ({members})" if entry.startswith("group:") else entry)
    return out


def _approver(e: store.Event) -> Approver:
    who = (e.detail or {}).get("authenticated") or {"person": e.actor or "?", "via": "login"}
    return Approver(person=who.get("person") or e.actor or "?", via=who.get("via", "login"),
                    detail=who.get("detail"), at=e.occurred_at,
                    policy=(e.detail or {}).get("policy"))


def run_record(evs: list[store.Event]) -> RunRecord:
    started = next((e for e in evs if e.kind == "execution_started"), None)
    done = next((e for e in evs if e.kind == "execution"), None)
    used = {str(k) for k in ((started.detail or {}).get("approvals") or {})} if started else set()
    approvals = [e for e in evs if e.kind == "approval" and (str(e.id) in used or not used)]
    out = (done.detail or {}).get("output") or {} if done else {}
    response = out.get("response")
    diff = response.get("diff") if isinstance(response, dict) else None
    rejection = next((e for e in evs if e.kind == "rejection"), None)
    return RunRecord(
        started_at=started.occurred_at if started else None,
        finished_at=done.occurred_at if done else None, ok=done.ok if done else None,
        command=out.get("command"), commands=[CommandRun(**r) for r in out.get("results") or []],
        diff=diff, response=None if diff is not None else response,
        error=done.reason if done else None, approvers=[_approver(a) for a in approvals],
        rejected=f"{rejection.actor}: {rejection.reason}" if rejection else None,
        verifications=[{"at": e.occurred_at, "verdict": e.reason,
                        "summary": (e.detail or {}).get("summary"),
                        "after": (e.detail or {}).get("after")}
                       for e in evs if e.kind == "verification"])


def _recorded(ledger: Ledger, action: ActionRow, status: str) -> ActionView:
    """A decided action, as the ledger recorded it: nothing judged again."""
    evs = store.events(ledger, action.id)
    ran = run_record(evs)
    binding = store.evidence_binding(ledger, action)
    under = next((a.policy for a in ran.approvers if a.policy), None)
    bound = next((e for e in evs if e.kind == "approval" and e.evidence_digest), None)
    return ActionView(
        action_id=action.id, investigation_id=action.investigation_id, tool=action.tool,
        args=action.args, args_hash=bound.args_hash if bound and bound.args_hash else
        store.args_hash(action.args), rationale=action.rationale,
        status=status, command=ran.command, dry_run=ran.diff, notes=[], allowed=False,
        reasons=[], claims=claims_shown(ledger, action, binding),
        evidence_digest=bound.evidence_digest if bound else binding.digest,  # what was approved
        policy=under or "(not recorded)", expires_after_s=0.0, executable=_executable(action)[0],
        ran=ran, approved_by=[a.person for a in ran.approvers],
        why_not_approve=f"action {action.id} is {status}: decided, nothing to approve")


def view_action(ledger: Ledger, action_id: int, policy: Policy, who: Identity | None = None,
                ctx: ToolContext | None = None, *, with_preview: bool = True) -> ActionView:
    """`with_preview=False` skips the tool's own preview (a dry run may ask the cluster): the
    queue lists many actions."""
    action = store.action_row(ledger, action_id)
    evs = store.events(ledger, action_id)
    status = store.status_of(evs)
    if status not in OPEN:
        return _recorded(ledger, action, status)
    preview = preview_action(ledger, action_id, policy, ctx, who) if with_preview else \
        _bare_preview(ledger, action, policy, who)
    executable, tool = _executable(action)
    nodes = len(tool.target(tool.input_model.model_validate(action.args)).nodes) \
        if executable and tool else 0
    valid, _ = standing(evs, action.tool, preview.args_hash, preview.evidence_digest,
                        now_or_utc(None))
    mine = who is not None and any(a.actor == who.person for a in valid)
    can = executable and preview.allowed and who is not None and not mine
    why = None if can else (
        "advice for a person: no tool runs it" if not executable else
        f"you ({who.person}) already approved it: another person must" if mine else
        "sign in to approve" if who is None and preview.allowed else
        "the policy does not allow it: " + "; ".join(preview.reasons))
    return ActionView(
        **preview.model_dump(), executable=executable,
        approvers=_approvers(policy, action.tool),
        approvals_required=policy.tool(action.tool).approvals_for(nodes),
        approved_by=[str(a.actor) for a in valid],
        approval_expires_at=min((a.expires_at for a in valid if a.expires_at), default=None),
        fix=policy_fix(ledger, action, policy, who) if executable else None,
        can_approve=can, can_reject=who is not None, why_not_approve=why)


def _bare_preview(ledger: Ledger, action: ActionRow, policy: Policy, who: Identity | None
                  ) -> ActionPreview:
    """The policy's decision without the tool's preview (no dry run, no file read)."""
    from goodput_agent.approval.gate_checks import policy_reasons

    reasons, _, _ = policy_reasons(ledger, action, policy, who)
    binding = store.evidence_binding(ledger, action)
    return ActionPreview(
        action_id=action.id, investigation_id=action.investigation_id, tool=action.tool,
        args=action.args, args_hash=store.args_hash(action.args), rationale=action.rationale,
        status=store.status_of(store.events(ledger, action.id)), command=None, dry_run=None,
        notes=[], allowed=not reasons, reasons=reasons,
        claims=claims_shown(ledger, action, binding), evidence_digest=binding.digest,
        policy=policy.source, expires_after_s=policy.approval.expires_after.total_seconds())
