"""The planner and chat against recordings of real model servers (tests/planner/cassettes.py):
llama.cpp's server with the real small model, replayed strictly in the fast tests; a request
that no longer matches its recording fails; and the Messages API's recording mode, tested
against the scripted Messages API fixture (no key here), recorded then replayed.

Re-record: GOODPUT_RECORD_CASSETTES=1 .venv/bin/python -m pytest tests/planner/test_cassettes.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from vcr.errors import CannotOverwriteExistingCassetteException

from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger
from tests.planner.cassettes import (
    HERE,
    REPLAY_URL,
    REPO,
    assert_no_secrets,
    cassette,
    recording,
)
from tests.servers.llama_server import MODEL_ALIAS

DEMO = "goodput_agent/demo/bundle"  # relative: the recorded requests name it the same anywhere


@pytest.fixture
def model_url(request: pytest.FixtureRequest, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> str:
    """The real server's URL when recording, else one never connected to."""
    config = tmp_path / "config.yaml"
    config.write_text("openai_compatible:\n  seed: 7\n  stream: false\n  result_chars: 1500\n"
                      "  max_tokens_per_turn: 256\n  request_timeout_s: 240\n"
                      "  retry: {attempts: 2, initial_s: 0.01, max_s: 0.02, jitter_s: 0}\n")
    monkeypatch.setenv("GOODPUT_CONFIG", str(config))
    monkeypatch.chdir(REPO)
    return request.getfixturevalue("llama_server").url if recording() else REPLAY_URL


def _investigate(url: str, ledger: Path) -> object:
    return CliRunner().invoke(cli, [
        "investigate", DEMO, "--json", "--ledger", str(ledger), "--planner", "openai-compatible",
        "--base-url", url, "--model", MODEL_ALIAS, "--context-window", "4096",
        "--max-turns", "4"])


def _recorded_by_llama_cpp(name: str) -> list[dict]:
    """The cassette's answers, checked to be llama.cpp's (its ids, our model alias)."""
    data = yaml.safe_load((HERE / f"{name}.yaml").read_text())
    answers = []
    for i in data["interactions"]:
        body = i["response"]["body"]["string"]
        assert i["request"]["uri"].endswith("/v1/chat/completions")
        if "\ndata:" in f"\n{body}":  # streamed (server-sent events, with `: ping`s)
            assert '"model":"' + MODEL_ALIAS in body.replace(" ", "") and "chatcmpl-" in body
            continue
        answer = json.loads(body)
        assert answer["id"].startswith("chatcmpl-") and answer["model"] == MODEL_ALIAS
        answers.append(answer)
    return answers


def test_planner_replays_the_real_model(model_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.duckdb"
    with cassette("llama_investigate") as cas:
        result = _investigate(model_url, ledger)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # SmolLM2-135M does not reach the analysis' verdict: the analysis' verdict is the report
    assert report["root_cause"]["category"] == "gpu_hardware"
    assert report["root_cause"]["node"] == "gpu-node-03"
    assert report["unknowns"][0].startswith("model planner: ")
    answers = _recorded_by_llama_cpp("llama_investigate")
    assert len(answers) == len(cas.data) >= 2
    with Ledger(ledger, read_only=True) as lg:
        calls = lg.rows("SELECT * FROM llm_calls WHERE investigation_id = ? ORDER BY seq",
                        [report["investigation_id"]])
    # every answer of the real server is a ledger row with its id and token counts
    assert [c["request_id"] for c in calls] == [a["id"] for a in answers]
    assert [c["input_tokens"] for c in calls] == [a["usage"]["prompt_tokens"] for a in answers]


def test_chat_turn_replays_the_real_model(model_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.duckdb"
    with cassette("llama_chat"):
        result = CliRunner().invoke(cli, [
            "chat", DEMO, "--ledger", str(ledger), "--openai-compatible", "--base-url",
            model_url, "--model", MODEL_ALIAS, "--context-window", "4096", "--max-turns", "2"],
            input="which node failed first?\n/quit\n")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    _recorded_by_llama_cpp("llama_chat")
    with Ledger(ledger, read_only=True) as lg:
        msgs = lg.rows("SELECT role FROM chat_messages ORDER BY seq")
        calls = lg.rows("SELECT request_id FROM llm_calls")
    assert msgs[0]["role"] == "user" and any(m["role"] == "assistant" for m in msgs)
    assert calls and all(str(c["request_id"]).startswith("chatcmpl-") for c in calls)


def test_a_request_that_no_longer_matches_its_recording_fails(
        model_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if recording():
        pytest.skip("replay only")
    import goodput_agent.planner.model_agent as claude

    text = claude.prompt_text
    monkeypatch.setattr(claude, "prompt_text", lambda name: text(name) + "\nOne more rule.")
    with pytest.raises(AssertionError, match="requests were not sent"), \
            cassette("llama_investigate"):
        result = _investigate(model_url, tmp_path / "ledger.duckdb")
    # the first request already differs: vcrpy refuses it, and the command fails (exit 1)
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert CannotOverwriteExistingCassetteException.__name__ in result.stderr  # type: ignore


def _claude_run(url: str, key: str, ledger: Path) -> dict:
    from goodput_agent.bundle import open_bundle
    from goodput_agent.planner.claude_config import ClaudeSettings, RetryPolicy
    from goodput_agent.planner.model_run import investigate
    from goodput_agent.toolkit import ToolContext

    settings = ClaudeSettings(api_key=key, base_url=url, model="claude-haiku-4-5",
                              retry=RetryPolicy(attempts=1))
    with Ledger(ledger) as lg, open_bundle(REPO / DEMO) as bundle:
        report = investigate(settings, ToolContext(bundle=bundle), lg,
                             question="why did job 48213 fail?", kind="failure", target=DEMO,
                             unread=dict)
        calls = lg.rows("SELECT request_id FROM llm_calls ORDER BY seq")
    return {"category": report.root_cause.category, "unknowns": report.unknowns,
            "request_ids": [c["request_id"] for c in calls]}


def test_messages_api_recording_mode_against_the_fixture(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The recording mode itself: record the scripted Messages API (a fixture standing in for
    the real API), then replay without it. The key never reaches the cassette."""
    from tests.planner.claude_fixtures import FIXTURE_KEY, happy_script
    from tests.servers.messages_api import scripted_messages_api

    monkeypatch.chdir(REPO)
    with scripted_messages_api(happy_script()) as api, \
            cassette("claude_fixture", record=True, library=tmp_path) as cas:
        recorded = _claude_run(api.url, FIXTURE_KEY, tmp_path / "a.duckdb")
    assert len(cas.data) == 4
    assert_no_secrets(tmp_path / "claude_fixture.yaml", FIXTURE_KEY)
    with cassette("claude_fixture", record=False, library=tmp_path):  # the fixture is gone
        replayed = _claude_run(REPLAY_URL.removesuffix("/v1"), "sk-ant-other",
                               tmp_path / "b.duckdb")
    assert replayed == recorded and recorded["category"] == "gpu_hardware"
    assert recorded["request_ids"] == [f"req_fixture_{n:04d}" for n in range(1, 5)]


def test_messages_api_cassette(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded from the real Messages API where a key is present; replayed without one."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if not (HERE / "claude_investigate.yaml").is_file() and not (recording() and key):
        pytest.skip("no Messages API cassette: record one with ANTHROPIC_API_KEY set and "
                    "GOODPUT_RECORD_CASSETTES=1")
    monkeypatch.chdir(REPO)
    live = recording() and bool(key)
    with cassette("claude_investigate", record=live):
        out = _claude_run("https://api.anthropic.com" if live else REPLAY_URL.removesuffix("/v1"),
                          key if live else "sk-ant-replay", tmp_path / "l.duckdb")
    assert out["category"] == "gpu_hardware" and out["request_ids"]
    assert_no_secrets(HERE / "claude_investigate.yaml", *([key] if key else []))
