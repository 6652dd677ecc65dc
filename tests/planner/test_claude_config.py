"""Settings precedence (defaults < config file < environment < flags), clear errors, prices,
and one request id logged per Messages API call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goodput_agent.core.errors import BadInput
from goodput_agent.planner.claude_config import ClaudeSettings, load_settings, require_key


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GOODPUT_MODEL", "GOODPUT_CONFIG"):
        monkeypatch.delenv(var, raising=False)


def test_file_then_env_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("claude:\n  model: claude-opus-4-5\n  base_url: http://gw.example:8080\n"
                   "  budgets: {max_turns: 7, max_tool_calls: 9}\n")
    monkeypatch.setenv("GOODPUT_CONFIG", str(cfg))
    s = load_settings()
    assert (s.model, s.base_url, s.budgets.max_turns, s.budgets.max_tool_calls) == (
        "claude-opus-4-5", "http://gw.example:8080", 7, 9)
    monkeypatch.setenv("GOODPUT_MODEL", "claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    s = load_settings({"budgets": {"max_turns": 3, "max_tool_calls": None}})
    assert (s.model, s.api_key, s.budgets.max_turns, s.budgets.max_tool_calls) == (
        "claude-haiku-4-5", "sk-env", 3, 9)
    assert load_settings({"model": "claude-sonnet-4-5"}).model == "claude-sonnet-4-5"


def test_flags_not_given_leave_the_defaults(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("")
    monkeypatch.setenv("GOODPUT_CONFIG", str(cfg))
    s = load_settings({"model": None, "budgets": {"max_turns": None, "max_wall_s": 30.0}})
    assert s.budgets.max_turns == ClaudeSettings().budgets.max_turns
    assert s.budgets.max_wall_s == 30.0 and s.model == ClaudeSettings().model


def test_bad_config_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("claude:\n  budgets: {max_turns: 0}\n")
    monkeypatch.setenv("GOODPUT_CONFIG", str(cfg))
    with pytest.raises(BadInput, match=r"config.yaml: claude.budgets.max_turns"):
        load_settings()
    cfg.write_text("claude:\n  model: [unclosed\n")
    with pytest.raises(BadInput, match=r"config.yaml: line \d+ not valid YAML"):
        load_settings()
    monkeypatch.setenv("GOODPUT_CONFIG", str(tmp_path / "absent.yaml"))
    with pytest.raises(BadInput, match="does not exist"):
        load_settings()
    with pytest.raises(BadInput, match="--planner offline"):
        require_key(ClaudeSettings())


def test_cost_uses_the_model_family_price_and_unknown_models_cost_none() -> None:
    s = ClaudeSettings(model="claude-sonnet-4-5-20250929")
    # 1M input at $3, 1M output at $15, 1M cache writes at 1.25x, 1M cache reads at 0.1x
    assert s.cost_usd(1_000_000, 1_000_000, 1_000_000, 1_000_000) == pytest.approx(
        3 + 15 + 3.75 + 0.3)
    assert ClaudeSettings(model="gateway-model").cost_usd(10, 10, 0, 0) is None
    priced = ClaudeSettings(model="gateway-model",
                            prices={"gateway": {"input": 1.0, "output": 2.0}})
    assert priced.cost_usd(1_000_000, 1_000_000, 0, 0) == pytest.approx(3.0)


def test_one_request_id_logged_per_call(tmp_path: Path, demo_bundle: Path,
                                        capsys: pytest.CaptureFixture) -> None:
    import structlog

    from goodput_agent.core.logs import configure
    from tests.planner.claude_fixtures import happy_script, run_claude
    from tests.servers.messages_api import FixtureError

    saved = structlog.get_config()
    configure("info", json_logs=True)  # bound to this test's captured stderr
    try:
        run_claude([FixtureError(529, "overloaded_error", "Overloaded"), *happy_script()],
                   tmp_path, demo_bundle)
    finally:
        structlog.configure(**saved)
    logs = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    calls = [x for x in logs if x["event"] == "messages_call"]
    assert [c["request_id"] for c in calls] == [f"req_fixture_{n:04d}" for n in range(2, 6)]
    retries = [x for x in logs if x["event"] == "messages_retry"]
    assert len(retries) == 1 and retries[0]["status"] == 529
    assert retries[0]["request_id"] == "req_fixture_0001"
