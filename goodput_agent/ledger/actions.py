"""The gate's vocabulary: proposed actions, the claims they rest on, and the rows of what
happened to each (`action_events`, INSERT only: approval, rejection, refusal,
execution_started, execution, verification), from which an action's status is derived."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import duckdb
from pydantic import BaseModel

from goodput_agent.core.errors import BadInput
from goodput_agent.ledger.core import InvestigationRecord, Ledger, fetch
from goodput_agent.ledger.schema import insert_sql

KINDS = ("approval", "rejection", "refusal", "execution_started", "execution", "verification")


class ActionStatus(StrEnum):
    PROPOSED = "proposed"
    APPROVED = "approved"
    REFUSED = "refused"
    REJECTED = "rejected"
    EXECUTING = "executing"
    EXECUTED = "executed"
    FAILED = "failed"
    VERIFIED = "verified"


class ActionRow(BaseModel):
    id: int
    investigation_id: str
    tool: str
    args: dict[str, Any]
    mutating: bool
    rationale: str | None
    claim_ids: list[int]
    created_at: datetime | None = None


class ClaimRow(BaseModel):
    id: int
    investigation_id: str
    statement: str | None
    category: str
    confidence: float
    status: str
    node: str | None
    rank: int | None = None
    gpu: str | None = None
    supporting: list[int]
    contradicting: list[int]


class ActionEvent(BaseModel):
    id: int
    action_id: int | None  # None: the investigation's own row (a verification, no action)
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


def _action(row: dict[str, Any]) -> ActionRow:
    return ActionRow(id=row["id"], investigation_id=row["investigation_id"], tool=row["tool"],
                     args=json.loads(row["args_json"] or "{}"), mutating=bool(row["mutating"]),
                     rationale=row["rationale"], claim_ids=json.loads(row["claim_ids"] or "[]"),
                     created_at=row["created_at"])


def action(ledger: Ledger, action_id: int) -> ActionRow:
    rows = ledger.rows("SELECT * FROM actions WHERE id = ?", [action_id])
    if not rows:
        raise BadInput(f"{ledger.path}: no action {action_id}")
    return _action(rows[0])


def actions_of(ledger: Ledger, inv_id: str) -> list[ActionRow]:
    """An investigation's proposals (those it is still staging too), in order."""
    rows = ledger.rows("SELECT * FROM actions WHERE investigation_id = ? ORDER BY id", [inv_id])
    return [_action(r) for r in rows + ledger.staged_rows(inv_id, "actions")]


def waiting(ledger: Ledger, limit: int = 500) -> list[ActionRow]:
    """Proposals across investigations that wait for a decision (nothing ended them: no
    rejection, no execution started), oldest first."""
    rows = ledger.rows(
        "SELECT * FROM actions a WHERE NOT EXISTS (SELECT 1 FROM action_events e WHERE "
        "e.action_id = a.id AND e.kind IN ('rejection', 'execution_started', 'execution', "
        "'verification')) ORDER BY a.created_at, a.id LIMIT ?", [limit])
    return [_action(r) for r in rows]


def recent(ledger: Ledger, limit: int = 5000) -> list[ActionRow]:
    """The newest proposals of every investigation (what tools a site's incidents call for)."""
    return [_action(r) for r in ledger.rows(
        "SELECT * FROM actions ORDER BY id DESC LIMIT ?", [limit])]


def claims(ledger: Ledger, ids: list[int], inv_id: str | None = None) -> list[ClaimRow]:
    """The claims of these ids, in id order (an investigation in progress: its staged ones)."""
    rows = ledger.rows("SELECT * FROM claims WHERE id IN (SELECT unnest(?::BIGINT[])) "
                       "ORDER BY id", [ids or [0]])
    if inv_id is not None:
        rows += [r for r in ledger.staged_rows(inv_id, "claims") if r["id"] in ids]
    return [ClaimRow(**{**r, "supporting": json.loads(r["supporting"] or "[]"),
                        "contradicting": json.loads(r["contradicting"] or "[]")}) for r in rows]


def evidence_digests(ledger: Ledger, ids: list[int]) -> list[str]:
    if not ids:
        return []
    return [r["digest"] for r in ledger.rows(
        "SELECT digest FROM evidence WHERE id IN (SELECT unnest(?::BIGINT[])) ORDER BY id",
        [ids])]


def conclusion(ledger: Ledger, inv_id: str) -> dict[str, Any] | None:
    rows = ledger.rows("SELECT * FROM conclusions WHERE investigation_id = ?", [inv_id])
    return rows[0] if rows else None


def later_verdict(ledger: Ledger, inv_id: str) -> tuple[str, str, str] | None:
    """A newer investigation of the same target that concluded otherwise: (its id, its
    category, this one's category)."""
    with ledger.reading() as con:
        mine = fetch(con, "SELECT i.target, i.created_at, c.category FROM investigations i "
                          "JOIN conclusions c ON c.investigation_id = i.id WHERE i.id = ?",
                     [inv_id])
        if not mine:
            return None
        later = fetch(con, "SELECT i.id, c.category FROM investigations i JOIN conclusions c "
                           "ON c.investigation_id = i.id WHERE i.target = ? AND i.created_at > ? "
                           "AND i.id <> ? AND c.category <> ? ORDER BY i.created_at DESC "
                           "LIMIT 1",
                      [mine[0]["target"], mine[0]["created_at"], inv_id, mine[0]["category"]])
    return (later[0]["id"], later[0]["category"], mine[0]["category"]) if later else None


# --- events ----------------------------------------------------------------------------------

def _event(row: dict[str, Any]) -> ActionEvent:
    detail = row.pop("detail_json")
    return ActionEvent(**row, detail=json.loads(detail) if detail else None)


def events(ledger: Ledger, action_id: int) -> list[ActionEvent]:
    return [_event(r) for r in ledger.rows(
        "SELECT * FROM action_events WHERE action_id = ? ORDER BY id", [action_id])]


def investigation_events(ledger: Ledger, inv_id: str) -> list[ActionEvent]:
    return [_event(r) for r in ledger.rows(
        "SELECT * FROM action_events WHERE investigation_id = ? ORDER BY id", [inv_id])]


def _insert_event(con: duckdb.DuckDBPyConnection, act: ActionRow | str, kind: str,
                  actor: str | None, at: datetime, fields: dict[str, Any]) -> int:
    """`act`: the action, or an investigation's id for its own row (no action)."""
    assert kind in KINDS, kind
    row_id = int(con.execute("SELECT nextval('row_ids')").fetchone()[0])
    detail = fields.get("detail")
    action_id, inv_id, tool = (None, act, None) if isinstance(act, str) else (
        act.id, act.investigation_id, act.tool)
    con.execute(insert_sql("action_events"), [
        row_id, action_id, inv_id, kind, actor, at, tool,
        fields.get("args_hash"), fields.get("evidence_digest"), fields.get("approval_id"),
        fields.get("expires_at"), fields.get("ok"), fields.get("reason"),
        canonical_json(detail) if detail is not None else None])
    return row_id


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def add_event(ledger: Ledger, act: ActionRow, kind: str, *, actor: str | None,
              now: datetime | None = None, **fields: Any) -> ActionEvent:
    with ledger.writing() as con:
        row_id = _insert_event(con, act, kind, actor, now or datetime.now(UTC), fields)
        return _event(fetch(con, "SELECT * FROM action_events WHERE id = ?", [row_id])[0])


def add_investigation_event(ledger: Ledger, inv_id: str, kind: str, *, actor: str | None,
                            **fields: Any) -> ActionEvent:
    """A row about the investigation itself: a verification where it proposed no action (its
    remedies were advice a person carried out)."""
    with ledger.writing() as con:
        row_id = _insert_event(con, inv_id, kind, actor, datetime.now(UTC), fields)
        return _event(fetch(con, "SELECT * FROM action_events WHERE id = ?", [row_id])[0])


class AlreadyStarted(Exception):
    """The action's execution had already started (in this or another process)."""


def start_execution(ledger: Ledger, act: ActionRow, actor: str, approval_id: int,
                    now: datetime, **fields: Any) -> ActionEvent:
    """approved -> executing, once: the action's run row (primary key: the action) and its
    execution_started row (which spends the approval) in one transaction."""
    try:
        with ledger.writing() as con:
            row_id = _insert_event(con, act, "execution_started", actor, now,
                                   {**fields, "approval_id": approval_id})
            con.execute(insert_sql("action_runs"), [act.id, approval_id, row_id, now])
            return _event(fetch(con, "SELECT * FROM action_events WHERE id = ?", [row_id])[0])
    except duckdb.ConstraintException:
        raise AlreadyStarted(f"action {act.id} has already been executed once") from None


def executions(ledger: Ledger, since: datetime | None, *, unfinished: bool) -> list[ActionEvent]:
    """Successful executions, or execution_started rows with no result (running now, or cut
    off by a crash: the change may have happened)."""
    if unfinished:
        sql = ("SELECT * FROM action_events s WHERE kind = 'execution_started' AND NOT EXISTS "
               "(SELECT 1 FROM action_events e WHERE e.action_id = s.action_id AND "
               "e.kind = 'execution')")
    else:
        sql = "SELECT * FROM action_events WHERE kind = 'execution' AND ok"
    params: list[Any] = []
    if since is not None:
        sql += " AND occurred_at >= ?"
        params.append(since)
    return [_event(r) for r in ledger.rows(sql + " ORDER BY id", params)]


def statuses_of(ledger: Ledger, inv_ids: list[str]) -> dict[str, dict[int, ActionStatus]]:
    """Each action's status, by investigation, for many investigations in two queries (a
    page listing 200 investigations asked 400 before)."""
    ids = list(dict.fromkeys(inv_ids))
    of_these = "WHERE investigation_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY id"
    with ledger.reading() as con:
        acts = fetch(con, f"SELECT id, investigation_id FROM actions {of_these}", [ids])
        evs = [_event(r) for r in fetch(con, f"SELECT * FROM action_events {of_these}", [ids])]
    for inv_id in ids:  # proposals a handle is still staging (events are never staged)
        acts += ledger.staged_rows(inv_id, "actions")
    by_action: dict[int, list[ActionEvent]] = {}
    for e in evs:
        if e.action_id is not None:
            by_action.setdefault(e.action_id, []).append(e)
    out: dict[str, dict[int, ActionStatus]] = {inv_id: {} for inv_id in ids}
    for a in acts:
        out[a["investigation_id"]][a["id"]] = status_of(by_action.get(a["id"], []))
    return out


def status_of(evs: list[ActionEvent]) -> ActionStatus:
    """proposed → approved → executed (or failed) → verified; rejected ends it; a refusal
    shows until something else happens (an earlier valid approval still stands)."""
    state = ActionStatus.PROPOSED
    open_states = (ActionStatus.PROPOSED, ActionStatus.APPROVED, ActionStatus.REFUSED)
    for e in evs:
        if e.kind == "verification":
            state = ActionStatus.VERIFIED
        elif e.kind == "execution_started":
            state = ActionStatus.EXECUTING  # the approval is spent; the result row follows
        elif e.kind == "execution":
            state = ActionStatus.EXECUTED if e.ok else ActionStatus.FAILED
        elif e.kind == "rejection" and state in open_states:
            state = ActionStatus.REJECTED
        elif e.kind == "approval" and state in (ActionStatus.PROPOSED, ActionStatus.REFUSED):
            state = ActionStatus.APPROVED
        elif e.kind == "refusal" and state in open_states:
            state = ActionStatus.REFUSED
    return state


def proposals_by(ledger: Ledger, planner: str, tool: str, node: str | None = None,
                 limit: int = 100) -> list[dict[str, Any]]:
    """Proposals of `tool` made by investigations of `planner` (fleet's drains), newest first,
    with the node their arguments name and how many gate rows each has."""
    sql = ("SELECT a.id, a.investigation_id, a.claim_ids, "
           "json_extract_string(a.args_json, '$.node') AS node, a.created_at, "
           "(SELECT count(*) FROM action_events e WHERE e.action_id = a.id) AS events "
           "FROM actions a JOIN investigations i ON i.id = a.investigation_id "
           "WHERE i.planner = ? AND a.tool = ?")
    params: list[Any] = [planner, tool]
    if node is not None:
        sql += " AND json_extract_string(a.args_json, '$.node') = ?"
        params.append(node)
    rows = ledger.rows(sql + " ORDER BY a.id DESC LIMIT ?", [*params, limit])
    for r in rows:
        r["claim_ids"] = json.loads(r["claim_ids"] or "[]")
    return rows


# --- one investigation as a document (`ledger show --json`) -----------------------------------

def _parsed(text: Any, default: Any) -> Any:  # noqa: ANN401 - JSON kept as text in a column
    if not isinstance(text, str):
        return default if text is None else text
    try:
        return json.loads(text)
    except ValueError:
        return text


def record_document(rec: InvestigationRecord) -> dict[str, Any]:
    """An investigation as real JSON (no JSON inside strings), its actions under the names and
    with the current status that `goodput actions --json` gives them."""
    evs: dict[int, list[ActionEvent]] = {}
    for row in rec.action_events:
        ev = _event(dict(row)) if "detail_json" in row else ActionEvent(**row)
        evs.setdefault(ev.action_id, []).append(ev)
    actions = [{"action_id": a["id"], "investigation_id": a["investigation_id"],
                "tool": a["tool"], "args": _parsed(a.get("args_json"), {}),
                "mutating": a["mutating"], "rationale": a["rationale"],
                "status": status_of(evs.get(a["id"], [])).value,
                "claim_ids": _parsed(a.get("claim_ids"), []), "created_at": a["created_at"]}
               for a in rec.actions]
    claims = [{**c, "supporting": _parsed(c.get("supporting"), []),
               "contradicting": _parsed(c.get("contradicting"), [])} for c in rec.claims]
    calls = [{k: v for k, v in {**t, "args": _parsed(t.get("args_json"), {}),
                                "output_summary": _parsed(t.get("output_summary"), None)}.items()
              if k != "args_json"} for t in rec.tool_calls]
    conclusion = None
    if rec.conclusion is not None:
        conclusion = {k: v for k, v in rec.conclusion.items() if k != "report_json"}
        conclusion["report"] = _parsed(rec.conclusion.get("report_json"), None)
    events = [e.model_dump(mode="json") for evl in evs.values() for e in evl]
    return {"investigation": rec.investigation, "status": rec.status, "claims": claims,
            "evidence": rec.evidence, "tool_calls": calls, "actions": actions,
            "action_events": sorted(events, key=lambda e: e["id"]), "conclusion": conclusion}
