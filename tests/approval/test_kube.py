"""Kubernetes actions through the gate, with the real kubernetes client against the project's
FIXTURE API server (tests/servers/kube_api.py: no kube-apiserver can be installed on this
machine from a reachable registry, so the fixture server answers in the real API shapes,
including `?dryRun=All`). Previews are server-side dry runs that change nothing; an
unapproved execution sends no mutating request; an approved one changes the object."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kubernetes import client as k8s

from goodput_agent.approval import store
from goodput_agent.approval.gate import (
    GateRefused,
    approve_action,
    execute_action,
    preview_action,
)
from goodput_agent.toolkit import ToolContext
from tests.approval.conftest import make_investigation
from tests.approval.identities import person
from tests.servers.kube_api import FixtureCluster, running_kube_api

ARGS = ["--model", "meta-llama/Llama-3.1-8B", "--max-num-seqs", "256", "--port=8000"]


def cluster() -> FixtureCluster:
    c = FixtureCluster()
    for n in ("gpu-node-01", "gpu-node-02", "gpu-node-03"):
        c.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}, "spec": {},
               "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    c.add({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "trainer-0", "namespace": "train", "labels": {
               "job-name": "trainer"}, "ownerReferences": [
               {"apiVersion": "batch/v1", "kind": "Job", "name": "trainer", "uid": "u1",
                "controller": True}]},
           "spec": {"nodeName": "gpu-node-03", "containers": [{"name": "main"}]},
           "status": {"phase": "Running"}})
    c.add({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "vllm", "namespace": "serve", "generation": 1},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "vllm"}},
                    "template": {"metadata": {"labels": {"app": "vllm"}}, "spec": {
                        "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.6.3",
                                        "args": list(ARGS)}]}}}})
    return c


def _client(url: str) -> k8s.ApiClient:
    cfg = k8s.Configuration()
    cfg.host = url
    return k8s.ApiClient(cfg)


def _mutations(srv) -> list:  # noqa: ANN001
    return [r for r in srv.requests if r.method in ("PATCH", "DELETE", "PUT", "POST")
            and not r.dry_run]


@pytest.fixture
def kube():  # noqa: ANN201
    with running_kube_api(cluster()) as srv:
        yield srv, ToolContext(kube=_client(srv.url))


def test_cordon_previews_a_dry_run_and_runs_only_after_approval(kube, ledger, policy) -> None:  # noqa: ANN001
    srv, ctx = kube
    _, ids = make_investigation(ledger, "gpu_hardware",
                                {"k8s_cordon_node": {"node": "gpu-node-03"}})
    aid = ids["k8s_cordon_node"]
    p = preview_action(ledger, aid, policy, ctx)
    assert p.allowed and p.command and p.command.startswith("PATCH /api/v1/nodes/gpu-node-03")
    assert "-  unschedulable: false" in (p.dry_run or "")
    assert "+  unschedulable: true" in (p.dry_run or "")
    assert any(r.dry_run and r.method == "PATCH" for r in srv.requests)
    with pytest.raises(GateRefused, match="no approval"):
        execute_action(ledger, aid, ctx, policy)
    assert _mutations(srv) == []
    core = k8s.CoreV1Api(ctx.kube)
    assert not core.read_node("gpu-node-03").spec.unschedulable

    t0 = datetime.now(UTC)
    approve_action(ledger, aid, person("alice"), policy, now=t0)
    with pytest.raises(GateRefused, match="expired"):
        execute_action(ledger, aid, ctx, policy, now=t0 + timedelta(hours=1))
    assert _mutations(srv) == []
    done = execute_action(ledger, aid, ctx, policy)
    assert done.ok and core.read_node("gpu-node-03").spec.unschedulable is True
    assert [(r.method, r.name) for r in _mutations(srv)] == [("PATCH", "gpu-node-03")]
    assert done.detail["output"]["response"]["spec"]["unschedulable"] is True
    assert [e.kind for e in store.events(ledger, aid)][-2:] == ["execution_started",
                                                                "execution"]


def test_patch_workload_shows_the_servers_diff_then_changes_the_flag(kube, ledger,  # noqa: ANN001
                                                                     policy) -> None:
    srv, ctx = kube
    args = {"namespace": "serve", "name": "vllm", "container": "vllm",
            "set_args": {"--max-num-seqs": "128"}, "limits": {"memory": "64Gi"}}
    _, ids = make_investigation(ledger, "queueing", {"k8s_patch_workload": args}, node=None)
    aid = ids["k8s_patch_workload"]
    p = preview_action(ledger, aid, policy, ctx)
    diff = p.dry_run or ""
    assert "-    - '256'" in diff and "+    - '128'" in diff, diff
    assert "+        memory: 64Gi" in diff, diff
    apps = k8s.AppsV1Api(ctx.kube)
    assert apps.read_namespaced_deployment("vllm", "serve").spec.template.spec.containers[
        0].args == ARGS
    approve_action(ledger, aid, person("alice"), policy)
    assert execute_action(ledger, aid, ctx, policy).ok
    c = apps.read_namespaced_deployment("vllm", "serve").spec.template.spec.containers[0]
    assert c.args == ["--model", "meta-llama/Llama-3.1-8B", "--max-num-seqs", "128",
                      "--port=8000"]
    assert c.resources.limits == {"memory": "64Gi"}
    assert [(r.method, r.resource) for r in _mutations(srv)] == [("PATCH", "deployments")]


def test_delete_pod_preview_names_the_controller(kube, ledger, policy) -> None:  # noqa: ANN001
    srv, ctx = kube
    _, ids = make_investigation(ledger, "time_limit",
                                {"k8s_delete_pod": {"namespace": "train", "pod": "trainer-0"}})
    p = preview_action(ledger, ids["k8s_delete_pod"], policy, ctx)
    assert "recreated by Job/trainer" in (p.dry_run or "") and "gpu-node-03" in p.dry_run
    assert k8s.CoreV1Api(ctx.kube).read_namespaced_pod("trainer-0", "train")
    assert _mutations(srv) == []


def test_an_unknown_node_is_refused_before_any_call(kube, ledger, policy) -> None:  # noqa: ANN001
    srv, ctx = kube
    _, ids = make_investigation(ledger, "gpu_hardware",
                                {"k8s_cordon_node": {"node": "gpu-node-99"}}, node="gpu-node-99")
    approve_action(ledger, ids["k8s_cordon_node"], person("alice"), policy)
    with pytest.raises(GateRefused, match="gpu-node-99: not a node of any partition"):
        execute_action(ledger, ids["k8s_cordon_node"], ctx, policy)
    assert _mutations(srv) == []


def test_an_api_error_is_a_failed_execution_row(kube, ledger, policy) -> None:  # noqa: ANN001
    _, ctx = kube
    _, ids = make_investigation(ledger, "time_limit",
                                {"k8s_delete_pod": {"namespace": "train", "pod": "trainer-99"}})
    aid = ids["k8s_delete_pod"]
    approve_action(ledger, aid, person("alice"), policy)
    done = execute_action(ledger, aid, ctx, policy)
    assert not done.ok and done.detail["output"]["response"][0]["status"] == 404


def test_cli_policy_check_and_actions_listing(tmp_path: Path, ledger) -> None:  # noqa: ANN001
    from click.testing import CliRunner

    from goodput_agent.cli import cli

    make_investigation(ledger, "gpu_hardware", {"k8s_cordon_node": {"node": "gpu-node-03"}})
    ledger.close()
    r = CliRunner().invoke(cli, ["actions", "--json", "--ledger", str(ledger.path)])
    assert r.exit_code == 0, r.output
    import json

    acts = json.loads(r.output)["actions"]
    assert acts[0]["tool"] == "k8s_cordon_node" and not acts[0]["allowed"]
    assert "not enabled" in acts[0]["reasons"][0]


def test_cli_approve_cordons_through_a_kubeconfig(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from goodput_agent.cli import cli
    from goodput_agent.ledger import Ledger
    from tests.approval.conftest import policy_text

    ledger, policy = tmp_path / "l.duckdb", tmp_path / "p.yaml"
    policy.write_text(policy_text())
    with Ledger(ledger) as lg:
        _, ids = make_investigation(lg, "gpu_hardware",
                                    {"k8s_cordon_node": {"node": "gpu-node-03"}})
    with running_kube_api(cluster()) as srv:
        kc = srv.kubeconfig(tmp_path / "kubeconfig")
        r = CliRunner().invoke(cli, ["approve", str(ids["k8s_cordon_node"]), "--yes",
                                     "--kubeconfig", str(kc), "--ledger", str(ledger),
                                     "--policy", str(policy)], env={"COLUMNS": "200"})
        assert r.exit_code == 0, r.output
        assert "+  unschedulable: true" in r.output and "executed" in r.output
        assert k8s.CoreV1Api(_client(srv.url)).read_node("gpu-node-03").spec.unschedulable
