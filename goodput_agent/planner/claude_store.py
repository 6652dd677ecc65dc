"""Ledger rows of the Claude planner (tables in ledger._DDL): API calls with tokens and cost,
full tool outputs behind their summaries, and chat messages. INSERT only."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from goodput_agent.ledger import Ledger
from goodput_agent.planner.claude_client import Turn


def _now() -> datetime:
    return datetime.now(UTC)


def record_llm_call(ledger: Ledger, inv_id: str, seq: int, model: str, turn: Turn,
                    cost_usd: float | None) -> int:
    row = ledger._next_id()
    ledger.con.execute(
        "INSERT INTO llm_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [row, inv_id, seq, model, turn.request_id, turn.input_tokens, turn.output_tokens,
         turn.cache_creation_tokens, turn.cache_read_tokens, cost_usd, turn.stop_reason,
         turn.duration_ms, _now()])
    return row


def usage_totals(ledger: Ledger, inv_id: str) -> dict[str, Any] | None:
    """Tokens and cost of one investigation (None: no model was called)."""
    try:
        rows = ledger.rows(
            "SELECT count(*) AS calls, sum(input_tokens) AS input_tokens, "
            "sum(output_tokens) AS output_tokens, sum(cache_creation_tokens) AS cache_write, "
            "sum(cache_read_tokens) AS cache_read, sum(cost_usd) AS cost_usd, "
            "any_value(model) AS model FROM llm_calls WHERE investigation_id = ?", [inv_id])
    except Exception:  # noqa: BLE001 - an older ledger opened read-only has no such table
        return None
    r = rows[0] if rows else None
    return r if r and r["calls"] else None


def record_tool_output(ledger: Ledger, inv_id: str, tool_call_id: int | None, evidence_id: int,
                       lines: list[str]) -> int:
    row = ledger._next_id()
    ledger.con.execute("INSERT INTO tool_outputs VALUES (?, ?, ?, ?, ?, ?, ?)",
                       [row, inv_id, tool_call_id, evidence_id, len(lines), "\n".join(lines),
                        _now()])
    return row


def tool_output_lines(ledger: Ledger, inv_id: str, evidence_id: int) -> list[str] | None:
    """The full output an evidence id stands for: its own, or the tool call's it came from."""
    rows = ledger.rows("SELECT full_text FROM tool_outputs WHERE investigation_id = ? AND "
                       "(evidence_id = ? OR tool_call_id = (SELECT tool_call_id FROM evidence "
                       "WHERE id = ? AND investigation_id = ?)) ORDER BY id LIMIT 1",
                       [inv_id, evidence_id, evidence_id, inv_id])
    return rows[0]["full_text"].split("\n") if rows else None


def record_chat_message(ledger: Ledger, inv_id: str, role: str, content: Any) -> int:
    seq = ledger.con.execute("SELECT count(*) FROM chat_messages WHERE investigation_id = ?",
                             [inv_id]).fetchone()[0]
    row = ledger._next_id()
    ledger.con.execute("INSERT INTO chat_messages VALUES (?, ?, ?, ?, ?, ?)",
                       [row, inv_id, seq + 1, role, json.dumps(content), _now()])
    return row


def chat_messages(ledger: Ledger, inv_id: str) -> list[dict[str, Any]]:
    return [{"role": r["role"], "content": json.loads(r["content_json"])}
            for r in ledger.rows("SELECT role, content_json FROM chat_messages WHERE "
                                 "investigation_id = ? ORDER BY seq", [inv_id])]
