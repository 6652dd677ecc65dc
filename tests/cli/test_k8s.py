"""`goodput investigate --k8s-job/--k8s-pod` and `goodput collect --k8s-job` against the fixture
API server (tests/servers/kube_api.py; no real kube-apiserver can run here)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from goodput_agent.cli import cli
from tests.servers.debian import free_port
from tests.servers.kube_api import FixtureCluster, running_kube_api, write_kubeconfig
from tests.servers.kube_fixtures import serving_cluster

CASE = Path(__file__).resolve().parents[2] / "evals" / "cases" / "c30-host-oom-k8s-silent-oomkill"
JOB = "ml-train/qwen2-72b-pretrain"


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_investigate_live_and_the_collected_bundle_agree(tmp_path):
    ledger = tmp_path / "ledger.duckdb"
    with running_kube_api(FixtureCluster.from_bundle(CASE)) as srv:
        kc = str(srv.kubeconfig(tmp_path / "kc"))
        live = run("investigate", "--k8s-job", JOB, "--kubeconfig", kc, "--log-tail", "0",
                   "--json", "--ledger", str(ledger))
        collected = run("collect", "--k8s-job", JOB, "--kubeconfig", kc, "--log-tail", "0",
                        "-o", str(tmp_path / "incident"), "--json")
    assert live.exit_code == 0, live.output
    report = json.loads(live.stdout)
    cause = report["root_cause"]
    assert (cause["category"], cause["node"]) == ("host_oom", "gke-a3-pool-cedf-60cp")
    kept = list((tmp_path / "reports").glob("k8s-ml-train-qwen2-72b-pretrain-*/bundle"))
    assert len(kept) == 1 and (kept[0] / "k8s" / "pods.json").is_file()
    assert collected.exit_code == 0, collected.output
    manifest = json.loads(collected.output)
    assert manifest["target"] == {"k8s_job": JOB} and manifest["errors"] == []
    again = run("investigate", str(tmp_path / "incident"), "--json", "--ledger", str(ledger))
    assert json.loads(again.output)["root_cause"]["category"] == "host_oom"
    assert json.loads(again.output)["root_cause"]["node"] == cause["node"]


def test_one_pod_by_namespace_option(tmp_path):
    with running_kube_api(serving_cluster()) as srv:
        result = run("investigate", "--k8s-pod", "vllm-6d4f9c7b8-x2k9p", "-n", "serving",
                     "--kubeconfig", str(srv.kubeconfig(tmp_path / "kc")), "--json",
                     "--ledger", str(tmp_path / "l.duckdb"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["root_cause"]["category"] == "host_oom"


def test_unknown_job_is_one_line_exit_2(tmp_path):
    with running_kube_api(serving_cluster()) as srv:
        result = run("collect", "--k8s-job", "serving/nope", "--kubeconfig",
                     str(srv.kubeconfig(tmp_path / "kc")), "-o", str(tmp_path / "b"))
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "goodput: error: kubernetes: no Job or JobSet or PyTorchJob or Deployment or "
        "StatefulSet named nope in namespace serving"]


def test_unreachable_api_is_a_partial_report_exit_3(tmp_path):
    kc = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{free_port()}", namespace=None)
    result = run("investigate", "--k8s-job", JOB, "--kubeconfig", str(kc), "--timeout", "2",
                 "--json", "--ledger", str(tmp_path / "l.duckdb"))
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert any(u.startswith(f"missing evidence: the pods of {JOB}") and "unreachable" in u
               for u in report["unknowns"])


def test_no_kubeconfig_is_missing_evidence(tmp_path):
    result = run("collect", "--k8s-pod", "a/b", "--kubeconfig", str(tmp_path / "none"),
                 "-o", str(tmp_path / "b"), "--json")
    assert result.exit_code == 0, result.output
    errors = json.loads(result.output)["errors"]
    assert [(e["kind"], e["what"]) for e in errors] == [
        ("unreachable", "everything from Kubernetes about a/b")]


def test_one_target_at_a_time(tmp_path):
    both = run("collect", "--k8s-job", "a/b", "--slurm-job", "12", "-o", str(tmp_path / "x"))
    assert both.exit_code == 2 and "give one of --slurm-job, --k8s-job or --k8s-pod" in \
        both.output
    bad = run("collect", "--k8s-job", "a/b", "--log-since", "yesterday", "-o",
              str(tmp_path / "y"))
    assert bad.exit_code == 2 and "--log-since 'yesterday'" in bad.output
