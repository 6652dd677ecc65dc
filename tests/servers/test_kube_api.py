"""The fixture API server (tests/servers/kube_api.py) answers as a real kube-apiserver would:
checked with the official kubernetes client and with kubectl itself."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.servers.debian import PackageUnavailable, ensure_packages
from tests.servers.kube_api import STRATEGIC, FixtureCluster, running_kube_api

CASE = Path(__file__).resolve().parents[2] / "evals" / "cases" / "c30-host-oom-k8s-silent-oomkill"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def fixture_cluster() -> FixtureCluster:
    """A small hand-built cluster (fixture objects in the real API shapes)."""
    c = FixtureCluster()
    for i, node in enumerate(("gpu-a", "gpu-b", "gpu-c")):
        c.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
               "spec": {}, "status": {"allocatable": {"nvidia.com/gpu": "8"},
                                      "conditions": [{"type": "Ready", "status": "True"}]}})
        c.add({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"train-{i}", "namespace": "ml",
                            "labels": {"batch.kubernetes.io/job-name": "train",
                                       "job-name": "train", "idx": str(i)}},
               "spec": {"nodeName": node, "containers": [{"name": "main"}]},
               "status": {"phase": "Failed" if i == 1 else "Running"}})
    c.add({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "two", "namespace": "ml"},
           "spec": {"containers": [{"name": "a"}, {"name": "b"}]}, "status": {}})
    c.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending", "namespace": "q"},
           "spec": {"containers": [{"name": "main"}]},
           "status": {"containerStatuses": [{
               "name": "main", "image": "main:1", "imageID": "", "ready": False,
               "restartCount": 0, "started": False, "lastState": {},
               "state": {"waiting": {"reason": "ContainerCreating"}}}]}})
    c.add({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "vllm", "namespace": "serve"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "vllm"}},
                    "template": {"spec": {"containers": [
                        {"name": "vllm", "image": "vllm:1",
                         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                        {"name": "sidecar", "image": "s:1"}]}}}})
    c.add_log("ml", "train-1", "main", "2026-01-01T11:00:00Z step 1\n"
              "2026-01-01T11:58:00Z step 2\n2026-01-01T11:59:30Z boom\n")
    c.add_log("ml", "train-1", "main", "2026-01-01T10:00:00Z old run\n", previous=True)
    return c


@pytest.fixture()
def server():
    with running_kube_api(fixture_cluster(), now=NOW) as srv:
        yield srv


def api(srv) -> k8s.ApiClient:
    cfg = k8s.Configuration()
    cfg.host = srv.url
    return k8s.ApiClient(cfg)


def status_of(exc: ApiException) -> dict:
    return json.loads(exc.body)


def test_list_selectors_and_real_errors(server):
    core = k8s.CoreV1Api(api(server))
    names = lambda r: [p.metadata.name for p in r.items]  # noqa: E731
    assert names(core.list_namespaced_pod("ml", label_selector="job-name=train")) == \
        ["train-0", "train-1", "train-2"]
    assert names(core.list_namespaced_pod("ml", label_selector="idx in (0,2),job-name")) == \
        ["train-0", "train-2"]
    assert names(core.list_namespaced_pod("ml", label_selector="!idx")) == ["two"]
    assert names(core.list_namespaced_pod("ml", field_selector="spec.nodeName=gpu-b")) == \
        ["train-1"]
    assert names(core.list_namespaced_pod("ml", field_selector="status.phase!=Running,"
                                          "metadata.name!=two")) == ["train-1"]
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod("ml", field_selector="spec.bogus=1")
    assert err.value.status == 400
    assert status_of(err.value)["message"] == "field label not supported: spec.bogus"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("nope", "ml")
    assert status_of(err.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "kind": "pods"}, "code": 404}
    with urllib.request.urlopen(f"{server.url}/api/v1/namespaces/ml/pods") as raw:
        listed = json.load(raw)
    assert listed["kind"] == "PodList" and "kind" not in listed["items"][0]


def test_pagination_continue(server):
    core = k8s.CoreV1Api(api(server))
    first = core.list_namespaced_pod("ml", limit=2)
    assert len(first.items) == 2 and first.metadata.remaining_item_count == 2
    rest = core.list_namespaced_pod("ml", limit=2, _continue=first.metadata._continue)
    assert [p.metadata.name for p in first.items + rest.items] == \
        ["train-0", "train-1", "train-2", "two"]
    assert rest.metadata._continue is None
    assert rest.metadata.resource_version == first.metadata.resource_version
    selected = core.list_namespaced_pod("ml", limit=1, label_selector="job-name=train")
    assert selected.metadata._continue and selected.metadata.remaining_item_count is None
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod("ml", limit=1, _continue="garbage!")
    assert err.value.status == 400


def test_pod_logs(server):
    core = k8s.CoreV1Api(api(server))
    log = core.read_namespaced_pod_log
    assert log("train-1", "ml") == "step 1\nstep 2\nboom\n"
    assert log("train-1", "ml", tail_lines=1) == "boom\n"
    assert log("train-1", "ml", since_seconds=180) == "step 2\nboom\n"  # server clock: NOW
    assert log("train-1", "ml", previous=True, timestamps=True) == \
        "2026-01-01T10:00:00Z old run\n"
    with pytest.raises(ApiException) as err:
        log("train-0", "ml", previous=True)
    assert status_of(err.value)["message"] == \
        'previous terminated container "main" in pod "train-0" not found'
    with pytest.raises(ApiException) as err:
        log("pending", "q")
    assert status_of(err.value)["message"] == \
        'container "main" in pod "pending" is waiting to start: ContainerCreating'
    with pytest.raises(ApiException) as err:
        log("two", "ml")
    assert "a container name must be specified for pod two, choose one of: [a b]" in \
        status_of(err.value)["message"]


def test_patch_and_dry_run(server):
    c = api(server)
    core, apps = k8s.CoreV1Api(c), k8s.AppsV1Api(c)
    before = core.read_node("gpu-a").metadata.resource_version
    dry = core.patch_node("gpu-a", {"spec": {"unschedulable": True}}, dry_run="All",
                          _content_type=STRATEGIC)
    assert dry.spec.unschedulable is True
    assert core.read_node("gpu-a").spec.unschedulable is None
    assert core.read_node("gpu-a").metadata.resource_version == before
    core.patch_node("gpu-a", {"spec": {"unschedulable": True}}, _content_type=STRATEGIC)
    after = core.read_node("gpu-a")
    assert after.spec.unschedulable is True and after.metadata.resource_version != before
    assert [n.metadata.name for n in core.list_node(
        field_selector="spec.unschedulable=false").items] == ["gpu-b", "gpu-c"]
    # strategic merge: containers and env merge by name
    patch = {"spec": {"template": {"spec": {"containers": [
        {"name": "vllm", "env": [{"name": "B", "value": "3"}]}]}}}}
    dep = apps.patch_namespaced_deployment("vllm", "serve", patch, _content_type=STRATEGIC)
    containers = dep.spec.template.spec.containers
    assert [x.name for x in containers] == ["vllm", "sidecar"]
    assert [(e.name, e.value) for e in containers[0].env] == [("A", "1"), ("B", "3")]
    assert dep.metadata.generation == 2
    # a merge patch replaces lists whole
    dep = apps.patch_namespaced_deployment("vllm", "serve", patch,
                                           _content_type="application/merge-patch+json")
    assert [x.name for x in dep.spec.template.spec.containers] == ["vllm"]


def test_delete_pod_and_dry_run(server):
    core = k8s.CoreV1Api(api(server))
    dry = core.delete_namespaced_pod("train-1", "ml", dry_run="All")
    assert dry.metadata.deletion_timestamp is not None
    assert core.read_namespaced_pod("train-1", "ml").metadata.deletion_timestamp is None
    core.delete_namespaced_pod("train-1", "ml")
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("train-1", "ml")
    assert err.value.status == 404
    assert [(r.verb, r.resource, r.dry_run) for r in server.requests if r.verb == "delete"] == \
        [("delete", "pods", True), ("delete", "pods", False)]


def test_rbac_rules_answer_forbidden_as_the_authorizer():
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    with running_kube_api(fixture_cluster(), rules=rules, token="s3cret") as srv:
        cfg = k8s.Configuration()
        cfg.host = srv.url
        cfg.api_key = {"authorization": "Bearer s3cret"}
        core = k8s.CoreV1Api(k8s.ApiClient(cfg))
        assert len(core.list_namespaced_pod("ml").items) == 4
        with pytest.raises(ApiException) as err:
            core.read_namespaced_pod_log("train-1", "ml")
        assert status_of(err.value)["message"] == (
            'pods "train-1" is forbidden: User "system:serviceaccount:goodput:goodput" cannot '
            'get resource "pods/log" in API group "" in the namespace "ml"')
        with pytest.raises(ApiException) as err:
            core.list_node()
        assert err.value.status == 403 and status_of(err.value)["message"].endswith(
            'cannot list resource "nodes" in API group "" at the cluster scope')
        cfg.api_key = {"authorization": "Bearer wrong"}
        with pytest.raises(ApiException) as err:
            k8s.CoreV1Api(k8s.ApiClient(cfg)).list_node()
        assert err.value.status == 401


def _kubectl() -> str:
    if shutil.which("kubectl"):
        return "kubectl"
    try:
        return str(ensure_packages(["kubernetes-client"], ["kubectl"])["kubectl"])
    except PackageUnavailable as exc:
        pytest.skip(str(exc))


def test_kubectl_talks_to_it(tmp_path):
    """kubectl (1.32 here; Debian's kubernetes-client elsewhere) as a realism check: discovery,
    lists, pagination (--chunk-size), logs --previous, server-side dry run, not-found errors."""
    kubectl = _kubectl()
    with running_kube_api(FixtureCluster.from_bundle(CASE)) as srv:
        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([kubectl, "--server", srv.url, *args], capture_output=True,
                                  text=True, timeout=60)

        got = run("get", "pods", "-n", "ml-train", "-o", "json", "--chunk-size=4")
        assert got.returncode == 0, got.stderr
        shipped = json.loads((CASE / "k8s" / "pods.json").read_text())
        assert [p["status"] for p in json.loads(got.stdout)["items"]] == \
            [p["status"] for p in shipped["items"]]
        assert sum(1 for r in srv.requests if r.verb == "list" and r.resource == "pods") == 2
        logs = run("logs", "-n", "ml-train", "qwen2-72b-pretrain-worker-3", "--tail=1",
                   "--timestamps")
        assert logs.returncode == 0 and logs.stdout.strip() == (
            CASE / "logs" / "qwen2-72b-pretrain-worker-3.log").read_text().splitlines()[-1]
        prev = run("logs", "-n", "ml-train", "qwen2-72b-pretrain-worker-3", "--previous")
        assert prev.returncode == 1 and "(BadRequest): previous terminated container " \
            '"pytorch" in pod "qwen2-72b-pretrain-worker-3" not found' in prev.stderr
        node = "gke-a3-pool-cedf-60cp"
        assert run("cordon", node, "--dry-run=server").returncode == 0
        assert run("get", "node", node, "-o", "jsonpath={.spec.unschedulable}").stdout == ""
        assert run("cordon", node).returncode == 0
        assert run("get", "node", node, "-o", "jsonpath={.spec.unschedulable}").stdout == "true"
        missing = run("get", "pod", "nope", "-n", "ml-train")
        assert missing.returncode == 1
        assert 'Error from server (NotFound): pods "nope" not found' in missing.stderr


def test_watch_streams_as_the_official_client_reads_them(server):
    """The official client's Watch (iter_resp_lines over the chunked stream, typed events)
    reads the fixture's watch: changes after the resourceVersion asked, filtered by label,
    then a bookmark; a compacted version is its ApiException 410."""
    from kubernetes import watch

    core = k8s.CoreV1Api(api(server))
    start = core.list_namespaced_pod("ml").metadata.resource_version
    c = server.cluster
    pod = dict(c.objects[("pods.", "ml", "train-0")])
    c.add({**pod, "status": {"phase": "Failed"}})
    c.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other", "namespace": "q"},
           "spec": {"containers": [{"name": "main"}]}, "status": {}})
    c.remove("v1", "Pod", "ml", "two")
    w = watch.Watch()
    events = list(w.stream(core.list_namespaced_pod, "ml", resource_version=start,
                           allow_watch_bookmarks=True, timeout_seconds=1))
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED", "BOOKMARK"]
    modified, deleted = events[0]["object"], events[1]["object"]
    assert (modified.metadata.name, modified.status.phase) == ("train-0", "Failed")
    assert deleted.metadata.name == "two"
    assert w.resource_version == str(c.resource_version)
    only = [e["object"].metadata.name for e in watch.Watch().stream(
        core.list_namespaced_pod, "ml", resource_version=start, label_selector="idx=0",
        timeout_seconds=1)]
    assert only == ["train-0"]

    c.compact()
    with pytest.raises(ApiException) as gone:
        list(watch.Watch().stream(core.list_namespaced_pod, "ml", resource_version=start,
                                  timeout_seconds=1))
    assert gone.value.status == 410 and "too old resource version" in gone.value.reason
    server.api.expired_as = "http"
    with pytest.raises(ApiException) as http_gone:
        core.list_namespaced_pod("ml", watch=True, resource_version=start, timeout_seconds=1,
                                 _preload_content=False)
    assert http_gone.value.status == 410
    assert status_of(http_gone.value)["reason"] == "Expired"
