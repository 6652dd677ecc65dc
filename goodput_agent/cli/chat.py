"""`goodput chat`: a conversation with a model planner about a bundle or an investigation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from goodput_agent.cli.options import ledger_option, with_options
from goodput_agent.cli.planner_options import model_settings, planner_options
from goodput_agent.core.errors import BadInput


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
@with_options(planner_options[1:])
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
    settings = model_settings(backend, flags)
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
    from goodput_agent.planner.model_agent import system_prompt
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
