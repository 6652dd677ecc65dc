"""The live Kubernetes source against the fixture API server (tests/servers/kube_api.py; no
real kube-apiserver can run here): workload lookup by each controller's labels, pagination and
caps, logs with previous/tail/since, and each typed error."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from goodput_agent.sources.errors import Forbidden, NotFound, TimedOut, Unreachable
from goodput_agent.sources.k8s import (
    K8sSource,
    containers_with_logs,
    selector_text,
    split_ref,
)
from tests.servers.debian import free_port
from tests.servers.kube_api import running_kube_api, write_kubeconfig
from tests.servers.kube_fixtures import JOB_UID, serving_cluster


@pytest.fixture()
def server():
    with running_kube_api(serving_cluster()) as srv:
        yield srv


def connect(srv, tmp_path: Path, **options) -> K8sSource:
    return K8sSource.connect(kubeconfig=srv.kubeconfig(tmp_path / "kubeconfig",
                                                       namespace="serving"), **options)


def names(pods: list[dict]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_workloads_by_their_controllers_labels(server, tmp_path):
    src = connect(server, tmp_path)
    assert src.namespace == "serving"  # from the kubeconfig context
    dep = src.workload("serving", "vllm")
    assert (dep.kind, dep.selector) == ("Deployment", "app=vllm")
    assert names(src.workload_pods(dep)) == ["vllm-6d4f9c7b8-x2k9p"]
    sts = src.workload("serving", "kv")
    assert (sts.kind, names(src.workload_pods(sts))) == ("StatefulSet", ["kv-0"])
    js = src.workload("train", "pretrain")
    assert (js.kind, js.selector) == ("JobSet", "jobset.sigs.k8s.io/jobset-name=pretrain")
    assert names(src.workload_pods(js)) == ["pretrain-workers-0-0-abcde",
                                           "pretrain-workers-1-0-abcde"]
    job = src.workload("train", "finetune")
    assert job.selector == f"batch.kubernetes.io/controller-uid={JOB_UID}"
    # the earlier run's pod shares job-name but not the controller-uid
    assert names(src.workload_pods(job)) == ["finetune-0-q7x2z", "finetune-1-q7x2z"]
    with pytest.raises(NotFound) as err:
        src.workload("train", "nothing")
    assert "no Job or JobSet or PyTorchJob or Deployment or StatefulSet named nothing" in \
        str(err.value)
    assert src.workload("serving", "vllm", "deployment").kind == "Deployment"


def test_refs_and_selectors():
    assert split_ref("train/llama", "default") == ("train", None, "llama")
    assert split_ref("llama", "ns") == ("ns", None, "llama")
    assert split_ref("train/pytorchjob/llama", "d") == ("train", "pytorchjob", "llama")
    with pytest.raises(ValueError):
        split_ref("a/b/c", "d")
    assert selector_text({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["x", "y"]},
        {"key": "gone", "operator": "DoesNotExist"}]}) == "a=1,b=2,tier in (x,y),!gone"


def test_pagination_and_cap(server, tmp_path):
    src = connect(server, tmp_path, page_size=1)
    assert len(src.pods("serving")) == 3
    pages = [r for r in server.requests if r.verb == "list" and r.namespace == "serving"]
    assert len(pages) == 3 and all(r.query["limit"] == ["1"] for r in pages)
    capped = connect(server, tmp_path, page_size=1, max_items=2)
    assert len(capped.pods("serving")) == 2
    assert capped.truncated == ["list pods -n serving -l : first 2 items only"]


def test_events_nodes_and_logs(server, tmp_path):
    src = connect(server, tmp_path)
    pods = src.pods("serving", "app=vllm")
    events = src.events("serving", {("Pod", "vllm-6d4f9c7b8-x2k9p"), ("Deployment", "vllm")},
                        {"gpu-node-07"})
    assert sorted(e["reason"] for e in events) == ["BackOff", "NodeHasSufficientMemory"]
    node = src.nodes({"gpu-node-07", "gone-node"})
    assert [n["status"]["allocatable"]["nvidia.com/gpu"] for n in node] == ["7"]
    assert pods[0]["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"] == \
        "OOMKilled"
    prev = src.log("serving", "vllm-6d4f9c7b8-x2k9p", "vllm", previous=True, tail_lines=1)
    assert prev == "2026-03-02T09:31:11Z INFO Avg prompt throughput: 1200 tokens/s\n"
    # waiting to restart (CrashLoopBackOff): the current log is the last run's, as the kubelet
    # serves it; a restarted running container has a distinct previous log
    assert src.log("serving", "vllm-6d4f9c7b8-x2k9p", "vllm", tail_lines=1) == prev
    assert src.log("serving", "vllm-6d4f9c7b8-x2k9p", "proxy", previous=True).endswith(
        "refused, exiting\n")
    assert containers_with_logs(pods[0]) == [("vllm", False), ("proxy", True)]
    with pytest.raises(NotFound):
        src.pod("serving", "nope")


def test_forbidden_is_typed_with_the_servers_message(tmp_path):
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    with running_kube_api(serving_cluster(), rules=rules) as srv:
        src = connect(srv, tmp_path)
        assert len(src.pods("serving")) == 3
        with pytest.raises(Forbidden) as err:
            src.nodes({"gpu-node-07"})
        assert err.value.kind == "forbidden" and err.value.command == "get node gpu-node-07"
        assert 'cannot get resource "nodes" in API group "" at the cluster scope' in \
            str(err.value)
    with running_kube_api(serving_cluster(), token="right") as srv:
        path = srv.kubeconfig(tmp_path / "kc")
        path.write_text(path.read_text().replace('"right"', '"wrong"'))
        with pytest.raises(Forbidden, match="401 Unauthorized"):
            K8sSource.connect(kubeconfig=path).pods("default")


def test_unreachable_and_unconfigured(tmp_path):
    port = free_port()  # nothing listens there
    kc = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}", namespace="train",
                          context="ctx")
    src = K8sSource.connect(kubeconfig=kc, context="ctx", timeout_s=2)
    assert src.namespace == "train"
    started = time.monotonic()
    with pytest.raises(Unreachable) as err:
        src.workload("train", "llama")
    assert time.monotonic() - started < 10
    assert f"127.0.0.1:{port}" in str(err.value) and "unreachable" in str(err.value)
    with pytest.raises(Unreachable, match="no usable configuration"):
        K8sSource.connect(kubeconfig=tmp_path / "missing")
    with pytest.raises(Unreachable, match="no usable configuration"):
        K8sSource.connect(in_cluster=True)  # no KUBERNETES_SERVICE_HOST here


def test_a_server_that_does_not_answer_times_out(tmp_path):
    with socket.socket() as mute:  # accepts connections, never answers
        mute.bind(("127.0.0.1", 0))
        mute.listen(1)
        port = mute.getsockname()[1]
        kc = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}", namespace=None)
        src = K8sSource.connect(kubeconfig=kc, timeout_s=0.5)
        with pytest.raises(TimedOut, match="no answer within 0.5 s"):
            src.pods("default")


def test_events_by_field_selector_or_one_namespace_list(server, tmp_path, monkeypatch):
    import goodput_agent.sources.k8s as k8s_mod

    involved = {("Pod", "vllm-6d4f9c7b8-x2k9p"), ("Deployment", "vllm")}
    src = connect(server, tmp_path)
    few = src.events("serving", involved)
    asked = [r.query.get("fieldSelector") for r in server.requests
             if r.resource == "events" and r.namespace == "serving"]
    assert sorted(a[0] for a in asked) == [
        "involvedObject.kind=Deployment,involvedObject.name=vllm",
        "involvedObject.kind=Pod,involvedObject.name=vllm-6d4f9c7b8-x2k9p"]
    monkeypatch.setattr(k8s_mod, "PER_OBJECT_EVENTS", 1)
    server.requests.clear()
    many = src.events("serving", involved)
    assert [r.query.get("fieldSelector") for r in server.requests] == [None]
    assert [e["metadata"]["name"] for e in many] == [e["metadata"]["name"] for e in few] == \
        ["vllm-6d4f9c7b8-x2k9p.18a1"]


def test_in_cluster_config_over_https_with_the_service_account_token(tmp_path, monkeypatch):
    """What a pod sees: KUBERNETES_SERVICE_HOST/PORT, the service account's token, CA
    certificate and namespace files; the server speaks HTTPS and wants the bearer token."""
    import kubernetes.config.incluster_config as incluster

    import goodput_agent.sources.k8s as k8s_mod
    from tests.servers.debian import PackageUnavailable
    from tests.servers.kube_api import self_signed_certificate

    try:
        cert, key = self_signed_certificate(tmp_path)
    except PackageUnavailable as exc:  # no openssl and no way to install it
        pytest.skip(str(exc))
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text("sa-token-123")
    (sa / "namespace").write_text("serving\n")
    with running_kube_api(serving_cluster(), tls=(cert, key), token="sa-token-123") as srv:
        port = srv.url.rsplit(":", 1)[1]
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
        monkeypatch.setattr(incluster, "SERVICE_TOKEN_FILENAME", str(sa / "token"))
        monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", str(cert))
        monkeypatch.setattr(k8s_mod, "SA_NAMESPACE", sa / "namespace")
        src = K8sSource.connect()  # no kubeconfig, a service account mounted: in-cluster
        assert src.where == f"in-cluster (https://127.0.0.1:{port})"
        assert src.namespace == "serving"
        wl = src.workload(src.namespace, "vllm")
        assert names(src.workload_pods(wl)) == ["vllm-6d4f9c7b8-x2k9p"]
    # every request carried the token (no 401); the kinds tried before Deployment are 404s
    assert sorted({r.code for r in srv.requests}) == [200, 404]
