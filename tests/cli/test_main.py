"""The command line as a user runs it: exit codes, one-line errors, the JSON contract."""

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger
from goodput_agent.report import Report, report_json_schema


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "goodput_agent.cli", *args],
                          capture_output=True, text=True, timeout=300)


def test_demo_json_validates_against_the_exported_schema(tmp_path: Path) -> None:
    proc = run("demo", "--json", "--ledger", str(tmp_path / "l.duckdb"))
    assert proc.returncode == 0, proc.stderr
    report = Report.model_validate_json(proc.stdout)
    assert report.root_cause.category == "gpu_hardware"
    assert report.root_cause.node == "gpu-node-03" and report.root_cause.rank == 29
    assert report.root_cause.gpu == "0000:9b:00"
    assert report.retry.useful is True
    assert {a.tool for a in report.actions} >= {"slurm_drain_node", "slurm_requeue_job"}
    assert all(a.status == "proposed" for a in report.actions)
    schema = json.loads(run("schema", "report").stdout)
    assert schema["$id"] == "goodput.report/v1"
    assert set(schema["required"]) >= {"kind", "root_cause", "retry"}
    data = json.loads(proc.stdout)
    assert data["schema"] == "goodput.report/v1"
    for key in ("kind", "root_cause", "alternatives", "retry", "actions", "unread"):
        assert key in data


def test_ledger_show_holds_claims_evidence_and_tool_calls(tmp_path: Path) -> None:
    ledger = str(tmp_path / "l.duckdb")
    report = Report.model_validate_json(run("demo", "--json", "--ledger", ledger).stdout)
    proc = run("ledger", "show", report.investigation_id or "", "--json", "--ledger", ledger)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert [t["tool"] for t in rec["tool_calls"]][:2] == ["bundle_inventory", "scheduler_state"]
    assert rec["claims"][0]["status"] == "supported"
    cited = rec["claims"][0]["supporting"]  # real JSON: a list, not a list inside a string
    held = {e["id"] for e in rec["evidence"]}
    assert cited and set(cited) <= held
    assert rec["conclusion"]["category"] == "gpu_hardware"
    human = run("ledger", "show", report.investigation_id or "", "--ledger", ledger)
    assert "Claims" in human.stdout and "Tool calls" in human.stdout


def test_tar_gz_bundle_gives_the_same_verdict(tmp_path: Path, demo_bundle: Path) -> None:
    archive = tmp_path / "incident.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(demo_bundle, arcname="incident")
    proc = run("investigate", str(archive), "--json", "--ledger", str(tmp_path / "l.duckdb"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["root_cause"]["node"] == "gpu-node-03"


def _one_line_error(proc: subprocess.CompletedProcess[str], name: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert name in lines[0]


def test_investigate_draws_the_failure_timeline_and_stores_the_picture_list(
        tmp_path: Path, demo_bundle: Path) -> None:

    ledger = tmp_path / "l.duckdb"
    proc = run("investigate", str(demo_bundle), "--json", "--ledger", str(ledger))
    report = Report.model_validate_json(proc.stdout)
    timeline = tmp_path / "reports" / (report.investigation_id or "") / "failure-timeline.svg"
    assert report.pictures == [str(timeline.resolve())]
    svg = timeline.read_text()
    assert "Failure timeline" in svg and "first failure" in svg and "gpu-node-03" in svg
    with Ledger(ledger, read_only=True) as lg:
        stored = lg.rows("SELECT report_json FROM conclusions WHERE investigation_id = ?",
                         [report.investigation_id])[0]["report_json"]
    assert json.loads(stored)["pictures"] == report.pictures  # stored with its pictures
    human = run("investigate", str(demo_bundle), "--ledger", str(ledger))
    assert "failure-timeline.svg" in human.stdout  # the report a person reads lists it


def test_empty_dir_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _one_line_error(run("investigate", str(tmp_path / "empty"), "--ledger",
                        str(tmp_path / "l.duckdb")), "empty")


def test_missing_path_and_non_bundle_file_are_bad_input(tmp_path: Path) -> None:
    _one_line_error(run("investigate", str(tmp_path / "nope")), "nope")
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    _one_line_error(run("investigate", str(f)), "notes.txt")


def test_bad_incident_yaml_names_the_file(tmp_path: Path) -> None:
    b = tmp_path / "b"
    b.mkdir()
    (b / "incident.yaml").write_text("question: [unclosed\n")
    (b / "rank0.log").write_text("Traceback (most recent call last):\nValueError: x\n")
    _one_line_error(run("investigate", str(b), "--ledger", str(tmp_path / "l.duckdb")),
                    "incident.yaml")


@pytest.mark.parametrize("name,content", [
    ("blob.bin", bytes(range(256)) * 400),
    ("slurm/sacct.json", b'{"jobs": [{"job_id": 12, "state": {"current": ["FAI'),
    ("logs/huge.log", b"x" * (10 * 1024 * 1024)),
])
def test_bad_files_are_listed_unread_or_read_without_traceback(tmp_path: Path, demo_bundle: Path,
                                                              name: str, content: bytes) -> None:
    import shutil

    b = tmp_path / "b"
    shutil.copytree(demo_bundle, b)
    (b / name).parent.mkdir(parents=True, exist_ok=True)
    (b / name).write_bytes(content)
    proc = run("investigate", str(b), "--json", "--ledger", str(tmp_path / "l.duckdb"))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    assert report["root_cause"]["node"] == "gpu-node-03"  # one bad file spoils nothing
    if name != "logs/huge.log":
        assert name in report["unread"]
        assert report["unread_reasons"][name]
        assert "\n" not in report["unread_reasons"][name]


def test_no_evidence_exits_3_with_unknown(tmp_path: Path) -> None:
    b = tmp_path / "b"
    b.mkdir()
    (b / "rank0.log").write_text("2024-05-01 10:00:00,000 INFO step 1 loss 2.0\n" * 50)
    proc = run("investigate", str(b), "--json", "--ledger", str(tmp_path / "l.duckdb"))
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout)["root_cause"]["category"] == "unknown"


def test_a_bad_ledger_keeps_its_bytes_and_says_so(tmp_path: Path, demo_bundle: Path) -> None:
    ledger = tmp_path / "l.duckdb"
    ledger.write_bytes(b"garbage" * 1000)
    before = ledger.read_bytes()
    _one_line_error(run("investigate", str(demo_bundle), "--ledger", str(ledger)), "l.duckdb")
    assert ledger.read_bytes() == before


def test_rich_report_renders_for_people(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["demo", "--ledger", str(tmp_path / "l.duckdb")],
                                terminal_width=140)
    assert result.exit_code == 0, result.output
    assert "gpu_hardware" in result.output and "gpu-node-03" in result.output
    assert "Proposed actions" in result.output


def test_tools_lists_read_only_tools_with_descriptions() -> None:
    proc = run("tools", "--json")
    tools = {t["name"]: t for t in json.loads(proc.stdout)}
    assert {"bundle_inventory", "scheduler_state", "kernel_log_events", "job_log_events",
            "log_activity"} <= set(tools)
    assert all(t["read_only"] and t["description"] for t in tools.values())


def test_schema_is_the_report_model() -> None:
    assert report_json_schema()["properties"]["kind"]["enum"] == ["failure", "slowdown", "latency"]


def test_help_and_usage_errors_are_clicks_not_internal_errors() -> None:
    assert run("investigate", "--help").returncode == 0
    bad = run("investigate", "--kind", "banana", "x")
    assert bad.returncode == 2 and "internal error" not in bad.stderr


def test_eval_without_cases_is_bad_input(tmp_path: Path) -> None:
    _one_line_error(run("eval", "--cases", str(tmp_path)), str(tmp_path))


def test_a_reader_that_leaves_early_is_not_an_error(tmp_path: Path) -> None:
    """`goodput demo | head -1`: the terminal report meets a closed pipe; exit 0, no traceback
    (rich's own handler would exit 1, the code of an internal error)."""
    env = {"XDG_DATA_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        ["bash", "-c", f"'{sys.executable}' -m goodput_agent.cli demo | head -c 1 >/dev/null;"
                       " echo ${PIPESTATUS[0]}"],
        capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.strip() == "0", proc.stderr
    assert "Traceback" not in proc.stderr
