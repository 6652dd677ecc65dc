"""The gate's rows, in the ledger's vocabulary (goodput_agent/ledger/actions.py), and what the
gate binds an approval to: the tool, the canonical hash of its arguments, and the digest of the
evidence the approver was shown (the claims the action rests on and their evidence)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from goodput_agent.ledger import Ledger, digest
from goodput_agent.ledger.actions import (
    KINDS,
    ActionEvent,
    ActionRow,
    ActionStatus,
    AlreadyStarted,
    action,
    add_event,
    canonical_json,
    executions,
    investigation_events,
    start_execution,
    status_of,
)
from goodput_agent.ledger.actions import claims as claim_rows
from goodput_agent.ledger.actions import events as events_of
from goodput_agent.ledger.actions import evidence_digests as digests_of

Event = Approval = Rejection = Refusal = Execution = Verification = ActionEvent


def args_hash(args: dict[str, Any]) -> str:
    return digest(canonical_json(args))


class ClaimBinding(BaseModel):
    claim_id: int
    category: str
    status: str
    confidence: float
    node: str | None
    statement_digest: str
    evidence_digests: list[str]


class EvidenceBinding(BaseModel):
    """What the approver was shown: the claims the action rests on and their evidence."""

    claims: list[ClaimBinding]
    digest: str


def action_row(ledger: Ledger, action_id: int) -> ActionRow:
    return action(ledger, action_id)


def evidence_binding(ledger: Ledger, act: ActionRow) -> EvidenceBinding:
    with ledger.reading():
        bound = [ClaimBinding(claim_id=c.id, category=c.category, status=c.status,
                              confidence=c.confidence, node=c.node,
                              statement_digest=digest(c.statement or ""),
                              evidence_digests=digests_of(ledger, c.supporting + c.contradicting))
                 for c in claim_rows(ledger, act.claim_ids)]
    return EvidenceBinding(claims=bound,
                           digest=digest(canonical_json([c.model_dump() for c in bound])))


def record_event(ledger: Ledger, act: ActionRow, kind: str, *, actor: str | None,
                 now: datetime | None = None, **fields: Any) -> Event:
    return add_event(ledger, act, kind, actor=actor, now=now, **fields)


def events(ledger: Ledger, action_id: int) -> list[Event]:
    return events_of(ledger, action_id)


def used_approvals(evs: list[Event]) -> set[int]:
    return {e.approval_id for e in evs if e.kind == "execution_started" and e.approval_id}


def successful_executions(ledger: Ledger, since: datetime | None = None) -> list[Event]:
    return executions(ledger, since, unfinished=False)


def unfinished_executions(ledger: Ledger, since: datetime | None = None) -> list[Event]:
    return executions(ledger, since, unfinished=True)


__all__ = ["KINDS", "ActionStatus", "AlreadyStarted", "ClaimBinding", "Event", "EvidenceBinding",
           "action_row", "args_hash", "canonical_json", "events", "evidence_binding",
           "investigation_events", "record_event", "start_execution", "status_of",
           "successful_executions", "unfinished_executions", "used_approvals"]
