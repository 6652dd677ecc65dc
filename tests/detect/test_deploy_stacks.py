"""The one grant beyond reading, for stack dumps in pods, is opt-in and exactly that: a
namespaced Role with pods/exec (create, get) bound to Goodput's service account, kept out of
deploy/kubernetes/*.yaml (the default install, which tests/watch/test_deploy.py holds
read-only)."""

from __future__ import annotations

from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"


def test_stack_dumps_rbac_is_opt_in_and_minimal() -> None:
    path = DEPLOY / "optional" / "stack-dumps.yaml"
    role, binding = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert role["kind"] == "Role" and role["metadata"]["namespace"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods/exec"],
                              "verbs": ["create", "get"]}]
    assert binding["kind"] == "RoleBinding"
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role["metadata"]["name"]}
    default = [d for p in DEPLOY.glob("*.yaml") for d in yaml.safe_load_all(p.read_text()) if d]
    accounts = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in default
                if d["kind"] == "ServiceAccount"}
    assert {(s["namespace"], s["name"]) for s in binding["subjects"]} <= accounts
    assert not any("pods/exec" in r["resources"] for d in default for r in d.get("rules", []))
