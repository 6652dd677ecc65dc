"""A Kubernetes node trigger's bundle (node_collect.py) from the FIXTURE API server: the node
and its events; a Prometheus that does not answer is missing evidence, not an error."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import yaml

from goodput_agent.sources.k8s import K8sSource
from goodput_agent.watch.node_collect import collect_node_event
from tests.servers.kube_api import FixtureCluster, running_kube_api
from tests.servers.prometheus import mute_server
from tests.watch.k8s_objects import node

AT = datetime(2026, 12, 4, 5, 40, tzinfo=UTC)


def test_a_not_ready_node_is_collected_with_its_events(tmp_path):
    c = FixtureCluster()
    c.add(node("gpu-1", ready="Unknown", since="2026-12-04T05:40:00Z"))
    c.add(node("gpu-2"))
    c.add({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": "gpu-1.1", "namespace": "default"},
           "involvedObject": {"kind": "Node", "name": "gpu-1"}, "reason": "NodeNotReady",
           "message": "Node gpu-1 status is now: NodeNotReady", "type": "Normal"})
    with running_kube_api(c) as srv, mute_server() as dead_prometheus:
        k8s = K8sSource.connect(kubeconfig=srv.kubeconfig(tmp_path / "kc"))
        bundle = collect_node_event("gpu-1", AT, tmp_path / "b", k8s=k8s, state="NotReady",
                                    prometheus_url=dead_prometheus, timeout_s=1)
    nodes = json.loads((bundle / "k8s" / "nodes.json").read_text())["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["gpu-1"]
    events = json.loads((bundle / "k8s" / "events.json").read_text())["items"]
    assert [e["reason"] for e in events] == ["NodeNotReady"]
    incident = yaml.safe_load((bundle / "incident.yaml").read_text())
    assert incident["node"] == "gpu-1" and "NotReady" in incident["question"]
    assert incident["window"]["end"] == "2026-12-04T05:45:00+00:00"
    errors = json.loads((bundle / "manifest.json").read_text())["errors"]
    assert errors and all(e["source"] == "prometheus" for e in errors)
