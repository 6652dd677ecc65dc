"""Exact Kubernetes workload patches, against the FIXTURE API server (tests/servers/kube_api.py:
no kube-apiserver can be installed here; it answers in the real API shapes, dry runs included).

The pod is owned the way a Deployment's pod is (pod → ReplicaSet → Deployment); the collector
saves the Deployment; a generated latency case whose --max-num-seqs was lowered 128 -> 20
(evals/latency_cases/l03, made by evals/latency_generator.py) then yields a k8s_patch_workload
that sets it back, and its preview is the server's dry-run diff. An OOMKilled container gets
its memory limit doubled; without the workload the proposals stay advice naming what is
missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from goodput_agent.analysis.latency.advice import revert
from goodput_agent.analysis.latency.decide import weigh
from goodput_agent.analysis.latency.model import (
    ConfigChange,
    LatencyResult,
    LatencyVerdict,
)
from goodput_agent.approval.gate import preview_action
from goodput_agent.bundle import scan
from goodput_agent.collect.base import BundleWriter
from goodput_agent.collect.k8s import K8sTarget, collect_k8s
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import open_ledger
from goodput_agent.planner.workload_edits import latency_fixes
from goodput_agent.sources.k8s import K8sSource
from goodput_agent.toolkit import ToolContext
from tests.approval.conftest import policy_text
from tests.servers.kube_api import FixtureCluster, running_kube_api

CASE = Path(__file__).parents[2] / "evals/latency_cases/l03-queueing-max-num-seqs-lowered"
POD = "llama-7c9d5b6f4-abcde"
ARGS = ["vllm", "serve", "llama-3.1-8b", "--max-num-seqs", "20", "--gpu-memory-utilization",
        "0.9"]


def serving(args: list[str] = ARGS, limits: dict[str, str] | None = None) -> FixtureCluster:
    """A vLLM Deployment, its ReplicaSet and pod, owned as the controllers set them."""
    c = FixtureCluster()
    ctr: dict[str, Any] = {"name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "args": args}
    if limits:
        ctr["resources"] = {"limits": limits}
    c.add({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "llama", "namespace": "serve", "uid": "d1", "generation": 2},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llama"}},
                    "template": {"metadata": {"labels": {"app": "llama"}},
                                 "spec": {"containers": [ctr]}}}})
    owner = {"apiVersion": "apps/v1", "controller": True, "blockOwnerDeletion": True}
    c.add({"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"name": "llama-7c9d5b6f4", "namespace": "serve", "uid": "r1",
                        "ownerReferences": [{**owner, "kind": "Deployment", "name": "llama",
                                             "uid": "d1"}]},
           "spec": {"selector": {"matchLabels": {"app": "llama"}}}})
    c.add({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": POD, "namespace": "serve", "labels": {"app": "llama"},
                        "creationTimestamp": "2025-06-03T17:39:15Z",
                        "ownerReferences": [{**owner, "kind": "ReplicaSet",
                                             "name": "llama-7c9d5b6f4", "uid": "r1"}]},
           "spec": {"nodeName": "gpu-node-01", "containers": [ctr]},
           "status": {"phase": "Running", "startTime": "2025-06-03T17:39:20Z"}})
    return c


def _collect(srv, tmp: Path) -> Path:  # noqa: ANN001
    out = tmp / "collected"
    with BundleWriter(out, {"k8s_pod": f"serve/{POD}"}) as w:
        collect_k8s(w, K8sSource.connect(kubeconfig=srv.kubeconfig(tmp / "kc")),
                    K8sTarget(pod=f"serve/{POD}", tail_lines=100))
    return out


def test_collect_saves_the_deployment_that_owns_the_pod(tmp_path: Path) -> None:
    with running_kube_api(serving()) as srv:
        out = _collect(srv, tmp_path)
    doc = json.loads((out / "k8s/workloads.json").read_text())
    assert doc["kind"] == "List" and [(i["kind"], i["metadata"]["name"])
                                      for i in doc["items"]] == [("Deployment", "llama")]
    assert doc["items"][0]["spec"]["template"]["spec"]["containers"][0]["args"] == ARGS
    manifest = json.loads((out / "manifest.json").read_text())
    entry = next(f for f in manifest["files"] if f["path"] == "k8s/workloads.json")
    assert "/apis/apps/v1/namespaces/serve/deployments/llama" in entry["query"]


def test_latency_revert_is_a_workload_patch_previewed_by_the_servers_dry_run(
        tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(CASE, bundle, ignore=shutil.ignore_patterns("expected.json"))
    with running_kube_api(serving()) as srv:
        (bundle / "k8s").mkdir()
        shutil.copy(_collect(srv, tmp_path) / "k8s/workloads.json", bundle / "k8s")
        with open_ledger(tmp_path / "l.duckdb") as lg:
            report = investigate_bundle(bundle, lg)
            assert report.root_cause.category == "queueing"
            rows = lg.rows("SELECT id, tool, args_json FROM actions")
            patch = next(r for r in rows if r["tool"] == "k8s_patch_workload")
            assert json.loads(patch["args_json"]) == {
                "namespace": "serve", "kind": "Deployment", "name": "llama",
                "container": "vllm", "set_args": {"--max-num-seqs": "128"}}
            assert not any(r["tool"] == "config_change" for r in rows)
            from goodput_agent.approval.policy import parse_policy

            cfg = k8s.Configuration()
            cfg.host = srv.url
            p = preview_action(lg, patch["id"], parse_policy(policy_text(), "p.yaml"),
                               ToolContext(kube=k8s.ApiClient(cfg)))
        assert p.allowed, p.reasons
        assert "  - --max-num-seqs\n-    - '20'\n+    - '128'\n" in p.dry_run, p.dry_run
        assert p.command.startswith("PATCH /apis/apps/v1/namespaces/serve/deployments/llama")
        assert not [r for r in srv.requests if r.method == "PATCH" and not r.dry_run]


def _result(category: str, changes: list[ConfigChange]) -> LatencyResult:
    """A verdict whose advice is what analysis/latency/decide.py gives: the revert of each
    change that explains the category."""
    advice = [revert(c, w) for c in changes if (w := weigh(category, c)).startswith("explains")]
    return LatencyResult(source="bundle", service_labels={}, metrics={}, windows=None,
                         config_diff=changes,
                         verdict=LatencyVerdict(category=category, summary="s", confidence=0.8,
                                                advice=advice))


LOWERED = ConfigChange(key="max_num_seqs", baseline="128", incident="20", source="args")


def test_a_revert_without_the_workload_stays_advice_naming_what_is_missing(
        tmp_path: Path) -> None:
    (tmp_path / "x.log").write_text("2025-06-03T17:00:00Z hello\n")
    inv = scan(tmp_path)
    exact, advice = latency_fixes(_result("queueing", [LOWERED]), inv)
    assert exact == [] and advice[0].text.startswith("set --max-num-seqs back to 128")
    assert advice[0].details == {"key": "max_num_seqs", "flag": "--max-num-seqs", "from": "20",
                                 "to": "128", "source": "args"}
    assert "no Deployment/StatefulSet" in (advice[0].missing or "")
    raised = LOWERED.model_copy(update={"baseline": "20", "incident": "128"})
    assert latency_fixes(_result("queueing", [raised]), inv) == ([], [])  # adds capacity
    assert latency_fixes(_result("prompt_length", [LOWERED]), inv) == ([], [])


def test_a_spec_that_no_longer_holds_the_incident_value_is_not_patched(tmp_path: Path) -> None:
    with running_kube_api(serving(["vllm", "serve", "m", "--max-num-seqs", "64"])) as srv:
        out = _collect(srv, tmp_path)
    exact, advice = latency_fixes(_result("queueing", [LOWERED]), scan(out))
    assert exact == [] and "sets --max-num-seqs 20" in (advice[0].missing or "")


def test_oomkilled_container_gets_its_memory_limit_doubled(tmp_path: Path) -> None:
    c = serving(limits={"memory": "24Gi", "nvidia.com/gpu": "1"})
    pod = c.objects[next(k for k in c.objects if k[-1] == POD)]
    pod["status"]["containerStatuses"] = [{
        "name": "vllm", "ready": False, "restartCount": 2, "image": "vllm:1", "imageID": "",
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                     "startedAt": "2025-06-03T17:40:00Z",
                                     "finishedAt": "2025-06-03T17:52:10Z"}}}]
    with running_kube_api(c) as srv:
        out = _collect(srv, tmp_path)
        with open_ledger(tmp_path / "l.duckdb") as lg:
            report = investigate_bundle(out, lg)
            assert report.root_cause.category == "host_oom"
            row = next(r for r in lg.rows("SELECT id, tool, args_json FROM actions")
                       if r["tool"] == "k8s_patch_workload")
            assert json.loads(row["args_json"]) == {
                "namespace": "serve", "kind": "Deployment", "name": "llama",
                "container": "vllm", "limits": {"memory": "48Gi"}}
            from goodput_agent.approval.policy import parse_policy

            cfg = k8s.Configuration()
            cfg.host = srv.url
            p = preview_action(lg, row["id"], parse_policy(policy_text(), "p.yaml"),
                               ToolContext(kube=k8s.ApiClient(cfg)))
        assert "-        memory: 24Gi\n+        memory: 48Gi\n" in p.dry_run, p.dry_run
    (out / "k8s/workloads.json").unlink()  # without the workload: advice, and why
    with open_ledger(tmp_path / "l2.duckdb") as lg:
        report = investigate_bundle(out, lg)
        assert not lg.rows("SELECT id FROM actions WHERE tool = 'config_change'")
    advice = next(a for a in report.advice if a.topic == "config_change")
    assert "no Deployment/StatefulSet in the bundle" in (advice.missing or "")


MANIFEST = """apiVersion: apps/v1
kind: Deployment
metadata: {name: llama, namespace: serve}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args:
        - --max-num-seqs
        - "20"
        - --max-num-batched-tokens=8192
"""


def test_files_only_bundle_edits_the_manifest_within_the_policys_paths(tmp_path: Path) -> None:
    from goodput_agent.approval.policy import parse_policy

    bundle = tmp_path / "bundle"
    shutil.copytree(CASE, bundle, ignore=shutil.ignore_patterns("expected.json"))
    (bundle / "deploy").mkdir()
    manifest = bundle / "deploy/llama.yaml"
    manifest.write_text(MANIFEST)
    with open_ledger(tmp_path / "l.duckdb") as lg:
        report = investigate_bundle(bundle, lg)
        assert not any("deploy/llama.yaml" in u for u in report.unread), report.unread
        row = next(r for r in lg.rows("SELECT id, tool, args_json FROM actions"))
        assert row["tool"] == "config_change"
        assert json.loads(row["args_json"])["path"] == str(manifest)
        inside = parse_policy(policy_text(config_change=(
            '{enabled: true, approvers: [alice], scope: {paths: ["' + str(bundle / "deploy")
            + '/*"]}}')), "p.yaml")
        p = preview_action(lg, row["id"], inside)
        assert p.allowed, p.reasons
        assert '         - --max-num-seqs\n-        - "20"\n+        - "128"\n' in p.dry_run
        outside = parse_policy(policy_text(config_change=(
            '{enabled: true, approvers: [alice], scope: {paths: ["/etc/*"]}}')), "p.yaml")
        assert "outside the files the policy lets config_change write" in \
            preview_action(lg, row["id"], outside).reasons[0]
    assert manifest.read_text() == MANIFEST  # a preview writes nothing
