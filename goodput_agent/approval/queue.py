"""What waits for a decision, across investigations, oldest first (`/actions`, `goodput
actions --pending`): each proposal with who may approve it, how many approvals it needs and
has, when a standing approval expires, the evidence digest an approval binds, and the policy's
decision for the person asking. Rows a tool cannot run (advice recorded by an older version)
wait for nothing and are counted apart."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from goodput_agent.approval.decision import ActionView, view_action
from goodput_agent.approval.identity import Identity
from goodput_agent.approval.policy import Policy
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import waiting


class Waiting(BaseModel):
    proposed_at: datetime | None
    view: ActionView


class Queue(BaseModel):
    policy: str
    asked_by: str | None  # the person the decisions are for (None: anyone)
    items: list[Waiting] = Field(default_factory=list)
    not_executable: list[int] = Field(default_factory=list)  # advice rows: nothing to approve


def pending(ledger: Ledger, policy: Policy, who: Identity | None, limit: int = 500) -> Queue:
    q = Queue(policy=policy.source, asked_by=who.person if who else None)
    for action in waiting(ledger, limit):
        view = view_action(ledger, action.id, policy, who, with_preview=False)
        if not view.executable:
            q.not_executable.append(action.id)
            continue
        q.items.append(Waiting(proposed_at=action.created_at, view=view))
    return q
