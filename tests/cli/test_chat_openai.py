"""`goodput chat --openai-compatible` under a real pty, against the scripted chat-completions
server (fixture): a tool call shown, then an answer citing the evidence it saw; a server that
refuses a turn is one escaped line and the chat goes on."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from goodput_agent.cli import cli
from tests.cli.test_chat import _Pty, claude_env  # noqa: F401 - the fixture is used by name
from tests.planner.openai_fixtures import chat_script
from tests.servers.chat_completions import ChatError, scripted_chat_completions


def test_chat_turn_on_a_self_hosted_model(claude_env: dict, demo_bundle: Path,  # noqa: F811
                                          tmp_path: Path) -> None:
    script = chat_script()
    with scripted_chat_completions(script) as api:
        term = _Pty(["chat", str(demo_bundle), "--ledger", str(tmp_path / "l.duckdb"),
                     "--openai-compatible", "--base-url", api.url, "--model", "qwen-test"],
                    claude_env)
        term.read_until(r"> $")
        term.send("why did the job fail?")
        out = term.read_until(r"came first \[E\d+\]\.")
        assert "kernel_log_events" in out
        term.send("/quit")
        assert term.close() == 0
        requests = list(api.requests)
    assert all(r["stream"] is True for r in requests)  # chat shows the answer as it comes
    assert requests[1]["messages"][-1]["role"] == "tool"
    assert requests[1]["messages"][-1]["content"].startswith("<untrusted-tool-output")


def test_a_refused_turn_is_one_line_and_the_chat_goes_on(demo_bundle: Path,
                                                         tmp_path: Path) -> None:
    script = [ChatError(400, "bad request \x1b[31mred\x1b[0m"), *chat_script()]
    with scripted_chat_completions(script) as api:
        result = CliRunner().invoke(cli, [
            "chat", str(demo_bundle), "--ledger", str(tmp_path / "l.duckdb"),
            "--planner", "openai-compatible", "--base-url", api.url, "--model", "qwen-test"],
            input="first?\nwhy did the job fail?\n/quit\n")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "\x1b" not in result.output
    stopped = [x for x in result.output.splitlines() if "(stopped:" in x]
    assert len(stopped) == 1 and "HTTP 400" in stopped[0]
    assert "came first [E" in result.output  # the next question was answered
