"""The Deployment or StatefulSet that owns the collected pods (pod → ReplicaSet → Deployment, or
pod → StatefulSet, by their controller ownerReferences), written as `kubectl get -o json`
prints a selection: `k8s/workloads.json`, a List. It is what a patch of the pod template
(container args such as --max-num-seqs, resource limits) is proposed against."""

from __future__ import annotations

from typing import Any

from goodput_agent.collect.base import BundleWriter
from goodput_agent.collect.k8s_target import as_list
from goodput_agent.sources.errors import SourceError
from goodput_agent.sources.k8s import SOURCE, K8sSource

WORKLOADS_FILE = "k8s/workloads.json"
_PLURAL = {"Deployment": "deployments", "StatefulSet": "statefulsets",
           "ReplicaSet": "replicasets"}


def controller(obj: dict[str, Any]) -> dict[str, Any] | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if isinstance(r, dict) and r.get("controller")), None)


def owner_workload(src: K8sSource, pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's Deployment or StatefulSet (with kind and apiVersion), or None (a Job's pod, a
    bare pod, a ReplicaSet of its own)."""
    ns = (pod.get("metadata") or {}).get("namespace") or src.namespace
    obj: dict[str, Any] = pod
    for _ in range(2):  # pod → ReplicaSet → Deployment at most
        ref = controller(obj)
        if ref is None or ref.get("apiVersion") != "apps/v1" or ref.get("kind") not in _PLURAL:
            return None
        obj = src.object("apps", "v1", _PLURAL[ref["kind"]], ns, str(ref.get("name")))
        obj = {"apiVersion": "apps/v1", "kind": ref["kind"], **obj}
        if ref["kind"] != "ReplicaSet":
            return obj
    return None


def collect_owners(writer: BundleWriter, src: K8sSource, pods: list[dict[str, Any]]) -> None:
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for pod in pods:
        name = (pod.get("metadata") or {}).get("name")
        try:
            wl = owner_workload(src, pod)
        except SourceError as exc:
            writer.source_error(f"the workload that owns pod {name}", exc)
            continue
        if wl is not None:
            meta = wl.get("metadata") or {}
            found[(wl["kind"], str(meta.get("namespace")), str(meta.get("name")))] = wl
    if found:
        doc = as_list(list(found.values()), "apps/v1", "Deployment")  # each item keeps its kind
        writer.write_text(WORKLOADS_FILE, doc, source=SOURCE,
                          what="the workloads that own the pods (Deployment / StatefulSet)",
                          query="; ".join(f"GET /apis/apps/v1/namespaces/{ns}/{_PLURAL[k]}/{n}"
                                          for k, ns, n in found), origin=src.where)
