"""`goodput chat`, the Claude planner's flags (shared with `investigate --planner claude`), and
`goodput eval --planner claude`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from goodput_agent.cli.options import ledger_option, with_options
from goodput_agent.errors import BadInput

claude_options = [
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




def claude_settings(planner: str, flags: dict[str, Any]) -> Any:  # noqa: ANN401
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


@click.command()
@click.argument("bundle", type=click.Path(path_type=Path), required=False)
@click.option("--investigation", "inv_id", default=None,
              help="Resume the chat of (or talk about) this investigation id.")
@ledger_option
@click.option("--planner", type=click.Choice(["claude", "openai-compatible"]), default="claude",
              show_default=True, help="Who answers: Claude, or a self-hosted model "
                                      "(openai-compatible: --base-url, --model).")
@click.option("--openai-compatible", "openai_compatible", is_flag=True,
              help="Short for --planner openai-compatible.")
@with_options(claude_options[1:])
@click.option("--json", "as_json", is_flag=True,
              help="For scripts: read one question a line from stdin, print one JSON line per "
                   "answer (its text, tool calls, why it stopped).")
def chat(bundle: Path | None, inv_id: str | None, ledger_path: Path | None, planner: str,
         as_json: bool = False, **flags: Any) -> None:
    """Talk with a model (Claude, or a self-hosted one) about an incident bundle or an
    investigation (/ledger /evidence N /actions /quit)."""
    from goodput_agent.ledger import open_ledger
    from goodput_agent.ledger.records import investigation_row

    if (bundle is None) == (inv_id is None):
        raise click.UsageError("give a BUNDLE or --investigation ID (one of them)")
    backend = "openai-compatible" if flags.pop("openai_compatible", False) else planner
    settings = claude_settings(backend, flags)
    with open_ledger(ledger_path) as ledger:
        if inv_id is not None:
            row = investigation_row(ledger, inv_id)
            if row is None:
                raise BadInput(f"{ledger.path}: no investigation {inv_id}")
            target, kind = row.target, row.kind
            bundle = Path(target) if target and Path(target).exists() else None
        _chat_over(settings, ledger, bundle, inv_id, kind if inv_id else None, as_json)


def _chat_over(settings: Any, ledger: Any, bundle: Path | None, inv_id: str | None,  # noqa: ANN401
               kind: str | None, as_json: bool = False) -> None:
    from contextlib import nullcontext

    from goodput_agent import __version__
    from goodput_agent.bundle import open_bundle
    from goodput_agent.chat import ChatSession
    from goodput_agent.cli.chat_repl import run_chat, run_chat_json
    from goodput_agent.kinds import infer_kind
    from goodput_agent.planner.claude import system_prompt
    from goodput_agent.toolkit import ToolContext

    client = _client_for(settings)
    who = "claude" if client is None else "openai-compatible"
    with (open_bundle(bundle) if bundle is not None else nullcontext()) as opened:
        if inv_id is None:
            assert opened is not None
            kind = infer_kind(opened.inventory)
            inv_id = ledger.start_investigation(
                f"chat about {bundle}", kind, str(bundle), f"{who}-chat", __version__,
                prompt_hash=system_prompt(chat=True)[1])
        session = ChatSession(settings, ledger, inv_id, ToolContext(bundle=opened),
                              kind or "failure", client=client)
        (run_chat_json if as_json else run_chat)(session)


def _client_for(settings: Any) -> Any:  # noqa: ANN401
    """The chat-completions client for OpenAI-compatible settings; None: the Messages API."""
    from goodput_agent.planner.openai_config import OpenAICompatSettings

    if isinstance(settings, OpenAICompatSettings):
        from goodput_agent.planner.openai_client import ChatCompletionsClient

        return ChatCompletionsClient(settings)
    return None
