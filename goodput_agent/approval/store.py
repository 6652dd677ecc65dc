"""Ledger rows of the approval gate (table action_events, INSERT only) and the derived status.

One table, one row per thing that happened to an action, in order: `approval`, `rejection`,
`refusal`, `execution_started` (consumes the approval), `execution` (the result) and
`verification`. Reading an action's rows top to bottom is its audit trail.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from goodput_agent.errors import BadInput
from goodput_agent.ledger import Ledger, digest

KINDS = ("approval", "rejection", "refusal", "execution_started", "execution", "verification")


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


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


class Event(BaseModel):
    id: int
    action_id: int
    investigation_id: str
    kind: str
    actor: str | None
    occurred_at: datetime
    tool: str | None
    args_hash: str | None
    evidence_digest: str | None
    approval_id: int | None
    expires_at: datetime | None
    ok: bool | None
    reason: str | None
    detail: dict[str, Any] | None


Approval = Rejection = Refusal = Execution = Verification = Event


def action_row(ledger: Ledger, action_id: int) -> dict[str, Any]:
    rows = ledger.rows("SELECT * FROM actions WHERE id = ?", [action_id])
    if not rows:
        raise BadInput(f"{ledger.path}: no action {action_id}")
    row = rows[0]
    row["args"] = json.loads(row["args_json"] or "{}")
    row["claims"] = json.loads(row["claim_ids"] or "[]")
    return row


def evidence_binding(ledger: Ledger, action: dict[str, Any]) -> EvidenceBinding:
    claims = []
    for cid in action["claims"]:
        rows = ledger.rows("SELECT * FROM claims WHERE id = ?", [cid])
        if not rows:
            continue
        c = rows[0]
        ev_ids = json.loads(c["supporting"] or "[]") + json.loads(c["contradicting"] or "[]")
        digests = [r["digest"] for r in ledger.rows(
            "SELECT digest FROM evidence WHERE id IN (SELECT unnest(?::BIGINT[])) ORDER BY id",
            [ev_ids])] if ev_ids else []
        claims.append(ClaimBinding(claim_id=cid, category=c["category"], status=c["status"],
                                   confidence=c["confidence"], node=c["node"],
                                   statement_digest=digest(c["statement"] or ""),
                                   evidence_digests=digests))
    body = canonical_json([c.model_dump() for c in claims])
    return EvidenceBinding(claims=claims, digest=digest(body))


def _insert_event(ledger: Ledger, action: dict[str, Any], kind: str, actor: str | None,
                  at: datetime, **f: Any) -> int:
    assert kind in KINDS, kind
    row_id = ledger._next_id()
    detail = f.get("detail")
    ledger.con.execute(
        "INSERT INTO action_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [row_id, action["id"], action["investigation_id"], kind, actor, at, action["tool"],
         f.get("args_hash"), f.get("evidence_digest"), f.get("approval_id"),
         f.get("expires_at"), f.get("ok"), f.get("reason"),
         canonical_json(detail) if detail is not None else None])
    return row_id


class AlreadyStarted(Exception):
    """The action's execution had already started (in this or another process)."""


def start_execution(ledger: Ledger, action: dict[str, Any], actor: str, approval_id: int,
                    now: datetime, **fields: Any) -> Event:
    """approved -> executing, once: the action's run row (primary key: the action) and its
    execution_started row (which spends the approval) in one transaction."""
    import duckdb

    try:
        with ledger.transaction():
            row_id = _insert_event(ledger, action, "execution_started", actor, now,
                                   approval_id=approval_id, **fields)
            ledger.con.execute("INSERT INTO action_runs VALUES (?, ?, ?, ?)",
                               [action["id"], approval_id, row_id, now])
    except duckdb.ConstraintException:
        raise AlreadyStarted(f"action {action['id']} has already been executed once") from None
    return events(ledger, action["id"], row_id=row_id)[0]


def record_event(ledger: Ledger, action: dict[str, Any], kind: str, *, actor: str | None,
                 now: datetime | None = None, args_hash: str | None = None,
                 evidence_digest: str | None = None, approval_id: int | None = None,
                 expires_at: datetime | None = None, ok: bool | None = None,
                 reason: str | None = None, detail: dict[str, Any] | None = None) -> Event:
    row_id = _insert_event(ledger, action, kind, actor, now or datetime.now(UTC),
                           args_hash=args_hash, evidence_digest=evidence_digest,
                           approval_id=approval_id, expires_at=expires_at, ok=ok, reason=reason,
                           detail=detail)
    return events(ledger, action["id"], row_id=row_id)[0]


def _event(row: dict[str, Any]) -> Event:
    detail = row.pop("detail_json")
    return Event(**row, detail=json.loads(detail) if detail else None)


def events(ledger: Ledger, action_id: int, row_id: int | None = None) -> list[Event]:
    if row_id is not None:
        return [_event(r) for r in ledger.rows("SELECT * FROM action_events WHERE id = ?",
                                               [row_id])]
    return [_event(r) for r in ledger.rows(
        "SELECT * FROM action_events WHERE action_id = ? ORDER BY id", [action_id])]


def investigation_events(ledger: Ledger, inv_id: str) -> list[Event]:
    return [_event(r) for r in ledger.rows(
        "SELECT * FROM action_events WHERE investigation_id = ? ORDER BY id", [inv_id])]


def status_of(evs: list[Event]) -> str:
    """proposed → approved → executed (or failed) → verified; rejected ends it; a refusal
    shows until something else happens (an earlier valid approval still stands)."""
    state = "proposed"
    for e in evs:
        if e.kind == "verification":
            state = "verified"
        elif e.kind == "execution_started":
            state = "executing"  # the approval is spent; the result row follows
        elif e.kind == "execution":
            state = "executed" if e.ok else "failed"
        elif e.kind == "rejection" and state in ("proposed", "approved", "refused"):
            state = "rejected"
        elif e.kind == "approval" and state in ("proposed", "refused"):
            state = "approved"
        elif e.kind == "refusal" and state in ("proposed", "approved", "refused"):
            state = "refused"
    return state


def used_approvals(evs: list[Event]) -> set[int]:
    return {e.approval_id for e in evs if e.kind == "execution_started" and e.approval_id}


def unfinished_executions(ledger: Ledger, since: datetime | None = None) -> list[Event]:
    """execution_started rows with no result row: running now, or cut off by a crash (the
    change may have happened: they count against the blast radius until reconciled)."""
    sql = ("SELECT * FROM action_events s WHERE kind = 'execution_started' AND NOT EXISTS "
           "(SELECT 1 FROM action_events e WHERE e.action_id = s.action_id AND "
           "e.kind = 'execution')")
    params: list[Any] = []
    if since is not None:
        sql += " AND occurred_at >= ?"
        params.append(since)
    return [_event(r) for r in ledger.rows(sql + " ORDER BY id", params)]


def successful_executions(ledger: Ledger, since: datetime | None = None) -> list[Event]:
    sql = "SELECT * FROM action_events WHERE kind = 'execution' AND ok"
    params: list[Any] = []
    if since is not None:
        sql += " AND occurred_at >= ?"
        params.append(since)
    return [_event(r) for r in ledger.rows(sql + " ORDER BY id", params)]
