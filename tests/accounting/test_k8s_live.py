"""`goodput account --k8s-job` against the fixture API server (tests/servers/kube_api.py): the
pods' runs, and the cause found in the investigation `goodput investigate --k8s-job` recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.accounting.model import JobAccount
from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger
from tests.accounting.test_segments import assert_tiles
from tests.conftest import REPO
from tests.servers.kube_api import FixtureCluster, running_kube_api

CASE = REPO / "evals" / "cases" / "c30-host-oom-k8s-silent-oomkill"
JOB = "ml-train/qwen2-72b-pretrain"


def test_account_k8s_job_reuses_the_live_investigation(tmp_path: Path) -> None:
    ledger = str(tmp_path / "l.duckdb")
    with running_kube_api(FixtureCluster.from_bundle(CASE)) as srv:
        kc = str(srv.kubeconfig(tmp_path / "kc"))
        live = CliRunner().invoke(cli, ["investigate", "--k8s-job", JOB, "--kubeconfig", kc,
                                        "--log-tail", "0", "--json", "--ledger", ledger])
        assert live.exit_code == 0, live.output
        inv_id = json.loads(live.stdout)["investigation_id"]
        r = CliRunner().invoke(cli, ["account", "--k8s-job", JOB, "--kubeconfig", kc,
                                     "--log-tail", "0", "--json", "--ledger", ledger])
    assert r.exit_code == 0, r.output
    acct = JobAccount.model_validate_json(r.stdout)
    pods = json.loads((CASE / "k8s" / "pods.json").read_text())["items"]
    names = {p["metadata"]["name"] for p in pods}
    # the six workers ran together: one attempt each, all in the job's first run, their GPU-
    # hours their own (the pods did not start and end together)
    assert sorted(a.job_id.split(" run ")[0] for a in acct.attempts) == sorted(names)
    assert {a.run for a in acct.attempts} == {0}
    assert acct.allocated_gpu_hours == pytest.approx(sum(a.elapsed_s * a.gpus
                                                         for a in acct.attempts) / 3600)
    assert 0 <= acct.effective_training_time_ratio <= 1
    for a in acct.attempts:
        assert_tiles(a.segments, a.start, a.end, a.gpus)
    causes = {a.failure.investigation_id for a in acct.attempts if a.failure}
    assert inv_id in causes  # found in the ledger, not investigated again
    with Ledger(Path(ledger), read_only=True) as led:
        assert len(led.investigations()) == 1 + len(causes - {inv_id})
