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
from tests.servers.kube_api import role_rules, running_kube_api
from tests.servers.kube_fixtures import serving_cluster

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "rbac.yaml"
READ_VERBS = {"get", "list", "watch"}


def documents() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text()) if d}


def granted(rules: list[dict]) -> set[tuple[str, str, str]]:
    return {(verb, group, resource) for r in rules for verb in r["verbs"]
            for group in r["apiGroups"] for resource in r["resources"]}


def authorized_rules(namespaces: list[str]) -> list[dict]:
    """What the manifest grants with its Role bound in each of `namespaces` (as the README
    says: one RoleBinding per namespace Goodput investigates)."""
    docs = documents()
    return docs["ClusterRole"]["rules"] + [r for ns in namespaces
                                           for r in role_rules(docs["Role"], ns)]


def test_the_manifest_is_read_only_and_namespace_scoped_where_it_can_be():
    docs = documents()
    assert set(docs) == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                         "RoleBinding"}
    sa = docs["ServiceAccount"]["metadata"]
    subject = [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]
    for binding, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        assert docs[binding]["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                            "kind": role,
                                            "name": docs[role]["metadata"]["name"]}
        assert docs[binding]["subjects"] == subject
    assert docs["RoleBinding"]["metadata"]["namespace"] == docs["Role"]["metadata"]["namespace"]
    # cluster-wide only what has no namespace: nodes, and listing events (about nodes)
    assert granted(docs["ClusterRole"]["rules"]) == {("get", "", "nodes"),
                                                     ("list", "", "events")}
    rules = docs["ClusterRole"]["rules"] + docs["Role"]["rules"]
    assert {v for r in rules for v in r["verbs"]} <= READ_VERBS
    assert not any("*" in r["verbs"] + r["resources"] + r["apiGroups"] for r in rules)
    assert not {"secrets", "configmaps", "pods/exec"} & {x for r in rules for x in r["resources"]}


def _collect_all(srv, tmp_path) -> list:  # noqa: ANN001
    src = K8sSource.connect(kubeconfig=srv.kubeconfig(tmp_path / "kc"))
    targets = [K8sTarget(job="serving/vllm"), K8sTarget(job="serving/kv"),
               K8sTarget(job="train/pretrain"), K8sTarget(job="train/finetune"),
               K8sTarget(pod="serving/vllm-6d4f9c7b8-x2k9p")]
    errors = []
    for k, target in enumerate(targets):
        with BundleWriter(tmp_path / f"b{k}", {"k8s": "x"}) as writer:
            collect_k8s(writer, src, target)
        errors += json.loads((tmp_path / f"b{k}" / "manifest.json").read_text())["errors"]
    return errors


def test_every_call_of_the_source_is_covered_and_every_rule_is_used(tmp_path):
    rules = authorized_rules(["serving", "train"])
    with running_kube_api(serving_cluster(), rules=rules) as srv:
        assert _collect_all(srv, tmp_path) == []
        calls = [r for r in srv.requests if r.verb]
    assert [r for r in calls if r.code == 403] == []
    used = {(r.verb, r.group, r.resource) for r in calls}
    assert used == granted(rules)


def test_a_namespace_without_the_role_is_refused(tmp_path):
    """The Role binds in its own namespace only: a namespace not granted is not readable."""
    with running_kube_api(serving_cluster(), rules=authorized_rules(["serving"])) as srv:
        errors = _collect_all(srv, tmp_path)
        refused = {r.namespace for r in srv.requests if r.code == 403}
    assert refused == {"train"} and errors
