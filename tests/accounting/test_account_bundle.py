"""`goodput account` of generated eval cases (evals/generator.py wrote them): the attempts come
from the scheduler record, the causes from investigations, and the segments add up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.accounting.account import AccountOptions, account_bundle
from goodput_agent.accounting.model import JobAccount
from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger
from tests.accounting.test_segments import assert_tiles
from tests.conftest import REPO

CASES = REPO / "evals" / "cases"


def _case(tmp_path: Path, name: str) -> tuple[Path, dict]:
    dest = tmp_path / name
    shutil.copytree(CASES / name, dest)
    return dest, json.loads((dest / "expected.json").read_text())


def test_slurm_case_one_attempt_cause_from_a_new_investigation(tmp_path: Path) -> None:
    bundle, expected = _case(tmp_path, "c01-gpu-hardware-xid79")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        acct = account_bundle(bundle, ledger)
        [a] = acct.attempts
        assert a.failure is not None and a.failure.category == expected["category"]
        assert a.failure.investigation_id in {r["id"] for r in ledger.investigations()}
        # AllocTRES gres/gpu=32 in the sacct row
        assert a.gpus == 32
        assert_tiles(a.segments, a.start, a.end, a.gpus)
        assert acct.allocated_gpu_hours == pytest.approx(a.elapsed_s * 32 / 3600)
        # no save lines: everything since the first step was lost to the failure
        assert "lost_progress" in acct.badput_gpu_hours_by_cause
        assert acct.badput_gpu_hours_by_failure[expected["category"]] > 0
        # a second account finds the same investigation instead of running a new one
        count = len(ledger.investigations())
        again = account_bundle(bundle, ledger)
        assert len(ledger.investigations()) == count
        assert again.attempts[0].failure == a.failure


def test_kubernetes_case_pod_runs(tmp_path: Path) -> None:
    bundle, expected = _case(tmp_path, "c12-host-oom-k8s-oomkilled")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        acct = account_bundle(bundle, ledger)
    pods = json.loads((bundle / "k8s" / "pods.json").read_text())["items"]
    assert {p for a in acct.attempts for p in [a.job_id.split(" run ")[0]]} <= \
        {p["metadata"]["name"] for p in pods}
    failed = [a for a in acct.attempts if a.failure is not None]
    assert failed and expected["category"] in {a.failure.category for a in failed}
    for a in acct.attempts:
        assert_tiles(a.segments, a.start, a.end, a.gpus)


def test_checkpoint_interval_limits_the_lost_progress(tmp_path: Path) -> None:
    bundle, _ = _case(tmp_path, "c01-gpu-hardware-xid79")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        none = account_bundle(bundle, ledger)
        every = account_bundle(bundle, ledger, AccountOptions(checkpoint_interval_s=600))
    lost = [x.badput_gpu_hours_by_cause["lost_progress"] for x in (none, every)]
    assert lost[1] < lost[0]
    assert every.attempts[0].segments[-1].kind == "failure"
    assert_tiles(every.attempts[0].segments, every.attempts[0].start, every.attempts[0].end, 32)


def test_cli_json_and_picture(tmp_path: Path) -> None:
    bundle, _ = _case(tmp_path, "c09-preempted-slurm-preemption")
    svg = tmp_path / "a.svg"
    r = CliRunner().invoke(cli, ["account", str(bundle), "--json", "--gpus", "4", "--svg",
                                 str(svg), "--ledger", str(tmp_path / "l.duckdb")])
    assert r.exit_code == 0, r.output
    acct = JobAccount.model_validate_json(r.stdout)
    assert acct.attempts[0].gpus == 4 and acct.attempts[0].failure is not None
    text = svg.read_text()
    assert text.count("<g aria-label=\"attempt ") == len(acct.attempts)
    assert "lost progress" in text


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "logs-only" / "logs").mkdir(parents=True)
    (tmp_path / "logs-only" / "logs" / "train.log").write_text("step 1 loss 2.0\n")
    r = CliRunner().invoke(cli, ["account", str(tmp_path / "logs-only"), "--ledger",
                                 str(tmp_path / "l.duckdb")])
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "no scheduler record" in r.stderr


def test_input_stall_share_from_the_traces_taken_during_the_run(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from goodput_agent.analysis.slowdown.trace_select import load_one
    from goodput_agent.analysis.slowdown.trace_steps import rank_breakdown

    case = REPO / "evals" / "slowdown_cases" / "s01-input-stall" / "traces"
    bundle = tmp_path / "b"
    shutil.copytree(case, bundle / "traces")  # baseline (3 h earlier) and incident traces
    incident = sorted((bundle / "traces" / "incident").iterdir())
    traces = [load_one(p) for p in incident]
    t0 = datetime.fromtimestamp(min(t.meta.started_at for t in traces), UTC)
    start, end = t0 - timedelta(minutes=5), t0 + timedelta(minutes=20)
    fmt = "%Y-%m-%dT%H:%M:%S"
    (bundle / "slurm").mkdir()
    (bundle / "slurm" / "sacct.txt").write_text(
        "JobID|JobName|State|ExitCode|Start|End|AllocTRES|NodeList\n"
        f"777|train|COMPLETED|0:0|{start:{fmt}}|{end:{fmt}}|cpu=32,gres/gpu=4|nid00001\n")
    (bundle / "logs").mkdir()
    (bundle / "logs" / "train.log").write_text("".join(
        f"{start + timedelta(minutes=m):%Y-%m-%d %H:%M:%S} INFO step {m} loss 2.0\n"
        for m in range(2, 25)))
    with Ledger(tmp_path / "l.duckdb") as ledger:
        acct = account_bundle(bundle, ledger)
    [a] = acct.attempts
    assert_tiles(a.segments, a.start, a.end, 4)
    shares = []
    for t in traces:
        steps = rank_breakdown(t).steps
        shares.append(sum(s.idle_input_us for s in steps) / sum(s.step_us for s in steps))
    share = sum(shares) / len(shares)
    assert share > 0.1  # the case is an input stall
    stall = acct.badput_gpu_hours_by_cause["input_stall"]
    productive_held = (end - (start + timedelta(minutes=2))).total_seconds() * 4 / 3600
    assert stall == pytest.approx(productive_held * share)
    assert acct.productive_gpu_hours == pytest.approx(productive_held * (1 - share))
    assert all("baseline" not in s.evidence for s in a.segments if s.kind == "input_stall")
