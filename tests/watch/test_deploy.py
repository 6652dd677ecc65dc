"""Everything in deploy/ is well-formed and says what the README promises: Kubernetes manifests
load and use known kinds, RBAC is read-only (the watch role is exactly what the watch source
uses, checked against the fixture API server's RBAC authorizer), one writer of the ledger, a
non-root image built from the wheel, a hardened systemd unit. (The image itself is not built
here: there is no container runtime on the test machines.)"""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path

import pytest
import yaml

from goodput_agent.watch.k8s_source import K8sWatchSource
from tests.servers.kube_api import FixtureCluster, role_rules, running_kube_api
from tests.watch.k8s_objects import node, pod

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
KNOWN_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
               "PersistentVolumeClaim", "Deployment", "Service", "NetworkPolicy"}
READ_VERBS = {"get", "list", "watch"}


def manifests() -> dict[str, list[dict]]:
    return {p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
            for p in sorted((DEPLOY / "kubernetes").glob("*.yaml"))}


def all_docs() -> list[dict]:
    return [d for docs in manifests().values() for d in docs]


def by_kind(kind: str) -> list[dict]:
    return [d for d in all_docs() if d["kind"] == kind]


def test_every_yaml_in_deploy_loads():
    files = sorted(DEPLOY.rglob("*.yaml")) + sorted(DEPLOY.rglob("*.yml"))
    assert {f.relative_to(DEPLOY).as_posix() for f in files} >= {
        "kubernetes/rbac.yaml", "kubernetes/watch.yaml", "kubernetes/serve.yaml",
        "prometheus/goodput-alerts.yaml"}
    for f in files:
        assert list(yaml.safe_load_all(f.read_text())), f


def test_kubernetes_manifests_use_known_kinds_and_read_only_rbac():
    for doc in all_docs():
        assert doc["kind"] in KNOWN_KINDS, doc["kind"]
        assert doc.get("apiVersion") and doc["metadata"].get("name")
    for role in by_kind("ClusterRole") + by_kind("Role"):
        for rule in role["rules"]:
            assert set(rule["verbs"]) <= READ_VERBS, (role["metadata"]["name"], rule)
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
            assert not {"secrets", "configmaps", "pods/exec"} & set(rule["resources"])
    accounts = {(a["metadata"]["namespace"], a["metadata"]["name"])
                for a in by_kind("ServiceAccount")}
    for kind in ("ClusterRole", "Role"):
        roles = {(r["metadata"].get("namespace"), r["metadata"]["name"]) for r in by_kind(kind)}
        for binding in by_kind(f"{kind}Binding"):
            assert binding["roleRef"]["kind"] == kind
            assert (binding["metadata"].get("namespace"), binding["roleRef"]["name"]) in roles
            assert {(s["namespace"], s["name"]) for s in binding["subjects"]} <= accounts
    # cluster-wide grants only for what has no namespace
    for role in by_kind("ClusterRole"):
        assert {res for r in role["rules"] for res in r["resources"]} <= {"nodes", "events"}


def test_no_container_carries_a_literal_secret_and_the_ports_are_fenced():
    (deploy,) = by_kind("Deployment")
    pod_spec = deploy["spec"]["template"]["spec"]
    for c in pod_spec["containers"]:
        for env in c.get("env", []):
            assert "value" not in env or not re.search(r"(?i)token|secret|key|pass", env["name"])
    watch = next(c for c in pod_spec["containers"] if c["name"] == "watch")
    assert any(a.startswith("--alertmanager-token-file=") for a in watch["args"])
    (policy,) = by_kind("NetworkPolicy")
    labels = deploy["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    fenced = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    opened = {p["containerPort"] for c in pod_spec["containers"] for p in c.get("ports", [])}
    assert fenced == opened
    assert all(rule["from"] for rule in policy["spec"]["ingress"])


def test_one_writer_of_the_ledger_and_restricted_containers():
    (deploy,) = by_kind("Deployment")
    spec = deploy["spec"]
    assert spec["replicas"] == 1 and spec["strategy"]["type"] == "Recreate"
    pod_spec = spec["template"]["spec"]
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert pod_spec["securityContext"]["runAsUser"] != 0
    accounts = {a["metadata"]["name"] for a in by_kind("ServiceAccount")}
    assert pod_spec["serviceAccountName"] in accounts
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    claims = {c["metadata"]["name"] for c in by_kind("PersistentVolumeClaim")}
    assert {v["persistentVolumeClaim"]["claimName"] for v in volumes.values()
            if "persistentVolumeClaim" in v} <= claims
    containers = {c["name"]: c for c in pod_spec["containers"]}
    assert set(containers) == {"watch", "oauth2-proxy"}
    for c in containers.values():
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert {m["name"] for m in c.get("volumeMounts", [])} <= set(volumes)
    watch = containers["watch"]
    (ledger,) = [a.split("=", 1)[1] for a in watch["args"] if a.startswith("--ledger=")]
    assert any(ledger.startswith(m["mountPath"] + "/") for m in watch["volumeMounts"]
               if "persistentVolumeClaim" in volumes[m["name"]])
    assert watch["args"][:2] == ["watch", "--k8s"]
    # the pages in the watch's process, on loopback, trusting only the proxy beside them
    assert "--serve=127.0.0.1:8765" in watch["args"]
    assert "--trusted-proxy=127.0.0.1/32" in watch["args"]
    proxy = containers["oauth2-proxy"]["args"]
    assert "--upstream=http://127.0.0.1:8765/" in proxy and "--pass-user-headers=true" in proxy
    ports = {p["name"] for c in containers.values() for p in c.get("ports", [])}
    for service in by_kind("Service"):
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= ports
        assert service["spec"]["selector"].items() <= \
            spec["template"]["metadata"]["labels"].items()


def test_the_watch_role_is_exactly_what_the_watch_source_uses(tmp_path):
    (nodes,) = [r for r in by_kind("ClusterRole") if r["metadata"]["name"] ==
                "goodput-watch-nodes"]
    (role,) = [r for r in by_kind("Role") if r["metadata"]["name"] == "goodput-watch"]
    ns = role["metadata"]["namespace"]
    (watch,) = [c for c in by_kind("Deployment")[0]["spec"]["template"]["spec"]["containers"]
                if c["name"] == "watch"]
    assert f"--namespace={ns}" in watch["args"]
    rules = nodes["rules"] + role_rules(role, ns)
    cluster = FixtureCluster()
    cluster.add(node("gpu-1"))
    cluster.add(pod("w-0", ns=ns))
    cluster.add(pod("other-0", ns="elsewhere"))
    with running_kube_api(cluster, rules=rules) as srv:
        src = K8sWatchSource.connect(kubeconfig=srv.kubeconfig(tmp_path / "kc"),
                                     timeout_seconds=1, namespaces=(ns,))
        cursor = src.poll(None).cursor
        cluster.add(pod("w-0", ns=ns, ended="OOMKilled"))
        assert len(src.poll(cursor).triggers) == 1
        calls = [r for r in srv.requests if r.verb]
    assert [r for r in calls if r.code == 403] == []
    used = {(r.verb, r.group, r.resource) for r in calls}
    granted = {(v, g, res) for r in rules for v in r["verbs"] for g in r["apiGroups"]
               for res in r["resources"]}
    assert used == granted


def dockerfile_stages() -> list[list[str]]:
    text = (DEPLOY / "docker" / "Dockerfile").read_text()
    lines = re.sub(r"\\\n\s*", " ", text).splitlines()
    stages: list[list[str]] = []
    for line in (ln.strip() for ln in lines):
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


def test_the_image_is_built_from_the_wheel_and_runs_as_a_user():
    build, runtime = dockerfile_stages()
    assert any("python -m build --wheel" in line for line in build)
    installs = [line for line in runtime if "pip install" in line]
    assert installs and all(".whl" in line for line in installs)
    assert not any(line.upper().startswith(("COPY . ", "ADD ")) for line in runtime)
    users = [line.split(None, 1)[1] for line in runtime if line.upper().startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    entry = [line for line in runtime if line.upper().startswith("ENTRYPOINT")]
    assert entry == ['ENTRYPOINT ["goodput"]']
    assert any(line.upper().startswith("VOLUME") and "/data" in line for line in runtime)


def test_the_systemd_unit_is_complete_and_hardened():
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # keys are case-sensitive in systemd
    unit.read(DEPLOY / "systemd" / "goodput-watch.service")
    service = unit["Service"]
    assert unit["Unit"]["Description"]
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    assert service["User"] not in ("", "root") and service["Restart"] == "on-failure"
    argv = shlex.split(service["ExecStart"])
    assert argv[1:3] == ["watch", "--slurm"]
    ledger = argv[argv.index("--ledger") + 1]
    writable = service["ReadWritePaths"].split()
    assert any(ledger.startswith(p.rstrip("/") + "/") for p in writable)
    for key, value in (("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"),
                       ("ProtectHome", "yes"), ("PrivateTmp", "yes")):
        assert service[key] == value, key
    assert service["CapabilityBoundingSet"] == ""


@pytest.mark.parametrize("rule", [r for g in yaml.safe_load(
    (DEPLOY / "prometheus" / "goodput-alerts.yaml").read_text())["groups"] for r in g["rules"]],
    ids=lambda r: r["alert"])
def test_every_alert_rule_says_what_to_investigate(rule):
    assert rule["labels"]["goodput_question"] in ("node", "latency", "failure")
    if rule["labels"]["goodput_question"] == "latency":
        assert re.fullmatch(r"\d+[smh]", rule["labels"]["goodput_window"])


def test_the_example_policy_is_one_goodput_accepts():
    from goodput_agent.approval.policy import load_policy

    policy = load_policy(DEPLOY / "policy-example.yaml")
    assert policy.tool("k8s_cordon_node").approvals_required == 2
