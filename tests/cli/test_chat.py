"""`investigate --planner claude`, `ledger show` with tokens and cost, `eval --planner claude`
and `goodput chat` under a real pty, all against the scripted Messages API server (fixture)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from tests.planner.claude_fixtures import FIXTURE_KEY, cite, happy_script
from tests.servers.messages_api import FixtureReply, scripted_messages_api, text, tool_use

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def claude_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A config file with short retry waits, and no key or endpoint from the outside."""
    config = tmp_path / "config.yaml"
    config.write_text("claude:\n  retry: {attempts: 3, initial_s: 0.01, max_s: 0.02, "
                      "jitter_s: 0}\n  budgets: {max_wall_s: 60}\n")
    monkeypatch.setenv("GOODPUT_CONFIG", str(config))
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GOODPUT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return {"GOODPUT_CONFIG": str(config)}


def test_claude_without_a_key_says_so_in_one_line(claude_env: dict, demo_bundle: Path,
                                                  tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["investigate", str(demo_bundle), "--planner", "claude",
                                 "--ledger", str(tmp_path / "l.duckdb")])
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "ANTHROPIC_API_KEY" in lines[0] and "--planner offline" in lines[0]


def test_investigate_with_claude_then_ledger_show_tokens_and_cost(
        claude_env: dict, demo_bundle: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = str(tmp_path / "l.duckdb")
    with scripted_messages_api(happy_script()) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FIXTURE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        r = CliRunner().invoke(cli, ["investigate", str(demo_bundle), "--planner", "claude",
                                     "--model", "claude-haiku-4-5", "--json", "--ledger",
                                     ledger])
        models = {req.body["model"] for req in api.requests}
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["root_cause"]["category"] == "gpu_hardware"
    assert models == {"claude-haiku-4-5"}
    shown = CliRunner().invoke(cli, ["ledger", "show", "--ledger", ledger])
    assert shown.exit_code == 0
    assert "planner claude" in shown.stdout
    m = re.search(r"4 calls · tokens in (\d+).*out (\d+) · cost \$(\d+\.\d+)",
                  shown.stdout.replace("\n", " "))
    assert m and int(m.group(1)) > 0 and int(m.group(2)) == 80 and float(m.group(3)) > 0
    as_json = json.loads(CliRunner().invoke(cli, ["ledger", "show", "--ledger", ledger,
                                                  "--json"]).stdout)
    assert as_json["llm_usage"]["calls"] == 4 and as_json["llm_usage"]["output_tokens"] == 80
    assert as_json["investigation"]["prompt_hash"].startswith("sha256:")


def test_budget_flag_ends_with_a_partial_report(claude_env: dict, demo_bundle: Path,
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with scripted_messages_api(happy_script()) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FIXTURE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        r = CliRunner().invoke(cli, ["investigate", str(demo_bundle), "--planner", "claude",
                                     "--max-turns", "2", "--json", "--ledger",
                                     str(tmp_path / "l.duckdb")])
        sent = len(api.requests)
    assert r.exit_code == 0  # the model was cut short: the failure analysis' verdict stands
    report = json.loads(r.stdout)
    assert report["root_cause"]["category"] == "gpu_hardware"
    assert "max_turns" in report["unknowns"][0] and sent == 2


def test_eval_with_claude_beside_offline(claude_env: dict, demo_bundle: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    case = tmp_path / "cases" / "demo"
    shutil.copytree(demo_bundle, case)
    (case / "expected.json").write_text(json.dumps({"case_id": "demo",
                                                    "category": "gpu_hardware"}))
    with scripted_messages_api(happy_script()) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FIXTURE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        r = CliRunner().invoke(cli, ["eval", "--planner", "claude", "--cases",
                                     str(tmp_path / "cases"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    row = out["cases"][0]
    model = row["model"]
    # the four scripted calls (two tools, a claim, the conclusion), in four turns
    assert model["category"] == "gpu_hardware" and model["tool_calls"] == 4
    assert model["valid_tool_calls"] == 4 and model["turns"] == 4
    assert model["outcome"] == "agreed" and model["seconds"] > 0
    assert model["input_tokens"] > 0 and model["cost_usd"] > 0
    assert row["offline"]["tool_calls"] == 6 and row["offline"]["input_tokens"] == 0
    assert out["accuracy"]["model"] == 1.0 and out["lowered"] == []


class _Pty:
    """`goodput chat` in a real pseudo-terminal."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "goodput_agent.cli", *args],
                                     stdin=slave, stdout=slave, stderr=slave, cwd=REPO,
                                     env={**os.environ, **env}, close_fds=True)
        os.close(slave)
        self.seen = ""

    def read_until(self, pattern: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.seen):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{pattern!r} not seen; got:\n{self.seen}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the child closed the terminal
                    raise AssertionError(f"{pattern!r} not seen; got:\n{self.seen}") from None
        return self.seen

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=20)
        finally:
            os.close(self.master)


def test_chat_in_a_terminal_streams_shows_tool_calls_and_resumes(
        claude_env: dict, demo_bundle: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "l.duckdb")

    def answer(body: dict) -> FixtureReply:
        return FixtureReply([text(f"Xid 79 on gpu-node-03 came first [E{cite(body, 'Xid')}].")])

    script = [FixtureReply([tool_use("kernel_log_events", {"node": "gpu-node-03"})]), answer,
              FixtureReply([text("The NCCL timeouts are symptoms: no NIC fault is logged.")])]
    with scripted_messages_api(script) as api:
        env = {**claude_env, "ANTHROPIC_API_KEY": FIXTURE_KEY, "ANTHROPIC_BASE_URL": api.url}
        term = _Pty(["chat", str(demo_bundle), "--ledger", ledger], env)
        head = term.read_until(r"> $")
        inv_id = re.search(r"(inv-[\w-]+)", head).group(1)
        term.send("why did the job fail?")
        out = term.read_until(r"came first \[E\d+\]\.")
        assert re.search(r"-> kernel_log_events \{\"node\":\"gpu-node-03\"\} \d+ ms", out)
        term.send("why not the network?")
        term.read_until("no NIC fault is logged")
        term.send("/actions")
        term.read_until("no actions proposed")
        eid = re.search(r"came first \[E(\d+)\]", term.seen).group(1)
        term.send(f"/evidence {eid}")
        term.read_until(r"Xid \(PCI:0000:9b:00\): 79")
        term.send("/quit")
        assert term.close() == 0
        requests = list(api.requests)
    assert all(r.body.get("stream") is True for r in requests)
    assert "finish_investigation" not in {t["name"] for t in requests[0].body["tools"]}
    assert requests[1].body["messages"][2]["content"][0]["content"].startswith(
        "<untrusted-tool-output")

    def remember(body: dict) -> FixtureReply:
        return FixtureReply([text(f"I remember {len(body['messages'])} messages.")])

    with scripted_messages_api([remember]) as api:
        env = {**claude_env, "ANTHROPIC_API_KEY": FIXTURE_KEY, "ANTHROPIC_BASE_URL": api.url}
        term = _Pty(["chat", "--investigation", inv_id, "--ledger", ledger], env)
        term.read_until(r"\(resumed\)[\s\S]*> $")
        term.send("and now?")
        term.read_until("I remember 7 messages")
        term.send("/quit")
        assert term.close() == 0
    # a conversation lists as a chat, not as an investigation that was interrupted
    listed = CliRunner().invoke(cli, ["ledger", "list", "--json", "--ledger", ledger])
    assert [(r["id"], r["status"]) for r in json.loads(listed.stdout)] == [(inv_id, "chat")]
    shown = CliRunner().invoke(cli, ["ledger", "show", inv_id, "--json", "--ledger", ledger])
    assert json.loads(shown.stdout)["status"] == "chat"


def test_chat_json_for_scripts(claude_env: dict, demo_bundle: Path, tmp_path: Path) -> None:
    """A question a line on stdin, one JSON line per answer with its tool calls."""
    def answer(body: dict) -> FixtureReply:
        return FixtureReply([text(f"Xid 79 came first [E{cite(body, 'Xid')}].")])

    script = [FixtureReply([tool_use("kernel_log_events", {"node": "gpu-node-03"})]), answer,
              FixtureReply([text("No NIC fault is logged.")])]
    with scripted_messages_api(script) as api:
        env = {**os.environ, **claude_env, "ANTHROPIC_API_KEY": FIXTURE_KEY,
               "ANTHROPIC_BASE_URL": api.url}
        proc = subprocess.run([sys.executable, "-m", "goodput_agent.cli", "chat",
                               str(demo_bundle), "--json", "--ledger",
                               str(tmp_path / "l.duckdb")], input="why?\n\nwhy not the NIC?\n",
                              env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first, second = [json.loads(ln) for ln in proc.stdout.splitlines()]
    assert re.fullmatch(r"Xid 79 came first \[E\d+\]\.", first["answer"])
    assert [c["tool"] for c in first["tool_calls"]] == ["kernel_log_events"]
    assert first["tool_calls"][0]["args"] == {"node": "gpu-node-03"} and not first["stopped"]
    assert second["answer"] == "No NIC fault is logged." and second["tool_calls"] == []
    assert first["investigation_id"] == second["investigation_id"]
