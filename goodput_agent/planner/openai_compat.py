"""Choose the wire protocol for a model-planned investigation. The Claude planner's loop runs
unchanged; with OpenAI-compatible settings it talks chat-completions. A server that cannot do
tools, refuses the request (a context still too long after compaction, a bad request) or
cannot be reached is named in one line, and the caller falls back to the offline planner's
report (None here)."""

from __future__ import annotations

import sys
from typing import Any

import structlog

from goodput_agent.planner.claude import investigate as claude_investigate
from goodput_agent.planner.claude_client import ContextExceeded, ModelCallFailed
from goodput_agent.planner.openai_client import ChatCompletionsClient, ToolsUnsupported
from goodput_agent.planner.openai_config import OpenAICompatSettings
from goodput_agent.untrusted import line

log = structlog.get_logger(__name__)
PLANNER_NAME = "openai-compatible"


def why_failed(settings: OpenAICompatSettings, exc: ModelCallFailed) -> str:
    """One line saying what the server did (its own words are untrusted: escaped, cut)."""
    where = f"the server at {settings.base_url}"
    if isinstance(exc, ToolsUnsupported):
        return f"{where} does not support tool calls ({exc.text[:120]})"
    if isinstance(exc, ContextExceeded):
        return (f"{where} refused the request: context length exceeded even after compaction "
                f"(context window {settings.context_window} tokens; try --context-window)")
    if exc.__cause__ is not None:
        return f"{where} could not be reached or answered badly ({exc})"
    return f"{where} refused the request ({exc})"


def investigate_with_model(settings: Any, ctx: Any, ledger: Any,  # noqa: ANN401
                           **kw: Any) -> Any:  # noqa: ANN401
    if not isinstance(settings, OpenAICompatSettings):
        return claude_investigate(settings, ctx, ledger, **kw)
    client = ChatCompletionsClient(settings)
    try:
        return claude_investigate(settings, ctx, ledger, client=client,  # type: ignore[arg-type]
                                  planner=PLANNER_NAME, **kw)
    except ModelCallFailed as exc:
        why = why_failed(settings, exc)
        log.info("model_call_failed", base_url=settings.base_url, error=str(exc)[:200])
    print(line(f"goodput: {why}; falling back to the offline planner's report"),
          file=sys.stderr)
    return None
