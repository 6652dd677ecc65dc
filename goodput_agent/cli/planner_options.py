"""The planner's flags (`--planner offline|claude|openai-compatible` and the model's settings),
shared by `goodput investigate`, `goodput eval` and `goodput chat`."""

from __future__ import annotations

from typing import Any

import click

planner_options = [
    click.option("--planner", type=click.Choice(["offline", "claude", "openai-compatible"]),
                 default="offline", show_default=True,
                 help="Who plans: the offline playbook, Claude (needs ANTHROPIC_API_KEY), or "
                      "a self-hosted model (openai-compatible: --base-url, --model)."),
    click.option("--model", default=None,
                 help="The model: for claude a Claude model (env GOODPUT_MODEL, config); for "
                      "openai-compatible the server's model name (required, or config)."),
    click.option("--base-url", default=None,
                 help="The server: for claude an Anthropic-compatible endpoint (env "
                      "ANTHROPIC_BASE_URL, config); for openai-compatible its /v1 URL "
                      "(required, or config)."),
    click.option("--api-key-env", default=None,
                 help="openai-compatible: env variable holding an API key (optional)."),
    click.option("--context-window", type=int, default=None,
                 help="openai-compatible: the model's context window in tokens (32768)."),
    click.option("--stream/--no-stream", default=None,
                 help="openai-compatible: ask for streamed answers (chat always streams)."),
    click.option("--max-turns", type=int, default=None, help="Budget: model turns."),
    click.option("--max-tool-calls", type=int, default=None, help="Budget: tool calls."),
    click.option("--max-input-tokens", type=int, default=None, help="Budget: input tokens."),
    click.option("--max-output-tokens", type=int, default=None, help="Budget: output tokens."),
    click.option("--max-wall-s", type=float, default=None, help="Budget: seconds."),
]

_BUDGETS = ("max_turns", "max_tool_calls", "max_input_tokens", "max_output_tokens",
            "max_wall_s")




def model_settings(planner: str, flags: dict[str, Any]) -> Any:  # noqa: ANN401
    """ClaudeSettings from config, env and flags when the planner is claude (else None).
    Without an API key: BadInput, one line pointing at the offline planner."""
    if planner == "openai-compatible":
        from goodput_agent.planner.openai_config import load_openai_settings

        return load_openai_settings(flags)
    if planner != "claude":
        return None
    from goodput_agent.planner.claude_config import load_settings, require_key

    over = {"model": flags.get("model"), "base_url": flags.get("base_url"),
            "budgets": {k: flags.get(k) for k in _BUDGETS}}
    settings = load_settings(over)
    require_key(settings)
    return settings
