"""Choose the wire protocol for a model-planned investigation. The Claude planner's loop runs
unchanged; with OpenAI-compatible settings it talks chat-completions. A server that cannot do
tools, or refuses the request (context length, bad request), is named in one line and the
caller falls back to the offline planner's report (None here)."""

from __future__ import annotations

import sys
from typing import Any

import httpx
import structlog

from goodput_agent.planner.claude import investigate as claude_investigate
from goodput_agent.planner.openai_client import ChatCompletionsClient, ToolsUnsupported
from goodput_agent.planner.openai_config import OpenAICompatSettings

log = structlog.get_logger(__name__)


def investigate_with_model(settings: Any, ctx: Any, ledger: Any,  # noqa: ANN401
                           **kw: Any) -> Any:  # noqa: ANN401
    if not isinstance(settings, OpenAICompatSettings):
        return claude_investigate(settings, ctx, ledger, **kw)
    client = ChatCompletionsClient(settings)
    try:
        return claude_investigate(settings, ctx, ledger, client=client, **kw)  # type: ignore[arg-type]
    except ToolsUnsupported as exc:
        why = f"the server at {settings.base_url} does not support tool calls"
        log.info("model_without_tools", base_url=settings.base_url, error=str(exc)[:200])
    except httpx.HTTPStatusError as exc:
        why = (f"the server at {settings.base_url} refused the request "
               f"(HTTP {exc.response.status_code}"
               + (", context length exceeded" if "context" in exc.response.text.lower() else "")
               + ")")
        log.info("model_request_refused", status=exc.response.status_code)
    except httpx.HTTPError as exc:
        why = f"the server at {settings.base_url} could not be reached ({type(exc).__name__})"
        log.info("model_unreachable", error=type(exc).__name__)
    print(f"goodput: {why}; falling back to the offline planner's report", file=sys.stderr)
    return None
