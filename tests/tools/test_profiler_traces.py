"""The slowdown question end to end through the CLI, on a shipped generated case."""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
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


# ------------------------------------------------------- runs named otherwise than by folder names

RUN_FOLDERS = {"baseline", "base", "good", "control", "before", "incident", "after"}
NEW_NAMES = {"baseline": "run-0716", "incident": "run-0718"}
LAYOUTS = [(name, layout) for name in ("s01-input-stall", "s03-straggler", "s20-gpu-throttling",
                                       "s27-host-overhead")
           for layout in ("windows", "paths", "unnamed", "one folder")
           if layout != "one folder" or name in ("s01-input-stall", "s20-gpu-throttling")]


def _began(path: Path) -> float:
    """When a trace began, read straight from its JSON (independently of the loader)."""
    import gzip

    top = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz"
                     else path.read_bytes())
    first = min(e["ts"] for e in top["traceEvents"] if "ts" in e)
    base = top.get("baseTimeNanoseconds")
    return first / 1e6 if first >= 1e15 else base / 1e9 + first / 1e6


def _window(files: list[Path]) -> dict[str, str]:
    times = [_began(p) for p in files]
    return {"start": datetime.fromtimestamp(min(times) - 300, UTC).isoformat(),
            "end": datetime.fromtimestamp(max(times) + 300, UTC).isoformat()}


def _rearrange(case: Path, to: Path, layout: str) -> Path:
    """The case with its run folders renamed (run-0716/..., run-0718/...) or removed ("one
    folder": both runs' traces side by side), and the runs given in incident.yaml as `layout`
    says: windows, paths, or nothing."""
    shutil.copytree(case, to)
    spec = yaml.safe_load((to / "incident.yaml").read_text())
    files = {"baseline": [], "incident": []}
    for f in sorted(to.rglob("*.json*")):
        rel = f.relative_to(to)
        if f.name == "expected.json" or rel.parts[0] == "metrics":
            continue
        run = run_of(rel.as_posix())
        kept = [p for p in rel.parts[:-1] if p.lower() not in RUN_FOLDERS]
        new = to.joinpath(*([] if layout == "one folder" else [NEW_NAMES[run]]), *kept, f.name)
        new.parent.mkdir(parents=True, exist_ok=True)
        if new != f:
            assert not new.exists(), new
            f.rename(new)
        files[run].append(new)
    for d in sorted(to.rglob("*"), reverse=True):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    for run in files:
        if layout in ("windows", "one folder"):
            spec[run] = _window(files[run])
        elif layout == "paths":
            spec[run] = NEW_NAMES[run]
    (to / "incident.yaml").write_text(yaml.safe_dump(spec))
    return to


@pytest.mark.parametrize(("name", "layout"), LAYOUTS)
def test_runs_named_by_incident_yaml_or_time_give_the_same_verdict(name, layout, tmp_path):
    case = CASES / name
    expected = json.loads((case / "expected.json").read_text())
    bundle = _rearrange(case, tmp_path / "b", layout)
    assert not any(p.name.lower() in RUN_FOLDERS for p in bundle.rglob("*"))
    code, report = _investigate(bundle, tmp_path)
    rc = report["root_cause"]
    assert code == 0 and (rc["category"], rc["node"], rc["rank"]) == \
        (expected["category"], expected["node"], expected["rank"])
    assert report["breakdown"]["baseline"], "the baseline run was found"
    assumed = [u for u in report["unknowns"] if u.startswith("assumption:")]
    assert bool(assumed) == (layout == "unnamed")
