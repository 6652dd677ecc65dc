"""The model planners' rows: each model call (tokens, cost, request id), the full output of a
tool call behind the summary the model saw, and the conversation, message by message. Read
back whether stored or still staged by the investigation in progress."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from goodput_agent.ledger.core import Ledger


class ModelCall(BaseModel):
    request_id: str | None
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    stop_reason: str | None
    duration_ms: float


def _now() -> datetime:
    return datetime.now(UTC)


def _rows(ledger: Ledger, table: str, inv_id: str, order: str = "id") -> list[dict[str, Any]]:
    stored = ledger.rows(f"SELECT * FROM {table} WHERE investigation_id = ? ORDER BY {order}",
                         [inv_id])
    return stored + ledger.staged_rows(inv_id, table)


def record_model_call(ledger: Ledger, inv_id: str, model: str, call: ModelCall,
                      cost_usd: float | None) -> int:
    seq = len(_rows(ledger, "llm_calls", inv_id)) + 1
    return ledger.record_row(inv_id, "llm_calls", lambda i: (
        i, inv_id, seq, model, call.request_id, call.input_tokens, call.output_tokens,
        call.cache_creation_tokens, call.cache_read_tokens, cost_usd, call.stop_reason,
        call.duration_ms, _now()))


def usage_totals(ledger: Ledger, inv_id: str) -> dict[str, Any] | None:
    """Tokens and cost of one investigation (None: no model was called)."""
    rows = _rows(ledger, "llm_calls", inv_id)
    if not rows:
        return None

    def total(key: str) -> Any:  # noqa: ANN401 - a sum, None when no row has a value
        values = [r[key] for r in rows if r[key] is not None]
        return sum(values) if values else None

    return {"calls": len(rows), "input_tokens": total("input_tokens"),
            "output_tokens": total("output_tokens"), "cache_write": total("cache_creation_tokens"),
            "cache_read": total("cache_read_tokens"), "cost_usd": total("cost_usd"),
            "model": rows[0]["model"]}


def record_tool_output(ledger: Ledger, inv_id: str, tool_call_id: int | None, evidence_id: int,
                       lines: list[str]) -> int:
    return ledger.record_row(inv_id, "tool_outputs", lambda i: (
        i, inv_id, tool_call_id, evidence_id, len(lines), "\n".join(lines), _now()))


def tool_output_lines(ledger: Ledger, inv_id: str, evidence_id: int) -> list[str] | None:
    """The full output an evidence id stands for: its own, or the tool call's it came from."""
    evidence = {r["id"]: r for r in _rows(ledger, "evidence", inv_id)}
    call = evidence[evidence_id]["tool_call_id"] if evidence_id in evidence else None
    for r in _rows(ledger, "tool_outputs", inv_id):
        if r["evidence_id"] == evidence_id or (call is not None and r["tool_call_id"] == call):
            return r["full_text"].split("\n")
    return None


def record_chat_message(ledger: Ledger, inv_id: str, role: str, content: Any) -> int:
    seq = len(_rows(ledger, "chat_messages", inv_id)) + 1
    return ledger.record_row(inv_id, "chat_messages", lambda i: (
        i, inv_id, seq, role, json.dumps(content), _now()))


def chat_messages(ledger: Ledger, inv_id: str) -> list[dict[str, Any]]:
    rows = sorted(_rows(ledger, "chat_messages", inv_id), key=lambda r: r["seq"])
    return [{"role": r["role"], "content": json.loads(r["content_json"])} for r in rows]


def claims_of(ledger: Ledger, inv_id: str) -> dict[int, dict[str, Any]]:
    """The investigation's claims by id, stored and staged."""
    return {r["id"]: r for r in _rows(ledger, "claims", inv_id)}
