"""Choose the wire protocol for a model-planned investigation. The model-run loop is shared;
with OpenAI-compatible settings it talks chat-completions. A server that cannot do tools,
refuses the request (a context still too long after compaction, a bad request), cannot be
reached or dies mid-answer is named in one line. For a failure the report is then the failure
analysis' verdict in the same investigation (model_run); for other questions the caller falls
back to the offline planner's report (None here). On a terminal, a model that answers slowly
shows its progress (model_progress)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import requests
import structlog

from goodput_agent.core.untrusted import line
from goodput_agent.planner.claude_client import ContextExceeded, ModelCallFailed, network_reason
from goodput_agent.planner.model_progress import TerminalProgress
from goodput_agent.planner.model_run import ModelRunStats
from goodput_agent.planner.model_run import investigate as model_investigate
from goodput_agent.planner.openai_client import ChatCompletionsClient, ToolsUnsupported
from goodput_agent.planner.openai_config import OpenAICompatSettings

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
    if isinstance(exc.__cause__, requests.ConnectionError | requests.Timeout):
        return f"cannot reach {where}: {network_reason(exc.__cause__)}"
    if exc.__cause__ is not None:
        return f"{where} could not be reached or answered badly ({exc})"
    return f"{where} refused the request ({exc})"


def _say(text: str) -> None:
    print(line(f"goodput: {text}"), file=sys.stderr)


def _claude(settings: Any, ctx: Any, ledger: Any,  # noqa: ANN401
            on_stats: Callable[[ModelRunStats], None] | None, **kw: Any) -> Any:  # noqa: ANN401
    try:
        return model_investigate(settings, ctx, ledger, on_stats=on_stats,
                                 notify=lambda outcome: _say(f"{outcome}; {ANALYSIS_FOLLOWS}"),
                                 **kw)
    except ModelCallFailed as exc:
        log.info("model_call_failed", base_url=settings.base_url, error=str(exc)[:200])
        _say(f"{exc}; {OFFLINE_FOLLOWS}")
        return None


ANALYSIS_FOLLOWS = "the failure analysis' verdict is the report"
OFFLINE_FOLLOWS = "the offline planner's report follows"


def investigate_with_model(settings: Any, ctx: Any, ledger: Any,  # noqa: ANN401
                           on_stats: Callable[[ModelRunStats], None] | None = None,
                           **kw: Any) -> Any:  # noqa: ANN401
    """The report of a model-planned investigation; None when the model server failed on a
    question other than a failure's (the caller runs the offline planner). What went wrong
    is one line on stderr."""
    if not isinstance(settings, OpenAICompatSettings):
        return _claude(settings, ctx, ledger, on_stats, **kw)
    progress = TerminalProgress.on_terminal(sys.stderr, settings.model)
    client = ChatCompletionsClient(settings, on_progress=progress)
    try:
        return model_investigate(
            settings, ctx, ledger, client=client, planner=PLANNER_NAME,  # type: ignore[arg-type]
            on_stats=on_stats,
            describe=lambda exc: why_failed(settings, exc),
            notify=lambda outcome: _say(f"{outcome}; {ANALYSIS_FOLLOWS}"), **kw)
    except ModelCallFailed as exc:
        why = why_failed(settings, exc)
        log.info("model_call_failed", base_url=settings.base_url, error=str(exc)[:200])
    finally:
        if progress:
            progress.close()
    _say(f"{why}; {OFFLINE_FOLLOWS}")
    return None
