"""The model planners' ledger rows (goodput_agent/ledger/chat.py): model calls with tokens and
cost, full tool outputs behind their summaries, and chat messages. INSERT only."""

from __future__ import annotations

from goodput_agent.ledger import Ledger
from goodput_agent.ledger.chat import (
    ModelCall,
    chat_messages,
    record_chat_message,
    record_model_call,
    record_tool_output,
    tool_output_lines,
    usage_totals,
)
from goodput_agent.planner.claude_client import Turn


def record_llm_call(ledger: Ledger, inv_id: str, model: str, turn: Turn,
                    cost_usd: float | None) -> int:
    call = ModelCall(request_id=turn.request_id, input_tokens=turn.input_tokens,
                     output_tokens=turn.output_tokens,
                     cache_creation_tokens=turn.cache_creation_tokens,
                     cache_read_tokens=turn.cache_read_tokens, stop_reason=turn.stop_reason,
                     duration_ms=turn.duration_ms)
    return record_model_call(ledger, inv_id, model, call, cost_usd)


__all__ = ["chat_messages", "record_chat_message", "record_llm_call", "record_tool_output",
           "tool_output_lines", "usage_totals"]
