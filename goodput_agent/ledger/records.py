"""An investigation's rows as models: the investigation, its conclusion, its evidence and tool
calls (an investigation in progress: the rows it staged too)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from goodput_agent.ledger.core import Ledger


class InvestigationRow(BaseModel):
    id: str
    created_at: datetime
    question: str | None
    kind: str | None
    target: str | None
    planner: str | None
    goodput_version: str | None = None
    prompt_hash: str | None = None


class ConclusionRow(BaseModel):
    investigation_id: str
    finished_at: datetime
    category: str
    confidence: float
    exit_code: int
    report_json: str

    @property
    def report(self) -> dict[str, Any]:
        return json.loads(self.report_json)


class EvidenceRow(BaseModel):
    id: int
    investigation_id: str
    tool_call_id: int | None
    source: str
    locator: str
    excerpt: str | None
    event_time: datetime | None
    digest: str | None
    created_at: datetime | None = None


class ToolCallRow(BaseModel):
    id: int
    investigation_id: str
    seq: int
    tool: str
    read_only: bool | None
    args_json: str | None
    output_digest: str | None
    output_summary: str | None
    duration_ms: float | None
    error: str | None
    started_at: datetime | None


def investigation_row(ledger: Ledger, inv_id: str) -> InvestigationRow | None:
    rows = ledger.rows("SELECT * FROM investigations WHERE id = ?", [inv_id])
    return InvestigationRow(**rows[0]) if rows else None


def conclusion_row(ledger: Ledger, inv_id: str) -> ConclusionRow | None:
    rows = ledger.rows("SELECT * FROM conclusions WHERE investigation_id = ?", [inv_id])
    return ConclusionRow(**rows[0]) if rows else None


def claim_ids_of(ledger: Ledger, inv_id: str) -> list[int]:
    rows = ledger.rows("SELECT id FROM claims WHERE investigation_id = ? ORDER BY id", [inv_id])
    return [r["id"] for r in rows] + [r["id"] for r in ledger.staged_rows(inv_id, "claims")]


def evidence_rows(ledger: Ledger, inv_id: str, ids: list[int] | None = None
                  ) -> list[EvidenceRow]:
    """The investigation's evidence (those of `ids`), in id order, staged rows included."""
    if ids is None:
        rows = ledger.rows("SELECT * FROM evidence WHERE investigation_id = ? ORDER BY id",
                           [inv_id])
    else:
        rows = ledger.rows("SELECT * FROM evidence WHERE investigation_id = ? AND id IN "
                           "(SELECT unnest(?::BIGINT[])) ORDER BY id", [inv_id, ids or [0]])
    staged = [r for r in ledger.staged_rows(inv_id, "evidence") if ids is None or r["id"] in ids]
    return [EvidenceRow(**r) for r in rows + staged]


def evidence_row(ledger: Ledger, evidence_id: int, inv_id: str | None = None
                 ) -> EvidenceRow | None:
    if inv_id is not None:
        found = evidence_rows(ledger, inv_id, [evidence_id])
        return found[0] if found else None
    rows = ledger.rows("SELECT * FROM evidence WHERE id = ?", [evidence_id])
    return EvidenceRow(**rows[0]) if rows else None


def tool_call_row(ledger: Ledger, call_id: int) -> ToolCallRow | None:
    rows = ledger.rows("SELECT * FROM tool_calls WHERE id = ?", [call_id])
    return ToolCallRow(**rows[0]) if rows else None


def claims_citing(ledger: Ledger, inv_id: str, evidence_id: int) -> list[dict[str, Any]]:
    """The investigation's claims whose supporting or contradicting evidence includes it."""
    rows = ledger.rows("SELECT * FROM claims WHERE investigation_id = ? ORDER BY id", [inv_id])
    return [c for c in rows if evidence_id in json.loads(c["supporting"] or "[]")
            + json.loads(c["contradicting"] or "[]")]


def count(ledger: Ledger, table: str, inv_id: str) -> int:
    """How many rows of a staged table an investigation has (stored and staged)."""
    assert table in ("tool_calls", "llm_calls", "chat_messages", "evidence", "claims")
    stored = ledger.rows(f"SELECT count(*) AS n FROM {table} WHERE investigation_id = ?",
                         [inv_id])[0]["n"]
    return int(stored) + len(ledger.staged_rows(inv_id, table))


def concluded_reports(ledger: Ledger, kind: str, target_like: list[str]) -> list[tuple[str, str]]:
    """(investigation id, report JSON) of concluded investigations of `kind` whose target is
    LIKE one of the patterns (backslash escapes), newest first."""
    if not target_like:
        return []
    where = " OR ".join("i.target LIKE ? ESCAPE '\\'" for _ in target_like)
    rows = ledger.rows("SELECT i.id, c.report_json FROM investigations i JOIN conclusions c ON "
                       f"c.investigation_id = i.id WHERE i.kind = ? AND ({where}) "
                       "ORDER BY i.created_at DESC", [kind, *target_like])
    return [(r["id"], r["report_json"]) for r in rows]
