"""Settings of the OpenAI-compatible planner: the Claude planner's settings (budgets, retry
policy, compaction), plus a base URL and model that must be named, an optional API key (read
from the environment variable `api_key_env` names), whether to stream, and the model's context
window, which bounds what is sent.

Precedence, lowest first: defaults < config file (section `openai_compatible:`, same file as
`claude:`) < command-line flags."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from goodput_agent.core.errors import BadInput
from goodput_agent.planner.claude_config import (
    ClaudeSettings,
    _file_settings,
    _merge,
    config_path,
    validated,
)

SECTION = "openai_compatible"
DEFAULT_CONTEXT_WINDOW = 32_768
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
ANSWER_SHARE = 4  # at most a quarter of the window for one answer


class OpenAICompatSettings(ClaudeSettings):
    context_window: int = Field(default=DEFAULT_CONTEXT_WINDOW, ge=2048)
    result_chars: int = Field(default=3000, ge=500)
    api_key_env: str = DEFAULT_KEY_ENV
    # None: stream where it shows something (chat, a terminal's progress line); False: never
    # (llama.cpp's server cannot stream an answer when tools are offered, and hangs after
    # refusing); True: always
    stream: bool | None = None
    # sampling: unset, the server's defaults; `temperature: 0` makes a server answer alike
    # each time (greedy), which tests and recordings of a small model rely on
    temperature: float | None = Field(default=None, ge=0.0)
    seed: int | None = None


def load_openai_settings(flags: dict[str, Any]) -> OpenAICompatSettings:
    """Config file, then flags; a base URL and a model must be named by one of them."""
    where = config_path()
    budgets = {k: flags.get(k) for k in ("max_turns", "max_tool_calls", "max_input_tokens",
                                         "max_output_tokens", "max_wall_s")}
    over = {"budgets": budgets, **{k: flags.get(k) for k in (
        "model", "base_url", "context_window", "api_key_env", "stream")}}
    data = _merge(_file_settings(where, SECTION), over)
    if not data.get("base_url") or not data.get("model"):
        raise BadInput("--planner openai-compatible needs --base-url URL and --model NAME "
                       f"(or base_url and model under {SECTION}: in {where}), e.g. "
                       "--base-url http://vllm:8000/v1 --model Qwen/Qwen2.5-7B-Instruct")
    s = validated(OpenAICompatSettings, data, where, SECTION)
    window = s.context_window
    return s.model_copy(update={
        "api_key": s.api_key or os.environ.get(s.api_key_env) or None,
        "max_tokens_per_turn": min(s.max_tokens_per_turn, window // ANSWER_SHARE),
        # compact the history well before the window, leaving room for the answer
        "context_tokens": max(1000, window * 3 // 4 - min(s.max_tokens_per_turn,
                                                          window // ANSWER_SHARE))})
