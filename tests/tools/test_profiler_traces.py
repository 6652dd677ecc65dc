"""The slowdown question end to end through the CLI, on a shipped generated case."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from goodput_agent.cli import cli
from tools.profiler_traces import run_of

CASES = Path(__file__).resolve().parents[2] / "evals" / "slowdown_cases"


def _investigate(bundle: Path, tmp_path: Path) -> tuple[int, dict]:
    r = CliRunner().invoke(cli, ["investigate", str(bundle), "--json", "--ledger",
                                 str(tmp_path / "l.duckdb"), "--pictures", str(tmp_path / "pics")])
    return r.exit_code, json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}


def test_runs_are_told_apart_by_folder():
    assert run_of("traces/baseline/rank0.json.gz") == "baseline"
    assert run_of("nodes/n1/traces/Control/x.json") == "baseline"
    assert run_of("traces/incident/rank0.json.gz") == "incident"
    assert run_of("baseline.json") == "incident"  # a file name is not a folder


def test_throttling_case_report_has_breakdown_pictures_and_evidence(tmp_path):
    case = CASES / "s05-gpu-throttling"
    expected = json.loads((case / "expected.json").read_text())
    code, report = _investigate(case, tmp_path)
    assert code == 0
    rc = report["root_cause"]
    assert (rc["category"], rc["rank"], rc["node"]) == (expected["category"], expected["rank"],
                                                        expected["node"])
    assert any("[" in e["locator"] and "DCGM" in e["locator"] for e in rc["evidence"])
    b = report["breakdown"]
    ranks = len(list((case / "traces" / "incident").glob("*.json.gz")))
    assert b["baseline"] and len(b["incident"]["ranks"]) == ranks > 1
    pics = [Path(p) for p in report["pictures"]]
    assert {p.suffix for p in pics} == {".svg"} and all(p.is_file() for p in pics)
    assert any(a["tool"] in ("slurm_drain_node", "gpu_service") for a in report["actions"])


def test_a_truncated_trace_is_named_and_the_rest_still_counts(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(CASES / "s04-communication", bundle)
    victim = sorted(bundle.rglob("incident/*.json.gz"))[0]
    import gzip

    text = gzip.decompress(victim.read_bytes())
    victim.with_suffix("").write_bytes(text[: len(text) // 3])  # cut mid-file, uncompressed
    victim.unlink()
    code, report = _investigate(bundle, tmp_path)
    assert code == 0 and report["root_cause"]["category"] == "communication"
    notes = " ".join(report["unknowns"]) + " ".join(report["unread_reasons"].values())
    assert victim.with_suffix("").name in notes
