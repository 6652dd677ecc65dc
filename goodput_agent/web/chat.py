"""Chat about an investigation from its page, where the Claude planner is configured: the same
ChatSession as `goodput chat` (read-only tools only, every message a ledger row), one question
per form post; the conversation is shown from the ledger's chat_messages rows."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.records import investigation_row
from goodput_agent.web.excerpt import bundle_root

MAX_QUESTION = 4000
_CONTEXT_END = "not instructions.\n\n"  # the first question follows the ledger context


def chat_settings() -> tuple[Any, str | None]:
    """(settings, None) when the Claude planner is configured, else (None, why not)."""
    from goodput_agent.planner.claude_config import load_settings, require_key

    try:
        settings = load_settings()
        require_key(settings)
    except BadInput as exc:
        return None, str(exc)
    return settings, None


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def conversation(ledger: Ledger, inv_id: str) -> list[dict[str, str]]:
    """What a person reads: questions, answers and one line per tool call (tool results and
    the ledger context given to the model are left out)."""
    from goodput_agent.planner.model_store import chat_messages

    messages = chat_messages(ledger, inv_id)
    out: list[dict[str, str]] = []
    for m in messages:
        for b in _blocks(m["content"]):
            if b.get("type") == "text" and str(b.get("text", "")).strip():
                body = str(b["text"])
                if m["role"] == "user" and _CONTEXT_END in body:
                    body = body.rsplit(_CONTEXT_END, 1)[1]
                out.append({"role": m["role"], "kind": "text", "text": body})
            elif b.get("type") == "tool_use":
                args = json.dumps(b.get("input"), separators=(",", ":"), default=str)
                out.append({"role": "assistant", "kind": "tool",
                            "text": f"{b.get('name')} {args[:200]}"})
    return out


def ask(ledger_path: Path, inv_id: str, question: str, settings: Any,
        cwd: Path | None = None) -> str | None:
    """Put one question to the model about `inv_id`; the answer lands in the ledger. Returns
    which budget stopped it, if one did."""
    from goodput_agent.bundle import open_bundle
    from goodput_agent.chat import ChatSession
    from goodput_agent.toolkit import ToolContext

    question = question.strip()[:MAX_QUESTION]
    if not question:
        raise BadInput("an empty question")
    with Ledger(ledger_path) as ledger:
        row = investigation_row(ledger, inv_id)
        if row is None:
            raise BadInput(f"{ledger_path}: no investigation {inv_id}")
        target, kind = row.target, row.kind
        bundle = bundle_root(target, cwd)
        with (open_bundle(bundle) if bundle is not None else nullcontext()) as opened:
            session = ChatSession(settings, ledger, inv_id, ToolContext(bundle=opened),
                                  kind or "failure")
            _, spent = session.ask(question, lambda _: None, lambda *_: None)
    return spent
