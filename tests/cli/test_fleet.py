import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from goodput_agent.accounting.fleet_exposure import SACCT_HISTORY_FIELDS
from goodput_agent.cli.main import cli
from goodput_agent.core.untrusted import visible
from goodput_agent.ledger import Ledger
from tests.accounting.fleet_fixtures import record_failure, sacct_row, write_sacct

EVIL = "gpu\x1b]8;;http://x\x1b\\[red]boom[/red]\u202e01"


def _ledger(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "l.duckdb"
    with Ledger(path) as ledger:
        for job in ("11", "12"):
            record_failure(ledger, job, "gpu_hardware", EVIL)
    recent = (datetime.now(UTC) - datetime(2026, 11, 1, tzinfo=UTC)) / timedelta(hours=1) - 48
    sacct = write_sacct(tmp_path / "s.txt", [sacct_row("11", "gpu01", 8, recent, 2),
                                             sacct_row("12", "gpu02", 8, recent, 2)])
    return path, sacct


def test_fleet_json(tmp_path: Path) -> None:
    path, sacct = _ledger(tmp_path)
    out = CliRunner().invoke(cli, ["fleet", "--ledger", str(path), "--sacct", str(sacct),
                                   "--since", "7d", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["schema"] == "goodput.fleet/v1"
    assert data["causes"][0]["category"] == "gpu_hardware"
    assert data["causes"][0]["gpu_hours"] == 32
    # what `jq -r` prints holds no control character: the visible escape, as on the terminal
    assert data["nodes"][0]["node"] == visible(EVIL)
    assert "\u202e" not in out.output


def test_untrusted_node_names_are_shown_escaped(tmp_path: Path) -> None:
    path, sacct = _ledger(tmp_path)
    out = CliRunner().invoke(cli, ["fleet", "--ledger", str(path), "--sacct", str(sacct)],
                             env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output and "\u202e" not in out.output
    assert "\\x1b" in out.output and "[red]boom" in out.output  # markup printed literally


def test_bad_period_and_missing_ledger_are_one_line(tmp_path: Path) -> None:
    path, _ = _ledger(tmp_path)
    out = CliRunner().invoke(cli, ["fleet", "--ledger", str(path), "--since", "yesterday"])
    assert out.exit_code == 2 and "--since" in out.output and "Traceback" not in out.output
    out = CliRunner().invoke(cli, ["fleet", "--ledger", str(tmp_path / "none.duckdb")])
    assert out.exit_code == 2 and "none.duckdb" in out.output


def _offenders(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "o.duckdb"
    start = (datetime.now(UTC) - datetime(2026, 11, 1, tzinfo=UTC)) / timedelta(hours=1) - 300
    rows = [sacct_row(str(100 + i), f"gpu{i:02d}", 8, start + i, 100) for i in range(30)]
    with Ledger(path) as ledger:
        record_failure(ledger, "100", "node_failure", "gpu00")
        for k in range(4):
            rows.append(sacct_row(str(500 + k), "gpu99", 8, start + k, 5))
            record_failure(ledger, str(500 + k), "gpu_hardware", "gpu99")
    return path, write_sacct(tmp_path / "o.txt", rows)


def test_propose_drains_records_proposals_only(tmp_path: Path) -> None:
    path, sacct = _offenders(tmp_path)
    out = CliRunner().invoke(cli, ["fleet", "--ledger", str(path), "--sacct", str(sacct),
                                   "--propose-drains", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["offenders"] == ["gpu99"]
    assert [(p["node"], p["status"]) for p in data["proposals"]] == [("gpu99", "proposed")]
    with Ledger(path, read_only=True) as ledger:
        assert ledger.rows("SELECT count(*) AS n FROM action_events")[0]["n"] == 0


def test_live_sacct_is_asked_for_the_period(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    path, sacct = _offenders(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv_file = tmp_path / "argv"
    fake = bin_dir / "sacct"
    fake.write_text(f"#!/bin/sh\necho \"$TZ $@\" > {argv_file}\ncat {sacct}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    out = CliRunner().invoke(cli, ["fleet", "--ledger", str(path), "--slurm", "--since", "60d",
                                   "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["offenders"] == ["gpu99"]
    asked = argv_file.read_text().split()
    assert asked[:5] == ["UTC", "-a", "-X", "-P", f"--format={SACCT_HISTORY_FIELDS}"]
    since = datetime.fromisoformat(asked[asked.index("-S") + 1]).replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - timedelta(days=60) - since) < timedelta(minutes=5)


def test_period_forms(tmp_path: Path) -> None:
    path, sacct = _offenders(tmp_path)
    base = ["fleet", "--ledger", str(path), "--sacct", str(sacct), "--json"]
    window = CliRunner().invoke(cli, [*base, "--since", "2026-01-01T00:00Z/2026-02-01T00:00Z"])
    assert window.exit_code == 0 and json.loads(window.output)["until"].startswith("2026-02-01")
    bad = CliRunner().invoke(cli, [*base, "--until", "2026-13-40"])
    assert bad.exit_code == 2 and "--until" in bad.output and "Traceback" not in bad.output
    backwards = CliRunner().invoke(cli, [*base, "--since", "1d", "--until", "3d"])
    assert backwards.exit_code == 2 and "ends before it starts" in backwards.output


def test_alpha_and_correction_reach_the_test(tmp_path: Path) -> None:
    path, sacct = _offenders(tmp_path)
    out = CliRunner().invoke(cli, ["fleet", "--ledger", str(path), "--sacct", str(sacct),
                                   "--alpha", "1e-12", "--correction", "bonferroni", "--json"])
    data = json.loads(out.output)
    assert data["test"]["alpha"] == 1e-12 and data["test"]["correction"] == "bonferroni"
    assert data["offenders"] == []  # gpu99's adjusted p is small, not that small
    gpu99 = next(n for n in data["nodes"] if n["node"] == "gpu99")
    assert gpu99["adjusted_p"] == min(1.0, gpu99["p_value"] * data["test"]["nodes_tested"])
