"""A model server that cannot be reached, for every planner that talks to one (Claude's Messages
API, an OpenAI-compatible server) and every kind of question: one human line naming the server
and why ("cannot reach ... at URL: connection refused"), then a report that says which planner
made it; never "internal error", never a traceback. A failure's report is the failure analysis'
verdict in the same investigation; another question's is the offline planner's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.planner.openai_config import OpenAICompatSettings
from tests.planner.claude_fixtures import fast_retry, settings_for

REPO = Path(__file__).resolve().parents[2]
LATENCY = REPO / "evals" / "latency_cases" / "l01-queueing-arrival-surge"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: connecting is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def planners(url: str) -> dict[str, object]:
    return {"claude": settings_for(url),
            "openai-compatible": OpenAICompatSettings(base_url=url, model="m",
                                                      retry=fast_retry())}


@pytest.mark.parametrize("which", ["claude", "openai-compatible"])
@pytest.mark.parametrize("kind", ["failure", "latency"])
def test_an_unreachable_model_is_one_line_and_a_report_that_says_whose(
        which: str, kind: str, tmp_path: Path, demo_bundle: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    bundle = demo_bundle if kind == "failure" else LATENCY
    with Ledger(tmp_path / "l.duckdb") as lg:
        offline = investigate_bundle(bundle, lg)
        report = investigate_bundle(bundle, lg, claude=planners(url)[which])
    err = capsys.readouterr().err
    said = [ln for ln in err.splitlines() if ln.startswith("goodput: cannot reach")]
    assert len(said) == 1 and url in said[0] and "connection refused" in said[0], err
    assert "Traceback" not in err and "internal error" not in err
    assert report.root_cause.category == offline.root_cause.category
    assert (report.root_cause.node, report.root_cause.rank) == (offline.root_cause.node,
                                                                offline.root_cause.rank)
    if kind == "failure":  # the same investigation: the analysis' verdict, the model's failure
        assert report.planner == which and "failure analysis' verdict is the report" in said[0]
        assert any("cannot reach" in u for u in report.unknowns)
    else:
        assert report.planner == "offline-playbook"
        assert "offline planner's report follows" in said[0]
    assert offline.planner == "offline-playbook"


def test_the_cli_with_claude_unreachable(tmp_path: Path) -> None:
    """What a person sees: the line, the report with its planner, exit 0; logs as JSON lines
    when stderr is not a terminal, as short human lines with none of the JSON on one."""
    url = f"http://127.0.0.1:{closed_port()}"
    config = tmp_path / "config.yaml"
    config.write_text("claude:\n  retry: {attempts: 2, initial_s: 0.01, max_s: 0.02, "
                      "jitter_s: 0}\n")
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": url,
           "GOODPUT_CONFIG": str(config), "GOODPUT_LEDGER": str(tmp_path / "l.duckdb")}
    proc = subprocess.run([sys.executable, "-m", "goodput_agent.cli", "investigate",
                           str(LATENCY), "--planner", "claude", "--json"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["planner"] == "offline-playbook"
    lines = proc.stderr.splitlines()
    assert f"goodput: cannot reach the Claude API at {url}: connection refused; the offline " \
           "planner's report follows" in lines
    assert all(json.loads(ln)["event"] for ln in lines if ln.startswith("{"))  # JSON lines
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_logs_on_a_terminal_are_short_human_lines() -> None:
    from goodput_agent.core.logs import human_line

    text = human_line(None, "warning", {"event": "messages_retry", "level": "warning",
                                        "timestamp": "2026-12-04T18:00:00Z", "attempt": 1,
                                        "status": None, "error": "APIConnectionError"})
    assert text == ("goodput: warning: messages retry (attempt=1, error=APIConnectionError)")
