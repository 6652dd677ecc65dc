"""The account's terminal table: text from logs and clusters is shown escaped, never as markup
or raw control characters."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

from goodput_agent.accounting.model import Attempt, FailureCause, JobAccount, Segment
from goodput_agent.cli.account import render_account
from goodput_agent.cli.render import TerminalConsole


def test_untrusted_text_is_escaped() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    t1 = t0 + timedelta(hours=1)
    cause = FailureCause(category="application_error", investigation_id="inv-1",
                         summary="boom \x1b[2J[bold red]not markup[/] \u202eevil")
    acct = JobAccount(target="job \x1b]8;;http://x\x07", notes=["node \x1b[31mred"], attempts=[
        Attempt(index=0, job_id="1", start=t0, end=t1, state="FAILED\x1b[0m", gpus=8,
                nodes=["gpu-1\x1b[1m"], failure=cause,
                segments=[Segment(kind="failure", start=t0, end=t1, gpus=8,
                                  cause="application_error", failure="application_error")])])
    out = io.StringIO()
    render_account(acct, TerminalConsole(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "\x1b" not in text and "\u202e" not in text
    assert "\\x1b[2J" in text and "\\u202e" in text
    assert "[bold red]not markup[/]" in text
    assert "8.00 GPU-h held" in text


def test_a_job_without_a_gpu_count_counts_its_ranks(tmp_path) -> None:  # noqa: ANN001
    """The demo's sacct record names 4 nodes and no GPUs; its logs state the 32-rank world
    (NCCL's communicator): 32 GPUs, said in a note, not 1."""
    import json

    from click.testing import CliRunner

    from goodput_agent.cli import cli
    from goodput_agent.demo import demo_bundle_path

    r = CliRunner().invoke(cli, ["account", str(demo_bundle_path()), "--json", "--ledger",
                                 str(tmp_path / "l.duckdb")], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    acct = json.loads(r.stdout)
    assert [a["gpus"] for a in acct["attempts"]] == [32]
    assert any("counted as 32 GPUs, the job's world size" in n for n in acct["notes"])
    held = sum(s["gpu_hours"] for a in acct["attempts"] for s in a["segments"])
    assert abs(held - 32 * 1447 / 3600) < 0.01
