"""Settings of the OpenAI-compatible planner: the config file's `openai_compatible:` section,
flags over it, the context window bounding what is sent, an optional API key, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.core.errors import BadInput
from goodput_agent.planner.openai_client import ChatCompletionsClient
from goodput_agent.planner.openai_config import load_openai_settings
from tests.planner.openai_fixtures import chat_script
from tests.servers.chat_completions import scripted_chat_completions


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config.yaml"
    monkeypatch.setenv("GOODPUT_CONFIG", str(path))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return path


def test_config_section_and_context_window(config: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    config.write_text("openai_compatible:\n  base_url: http://vllm.internal:8000/v1\n"
                      "  model: Qwen/Qwen2.5-7B-Instruct\n  context_window: 8192\n"
                      "  stream: true\n  api_key_env: SITE_KEY\n  budgets: {max_turns: 9}\n")
    monkeypatch.setenv("SITE_KEY", "k-123")
    s = load_openai_settings({"max_tool_calls": 7})
    assert (s.base_url, s.model, s.stream, s.api_key) == (
        "http://vllm.internal:8000/v1", "Qwen/Qwen2.5-7B-Instruct", True, "k-123")
    assert (s.budgets.max_turns, s.budgets.max_tool_calls) == (9, 7)
    # a quarter of the window for one answer; history compacted before three quarters
    assert s.max_tokens_per_turn == 2048 and s.context_tokens == 8192 * 3 // 4 - 2048
    assert s.result_chars == 3000


def test_flags_win_and_the_default_window(config: Path) -> None:
    config.write_text("openai_compatible:\n  base_url: http://a/v1\n  model: a\n")
    s = load_openai_settings({"base_url": "http://b/v1", "model": "b"})
    assert (s.base_url, s.model, s.context_window, s.api_key) == ("http://b/v1", "b", 32768,
                                                                  None)


def test_missing_model_is_one_line(config: Path) -> None:
    config.write_text("claude:\n  model: claude-sonnet-4-5\n")  # not this planner's section
    with pytest.raises(BadInput, match="--model NAME") as err:
        load_openai_settings({"base_url": "http://b/v1"})
    assert str(config) in str(err.value) and "\n" not in str(err.value)


def test_bad_value_names_the_key(config: Path) -> None:
    config.write_text("openai_compatible:\n  base_url: http://a/v1\n  model: a\n"
                      "  context_window: 100\n")
    with pytest.raises(BadInput, match=r"openai_compatible\.context_window"):
        load_openai_settings({})


@pytest.mark.parametrize("key", [None, "k-secret"])
def test_api_key_is_optional(config: Path, monkeypatch: pytest.MonkeyPatch,
                             key: str | None) -> None:
    config.write_text("{}\n")
    if key:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    with scripted_chat_completions(chat_script()) as api:
        settings = load_openai_settings({"base_url": api.url, "model": "m"})
        ChatCompletionsClient(settings).create(messages=[{"role": "user", "content": "hi"}])
        assert api.auth == [f"Bearer {key}" if key else None]
