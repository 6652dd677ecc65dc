"""`goodput ledger list|show` and `goodput actions` as a person reads them: whole ids at any
width, and an investigation killed mid-run reads `interrupted`, with what it had recorded."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger


def run(*args: str, width: int = 80) -> str:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def demo_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, list[int]]:
    """A ledger holding the demo investigation twice: its path, the latest id, its actions."""
    path = str(tmp_path_factory.mktemp("ledger") / "l.duckdb")
    for _ in range(2):
        CliRunner().invoke(cli, ["demo", "--ledger", path])
    with Ledger(Path(path), read_only=True) as lg:
        inv = lg.latest_investigation_id()
        actions = [r["id"] for r in lg.rows(
            "SELECT id FROM actions WHERE investigation_id = ? ORDER BY id", [inv])]
    assert inv and actions
    return path, inv, actions


@pytest.mark.parametrize("width", [120, 80, 60, 40])
def test_ledger_list_shows_every_id_whole(demo_ledger: tuple, width: int) -> None:
    path, _, _ = demo_ledger
    with Ledger(Path(path), read_only=True) as lg:
        ids = [r["id"] for r in lg.investigations()]
    out = run("ledger", "list", "--ledger", path, width=width)
    assert len(ids) == 2
    for inv in ids:
        assert inv in out
    assert max(len(ln) for ln in out.splitlines()) <= width


@pytest.mark.parametrize("width", [80, 60])
def test_actions_show_the_investigation_and_action_ids_whole(demo_ledger: tuple,
                                                             width: int) -> None:
    path, inv, actions = demo_ledger
    out = run("actions", "--ledger", path, width=width)
    assert inv in out
    for aid in actions:
        assert f"#{aid} " in out


def _killed_run(path: Path) -> str:
    """What a run killed after its second tool call leaves: rows, and no conclusion."""
    with Ledger(path) as lg:
        inv = lg.start_investigation("why did job 7 fail?", "failure", "/b", "offline", "0")
        now = datetime.now(UTC)
        call = lg.record_tool_call(inv, 1, "bundle_inventory", True, {}, "{}", None, 3.0, None,
                                   now)
        lg.record_tool_call(inv, 2, "kernel_log_scan", True, {"node": "n1"}, "{}", None, 9.0,
                            None, now)
        ev = lg.record_evidence(inv, call, "nodes/n1/kern.log", "nodes/n1/kern.log:3",
                                "NVRM: Xid 79", now)
        lg.record_claim(inv, "Xid 79 on n1", "gpu_hardware", 0.8, "supported", [ev], [])
    return inv


def test_a_killed_investigation_lists_as_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    inv = _killed_run(path)
    out = run("ledger", "list", "--ledger", str(path))
    row = next(ln for ln in out.splitlines() if inv in ln)
    assert "interrupted" in row
    rows = json.loads(run("ledger", "list", "--json", "--ledger", str(path)))
    assert rows[0]["id"] == inv and rows[0]["status"] == "interrupted"
    assert rows[0]["category"] is None  # no verdict was recorded: none is made up


def test_ledger_show_says_what_an_interrupted_run_recorded(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    inv = _killed_run(path)
    out = run("ledger", "show", inv, "--ledger", str(path), width=160)
    assert "verdict interrupted: the run stopped before it concluded" in out
    assert "tool calls 2, evidence 1, claims 1, actions 0" in out
    assert "#2 kernel_log_scan" in out and "Xid 79 on n1" in out
    data = json.loads(run("ledger", "show", inv, "--json", "--ledger", str(path)))
    assert data["status"] == "interrupted" and len(data["tool_calls"]) == 2


def test_a_concluded_investigation_is_not_interrupted(demo_ledger: tuple) -> None:
    path, inv, _ = demo_ledger
    rows = json.loads(run("ledger", "list", "--json", "--ledger", path))
    assert {r["status"] for r in rows} == {"concluded"}
    out = run("ledger", "show", inv, "--ledger", path, width=120)
    assert "interrupted" not in out and "verdict gpu_hardware" in out
