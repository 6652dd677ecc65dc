"""`goodput collect --slurm-job` and `goodput investigate --slurm-job` on the real test cluster:
the live investigation and the investigation of the collected bundle give the same verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.collect.base import Manifest
from goodput_agent.report import Report
from tests.servers.slurm import OOM_SCRIPT, SlurmCluster


@pytest.fixture
def slurm_env(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.env["SLURM_CONF"])
    monkeypatch.setenv("TZ", "UTC")
    return slurm_cluster


def _run(*args: str):  # noqa: ANN202 - click's Result
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_collect_then_investigate_equals_investigate_slurm_job(slurm_env: SlurmCluster,
                                                                tmp_path: Path) -> None:
    job = slurm_env.submit(OOM_SCRIPT, "-w", "gpu-node-02", name="oom")
    assert slurm_env.wait_done(job) == "FAILED"
    ledger = str(tmp_path / "l.duckdb")
    collected = _run("collect", "--slurm-job", job, "-o", str(tmp_path / "b"), "--json")
    assert collected.exit_code == 0, collected.output
    manifest = Manifest.model_validate_json(collected.stdout)
    assert "slurm/sacct.txt" in {f.path for f in manifest.files}
    offline = _run("investigate", str(tmp_path / "b"), "--json", "--ledger", ledger)
    live = _run("investigate", "--slurm-job", job, "--json", "--ledger", ledger)
    a, b = Report.model_validate_json(offline.stdout), Report.model_validate_json(live.stdout)
    assert offline.exit_code == live.exit_code == 0
    assert a.root_cause.category == b.root_cause.category == "gpu_oom"
    assert (a.root_cause.node, a.root_cause.rank) == (b.root_cause.node, b.root_cause.rank)
    assert [e.locator for e in a.root_cause.evidence] == [e.locator for e in b.root_cause.evidence]
    assert a.investigation_id != b.investigation_id
    # the live bundle is kept beside the ledger, to attach to a ticket
    kept = [p for p in (tmp_path / "reports").glob(f"slurm-job-{job}-*/bundle")]
    assert len(kept) == 1 and (kept[0] / "manifest.json").is_file()
    assert f"bundle collected into {kept[0]}" in live.stderr


def test_unknown_job_and_missing_slurm_are_one_line(slurm_env: SlurmCluster, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = str(tmp_path / "l.duckdb")
    r = _run("investigate", "--slurm-job", "987656", "--ledger", ledger)
    assert r.exit_code == 2
    assert r.stderr == "goodput: error: slurm: job 987656: neither scontrol nor sacct knows it\n"
    monkeypatch.setenv("PATH", str(tmp_path))
    r = _run("collect", "--slurm-job", "1", "-o", str(tmp_path / "x"))
    assert r.exit_code == 2 and r.stderr.startswith("goodput: error: slurm: scontrol: not "
                                                    "installed here")
    assert len(r.stderr.splitlines()) == 1 and not (tmp_path / "x").exists()


def test_time_limit_job(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    """The job the cluster started with (--time=1): the live investigation says time_limit."""
    job = slurm_env.jobs["timeout"]
    assert slurm_env.wait_done(job, timeout=180) == "TIMEOUT"
    r = _run("investigate", "--slurm-job", job, "--json", "--ledger", str(tmp_path / "l.duckdb"))
    report = json.loads(r.stdout)
    assert r.exit_code == 0, r.stderr
    assert report["root_cause"]["category"] == "time_limit"
    assert report["retry"]["useful"] is True


def test_manifest_text_is_shown_escaped() -> None:
    """Paths and messages come from the cluster: '[/bold]' is text, not markup (which would
    raise), and '[red]' stays visible."""
    from datetime import UTC, datetime

    from rich.console import Console

    from goodput_agent.cli.live import render_manifest
    from goodput_agent.collect.base import CollectedFile, CollectError

    now = datetime.now(UTC)
    m = Manifest(created_at=now, host="h", files=[CollectedFile(
        path="logs/[/bold]x.out", source="slurm", what="stdout [red]", collected_at=now)],
        errors=[CollectError(source="kernel_log", what="kernel log of n[/i]", kind="empty",
                             error="none")])
    console = Console(record=True, width=200)
    render_manifest(m, Path("/b"), console)
    text = console.export_text()
    assert "logs/[/bold]x.out" in text and "stdout [red]" in text and "n[/i]" in text


def test_slurm_job_and_a_bundle_together_is_a_usage_error(tmp_path: Path) -> None:
    r = _run("investigate", str(tmp_path), "--slurm-job", "12")
    assert r.exit_code == 2 and "one of them" in r.stderr


def test_plain_failure_and_success(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    """A job that exits 3 is an application error; a completed one has nothing to explain."""
    failed = slurm_env.submit("#!/bin/bash\necho step 1\nexit 3\n", name="exits-3")
    done = slurm_env.submit("#!/bin/bash\necho all good\n", name="fine")
    assert (slurm_env.wait_done(failed), slurm_env.wait_done(done)) == ("FAILED", "COMPLETED")
    ledger = str(tmp_path / "l.duckdb")
    r = _run("investigate", "--slurm-job", failed, "--json", "--ledger", ledger)
    report = json.loads(r.stdout)
    assert report["root_cause"]["category"] == "application_error", report["root_cause"]
    # sacct's row (not its JobName: one run here read "allocation" right after the job ended)
    assert any(e["source"] == "slurm/sacct.txt" and e["excerpt"].startswith(f"{failed}|")
               and "|FAILED|3:0|" in e["excerpt"] for e in report["root_cause"]["evidence"])
    r = _run("investigate", "--slurm-job", done, "--json", "--ledger", ledger)
    assert r.exit_code == 3 and json.loads(r.stdout)["root_cause"]["category"] == "unknown"
