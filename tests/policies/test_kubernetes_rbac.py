"""deploy/kubernetes/rbac.yaml grants exactly what the live Kubernetes source uses: the
fixture API server (tests/servers/kube_api.py) authorizes every request with the ClusterRole's
rules as the RBAC authorizer would, records each request's verb and resource, and the test
checks that nothing was refused and that every rule was needed."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from goodput_agent.collect.base import BundleWriter
from goodput_agent.collect.k8s import K8sTarget, collect_k8s
from goodput_agent.sources.k8s import K8sSource
from tests.servers.kube_api import running_kube_api
from tests.servers.kube_fixtures import serving_cluster

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "rbac.yaml"
READ_VERBS = {"get", "list", "watch"}


def documents() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text()) if d}


def granted(rules: list[dict]) -> set[tuple[str, str, str]]:
    return {(verb, group, resource) for r in rules for verb in r["verbs"]
            for group in r["apiGroups"] for resource in r["resources"]}


def test_the_manifest_is_a_read_only_cluster_role_bound_to_a_service_account():
    docs = documents()
    assert set(docs) == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}
    binding = docs["ClusterRoleBinding"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": docs["ClusterRole"]["metadata"]["name"]}
    sa = docs["ServiceAccount"]["metadata"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"],
                                    "namespace": sa["namespace"]}]
    rules = docs["ClusterRole"]["rules"]
    assert {v for r in rules for v in r["verbs"]} <= READ_VERBS
    assert not any("*" in r["verbs"] + r["resources"] + r["apiGroups"] for r in rules)
    assert not {"secrets", "configmaps", "pods/exec"} & {x for r in rules for x in r["resources"]}


def test_every_call_of_the_source_is_covered_and_every_rule_is_used(tmp_path):
    rules = documents()["ClusterRole"]["rules"]
    with running_kube_api(serving_cluster(), rules=rules) as srv:
        src = K8sSource.connect(kubeconfig=srv.kubeconfig(tmp_path / "kc"))
        targets = [K8sTarget(job="serving/vllm"), K8sTarget(job="serving/kv"),
                   K8sTarget(job="train/pretrain"), K8sTarget(job="train/finetune"),
                   K8sTarget(pod="serving/vllm-6d4f9c7b8-x2k9p")]
        for k, target in enumerate(targets):
            with BundleWriter(tmp_path / f"b{k}", {"k8s": "x"}) as writer:
                collect_k8s(writer, src, target)
            errors = json.loads((tmp_path / f"b{k}" / "manifest.json").read_text())["errors"]
            assert errors == [], target
        calls = [r for r in srv.requests if r.verb]
    assert [r for r in calls if r.code == 403] == []
    used = {(r.verb, r.group, r.resource) for r in calls}
    assert used == granted(rules)
