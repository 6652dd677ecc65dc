"""Settings of the OpenAI-compatible planner: the Claude planner's settings (same config file,
budgets and retry policy), a base URL and model that must be named, an optional API key read
from an environment variable, and the model's context window, which bounds what is sent."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from goodput_agent.errors import BadInput
from goodput_agent.planner.claude_config import ClaudeSettings, load_settings

DEFAULT_CONTEXT_WINDOW = 32_768
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class OpenAICompatSettings(ClaudeSettings):
    context_window: int = Field(default=DEFAULT_CONTEXT_WINDOW, ge=2048)
    result_chars: int = Field(default=3000, ge=500)


def load_openai_settings(flags: dict[str, Any]) -> OpenAICompatSettings:
    """Config file and budgets as for Claude; --base-url and --model are required."""
    budgets = {k: flags.get(k) for k in ("max_turns", "max_tool_calls", "max_input_tokens",
                                         "max_output_tokens", "max_wall_s")}
    base = load_settings({"budgets": budgets})
    if not flags.get("base_url") or not flags.get("model"):
        raise BadInput("--planner openai-compatible needs --base-url URL and --model NAME "
                       "(e.g. --base-url http://vllm:8000/v1 --model Qwen/Qwen2.5-7B-Instruct)")
    data = base.model_dump()
    window = int(flags.get("context_window") or DEFAULT_CONTEXT_WINDOW)
    data.update(model=flags["model"], base_url=flags["base_url"], context_window=window,
                api_key=os.environ.get(str(flags.get("api_key_env") or DEFAULT_KEY_ENV)),
                # compact the history well before the window; leave room for the answer
                context_tokens=max(1000, window * 3 // 4 - base.max_tokens_per_turn),
                max_tokens_per_turn=min(base.max_tokens_per_turn, window // 4),
                result_chars=min(base.result_chars, 3000))
    return OpenAICompatSettings.model_validate(data)
