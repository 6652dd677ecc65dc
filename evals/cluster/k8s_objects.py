"""Kubernetes objects shared by the writers and the failure cases: events and references."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from typing import Any

from goodput_agent.evals.cluster.context import Ctx, NodeRT, Outcome
from goodput_agent.evals.cluster.formats import _hex, _iso_z, _uuid


def _kt(t: datetime) -> str:
    return _iso_z(t)


def _flavor(name: str) -> dict[str, str]:
    if name.startswith("gke-"):
        return {
            "cloud.google.com/gke-nodepool": "a3-pool",
            "node.kubernetes.io/instance-type": "a3-highgpu-8g",
            "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
            "topology.kubernetes.io/zone": "us-central1-a",
            "_kubelet": "v1.29.6-gke.1254000",
            "_provider": f"gce://ml-prod/us-central1-a/{name}",
            "_kernel": "6.1.85+",
            "_os": "Container-Optimized OS from Google",
        }
    if name.startswith("ip-"):
        return {
            "eks.amazonaws.com/nodegroup": "p5-train",
            "node.kubernetes.io/instance-type": "p5.48xlarge",
            "topology.kubernetes.io/zone": "us-east-2b",
            "_kubelet": "v1.30.2-eks-1552ad0",
            "_provider": "aws:///us-east-2b/i-0" + _hex(random.Random(name), 16),
            "_kernel": "5.10.220-209.869.amzn2.x86_64",
            "_os": "Amazon Linux 2",
        }
    return {
        "kubernetes.azure.com/agentpool": "ndh100",
        "node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5",
        "topology.kubernetes.io/zone": "0",
        "_kubelet": "v1.29.7",
        "_provider": "azure:///subscriptions/x/resourceGroups/mc_ml/"
        f"providers/Microsoft.Compute/virtualMachineScaleSets/aks-ndh100/virtualMachines/{name[-1]}",
        "_kernel": "5.15.0-1071-azure",
        "_os": "Ubuntu 22.04.4 LTS",
    }


def _k8s_list(items: list[dict[str, Any]]) -> str:
    doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    return json.dumps(doc, indent=4, sort_keys=True) + "\n"


def k8s_event(
    ctx: Ctx,
    oc: Outcome,
    t: datetime,
    obj: dict[str, Any],
    reason: str,
    message: str,
    *,
    warning: bool = False,
    component: str = "kubelet",
    host: str | None = None,
    count: int = 1,
    last: datetime | None = None,
) -> None:
    rng = random.Random(f"event:{ctx.spec.case_id}:{len(oc.events)}")
    ev = {
        "apiVersion": "v1",
        "count": count,
        "eventTime": None,
        "firstTimestamp": _kt(t),
        "involvedObject": obj,
        "kind": "Event",
        "lastTimestamp": _kt(last or t),
        "message": message,
        "metadata": {
            "creationTimestamp": _kt(t),
            "name": f"{obj['name']}.{_hex(rng, 16)}",
            "namespace": "ml-train",
            "resourceVersion": str(rng.randint(10**7, 10**8)),
            "uid": _uuid(rng),
        },
        "reason": reason,
        "reportingComponent": component if component != "kubelet" else "kubelet",
        "reportingInstance": host or "",
        "source": {"component": component},
        "type": "Warning" if warning else "Normal",
    }
    if host:
        ev["source"]["host"] = host
    oc.events.append(ev)


def pod_ref(ctx: Ctx, node: NodeRT) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "fieldPath": "spec.containers{pytorch}",
        "kind": "Pod",
        "name": node.pod,
        "namespace": "ml-train",
        "uid": _uuid(random.Random(node.pod or "")),
    }


def node_ref(name: str) -> dict[str, Any]:
    return {"kind": "Node", "name": name, "uid": name}


def job_ref(ctx: Ctx) -> dict[str, Any]:
    if ctx.spec.k8s_kind == "pytorchjob":
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": ctx.spec.job_name,
            "namespace": "ml-train",
            "uid": _uuid(random.Random(ctx.spec.job_name)),
        }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": ctx.spec.job_name,
        "namespace": "ml-train",
        "uid": _uuid(random.Random(ctx.spec.job_name)),
    }


def default_k8s_events(ctx: Ctx, oc: Outcome) -> None:
    spec = ctx.spec
    for node in ctx.nodes:
        t = spec.start - timedelta(seconds=40 + node.group)
        k8s_event(
            ctx,
            oc,
            t,
            pod_ref(ctx, node),
            "Scheduled",
            f"Successfully assigned ml-train/{node.pod} to {node.name}",
            component="default-scheduler",
        )
        k8s_event(
            ctx,
            oc,
            spec.start - timedelta(seconds=3),
            pod_ref(ctx, node),
            "Started",
            "Started container pytorch",
            host=node.name,
        )


def job_failed_event(ctx: Ctx, oc: Outcome, t: datetime, failed: int = 1) -> None:
    if ctx.spec.k8s_kind == "pytorchjob":
        k8s_event(
            ctx,
            oc,
            t,
            job_ref(ctx),
            "PyTorchJobFailed",
            f"PyTorchJob ml-train/{ctx.spec.job_name} is failed because {failed} Worker "
            "replica(s) failed.",
            warning=True,
            component="pytorchjob-controller",
        )
    else:
        k8s_event(
            ctx,
            oc,
            t,
            job_ref(ctx),
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
            warning=True,
            component="job-controller",
        )
