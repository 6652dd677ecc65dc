"""Collecting a Kubernetes job into a bundle from the fixture API server (tests/servers/
kube_api.py; no real kube-apiserver can run here), and investigating what was collected."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from goodput_agent.collect.base import BundleWriter
from goodput_agent.collect.k8s import K8sTarget, collect_k8s
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import open_ledger
from goodput_agent.sources.errors import NotFound
from goodput_agent.sources.k8s import K8sSource
from tests.servers.debian import free_port
from tests.servers.kube_api import FixtureCluster, running_kube_api, write_kubeconfig
from tests.servers.kube_fixtures import HF_TOKEN, SHAPED_SECRETS, serving_cluster

CASES = Path(__file__).resolve().parents[2] / "evals" / "cases"
NOW = datetime(2026, 3, 2, 9, 40, tzinfo=UTC)  # the fixture cluster's present
K8S_CASES = sorted(p.name for p in CASES.iterdir() if (p / "k8s" / "pods.json").is_file())


def collect(srv, tmp_path: Path, target: K8sTarget, name: str = "bundle") -> Path:
    src = K8sSource.connect(kubeconfig=srv.kubeconfig(tmp_path / "kubeconfig"))
    out = tmp_path / name
    with BundleWriter(out, {"k8s": target.job or target.pod or ""}) as writer:
        collect_k8s(writer, src, target, now=NOW)
    return out


def investigate(bundle: Path, tmp_path: Path):
    with open_ledger(tmp_path / "ledger.duckdb") as ledger:
        return investigate_bundle(bundle, ledger)


def test_there_are_kubernetes_eval_cases():
    assert len(K8S_CASES) >= 10


@pytest.mark.parametrize("case", K8S_CASES)
def test_live_collection_gives_the_cases_verdict(case, tmp_path):
    """Each generated Kubernetes case served by the API: what the live source collects (pods,
    events, nodes, logs; no kernel logs, which the API does not serve) gives the expected
    category, node and rank."""
    root = CASES / case
    expected = json.loads((root / "expected.json").read_text())
    job = yaml.safe_load((root / "incident.yaml").read_text())["job"]
    namespace = json.loads((root / "k8s" / "pods.json").read_text())["items"][0]["metadata"][
        "namespace"]
    with running_kube_api(FixtureCluster.from_bundle(root)) as srv:
        bundle = collect(srv, tmp_path, K8sTarget(job=f"{namespace}/{job}", tail_lines=None))
    assert sorted(p.name for p in (bundle / "logs").iterdir()) == \
        sorted(p.name for p in (root / "logs").iterdir())
    cause = investigate(bundle, tmp_path).root_cause
    assert cause is not None
    assert (cause.category, cause.node) == (expected["category"], expected["node"])
    # the rank often comes from a node's kernel log; without it, the same as the shipped
    # bundle with its nodes/ folder left out
    same_evidence = tmp_path / "same"
    shutil.copytree(root, same_evidence, ignore=shutil.ignore_patterns("nodes", "expected.json"))
    offline = investigate(same_evidence, tmp_path).root_cause
    assert (cause.category, cause.node, cause.rank) == \
        (offline.category, offline.node, offline.rank)


def test_deployment_pod_restarted_after_oom(tmp_path):
    with running_kube_api(serving_cluster()) as srv:
        bundle = collect(srv, tmp_path, K8sTarget(job="serving/vllm"))
    files = sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*") if p.is_file())
    pod = "vllm-6d4f9c7b8-x2k9p"
    assert files == sorted(["incident.yaml", "k8s/events.json", "k8s/nodes.json",
                            "k8s/pods.json", "k8s/workloads.json", f"logs/{pod}.log",
                            f"logs/{pod}_proxy.log",
                            f"logs/previous/{pod}_proxy.log", "manifest.json"])
    pods = json.loads((bundle / "k8s/pods.json").read_text())
    assert pods["kind"] == "List" and pods["items"][0]["kind"] == "Pod"  # kubectl's shape
    events = json.loads((bundle / "k8s/events.json").read_text())["items"]
    assert sorted(e["involvedObject"]["name"] for e in events) == ["gpu-node-07", pod]
    # vllm waits to restart: its log is the last (OOMKilled) run's; the proxy restarted once
    assert (bundle / f"logs/{pod}.log").read_text().startswith(
        "2026-03-02T09:20:01Z INFO Starting vLLM API server")
    assert "refused, exiting" in (bundle / f"logs/previous/{pod}_proxy.log").read_text()
    text = (bundle / "k8s/pods.json").read_text()
    assert HF_TOKEN not in text and '"VLLM_PORT"' in text  # the secret env value redacted
    assert not [v for v in SHAPED_SECRETS.values() if v in text]
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["errors"] == []
    assert [f["redacted"] for f in manifest["files"] if f["path"] == "k8s/pods.json"] == [True]
    # from the first pod start to now (a container still runs), 5 minutes' margin each side
    assert manifest["window"] == {"start": "2026-03-02T08:55:05Z", "end": "2026-03-02T09:45:00Z"}
    assert {f["query"] for f in manifest["files"]} >= {
        "GET /api/v1/namespaces/serving/pods?labelSelector=app=vllm"}
    cause = investigate(bundle, tmp_path).root_cause
    assert (cause.category, cause.node) == ("host_oom", "gpu-node-07")


def test_one_pod(tmp_path):
    with running_kube_api(serving_cluster()) as srv:
        bundle = collect(srv, tmp_path, K8sTarget(pod="serving/vllm-6d4f9c7b8-x2k9p"))
    assert len(json.loads((bundle / "k8s/pods.json").read_text())["items"]) == 1
    assert investigate(bundle, tmp_path).root_cause.category == "host_oom"


def test_forbidden_logs_and_nodes_are_named_as_missing_evidence(tmp_path):
    rules = [{"apiGroups": ["", "apps"], "resources": ["pods", "events", "deployments"],
              "verbs": ["get", "list"]}]
    with running_kube_api(serving_cluster(), rules=rules) as srv:
        bundle = collect(srv, tmp_path, K8sTarget(job="serving/vllm"))
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert sorted((e["kind"], e["what"]) for e in manifest["errors"]) == [
        ("forbidden", "log of serving/vllm-6d4f9c7b8-x2k9p -c proxy"),
        ("forbidden", "log of serving/vllm-6d4f9c7b8-x2k9p -c vllm"),
        ("forbidden", "previous log of serving/vllm-6d4f9c7b8-x2k9p -c proxy"),
        ("forbidden", "the nodes the pods ran on"),
        ("forbidden", "the workload that owns pod vllm-6d4f9c7b8-x2k9p")]  # its ReplicaSet
    report = investigate(bundle, tmp_path)
    assert report.root_cause.category == "host_oom"  # the pods still say OOMKilled
    assert any("missing evidence: the nodes the pods ran on" in u for u in report.unknowns)


def test_unreachable_api_gives_a_partial_report(tmp_path):
    kc = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{free_port()}", namespace=None)
    with BundleWriter(tmp_path / "b", {"k8s": "train/llama"}) as writer:
        collect_k8s(writer, K8sSource.connect(kubeconfig=kc, timeout_s=2),
                    K8sTarget(job="train/llama"))
    errors = json.loads((tmp_path / "b" / "manifest.json").read_text())["errors"]
    assert [e["kind"] for e in errors] == ["unreachable"]
    report = investigate(tmp_path / "b", tmp_path)
    assert report.root_cause is None or report.root_cause.category == "unknown"
    assert any("missing evidence: the pods of train/llama" in u for u in report.unknowns)


def test_a_job_that_does_not_exist_is_an_error(tmp_path):
    with running_kube_api(serving_cluster()) as srv, pytest.raises(NotFound, match="named nope"):
        collect(srv, tmp_path, K8sTarget(job="serving/nope"))


def _dcgm_openmetrics() -> str:
    """DCGM exporter series (generated here): the pod's node logs Xid 79 at 09:30 on GPU 0;
    another node, not the job's, logs Xid 31."""
    start = int(datetime(2026, 3, 2, 9, 0, tzinfo=UTC).timestamp())
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge", "# HELP DCGM_FI_DEV_XID_ERRORS last Xid"]
    for host, code in (("gpu-node-07", 79), ("gpu-node-99", 31)):
        labels = f'{{gpu="0",UUID="GPU-{host}",device="nvidia0",Hostname="{host}"}}'
        lines += [f"DCGM_FI_DEV_XID_ERRORS{labels} {code if t >= 1800 else 0} {start + t}"
                  for t in range(0, 2700, 15)]
    return "\n".join([*lines, "# EOF", ""])


def test_dcgm_series_of_the_pods_nodes_join_the_bundle(tmp_path):
    from tests.servers.prometheus import prometheus_over_text

    with prometheus_over_text(tmp_path, _dcgm_openmetrics()) as url, \
            running_kube_api(serving_cluster()) as srv:
        bundle = collect(srv, tmp_path, K8sTarget(job="serving/vllm", prometheus=url))
    answer = json.loads((bundle / "metrics/dcgm/DCGM_FI_DEV_XID_ERRORS.json").read_text())
    assert {s["metric"]["Hostname"] for s in answer["data"]["result"]} == {"gpu-node-07"}
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["errors"] == []
    assert any(f["query"].startswith('DCGM_FI_DEV_XID_ERRORS{Hostname=~"gpu\\\\-node\\\\-07"}')
               for f in manifest["files"] if f["source"] == "prometheus")
    report = investigate(bundle, tmp_path)
    text = report.model_dump_json()
    assert "DCGM reports Xid 79" in text and "Xid 31" not in text
    # the GPU fell off the bus 67 s before the container died: without DCGM the same pods say
    # host_oom (test_deployment_pod_restarted_after_oom)
    assert (report.root_cause.category, report.root_cause.node) == ("gpu_hardware",
                                                                    "gpu-node-07")


def test_events_of_the_pods_own_controllers(tmp_path):
    """A JobSet's child Jobs say BackoffLimitExceeded: their events join; another Job's not."""
    with running_kube_api(serving_cluster()) as srv:
        bundle = collect(srv, tmp_path, K8sTarget(job="train/pretrain"))
    events = json.loads((bundle / "k8s/events.json").read_text())["items"]
    assert [(e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in events] == \
        [("Job", "pretrain-workers-1"), ("Node", "gpu-node-07")]
