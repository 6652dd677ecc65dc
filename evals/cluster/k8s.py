"""The Kubernetes records of a case: `kubectl get pods/events/nodes -o json` Lists."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from goodput_agent.evals.cluster.context import Ctx, NodeRT, Outcome
from goodput_agent.evals.cluster.formats import _hex, _uuid
from goodput_agent.evals.cluster.k8s_objects import _flavor, _k8s_list, _kt, job_ref, pod_ref


def _container_state(
    node: NodeRT,
    info: dict[str, Any],
    term: dict[str, Any],
    started: datetime,
    end: datetime | None,
    restarts: int,
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The container's state kind, its state and its last state (terminated, running, waiting)."""
    state_kind = info.get("state", "terminated" if end else "running")
    if state_kind == "terminated" and restarts == 0:
        state, last = {"terminated": term}, {}
    elif state_kind == "running":
        state, last = {"running": {"startedAt": _kt(info.get("running_since", started))}}, {}
        if restarts:
            last = {"terminated": term}
    else:  # waiting after a restart
        state = {
            "waiting": {
                "message": f"back-off 10s restarting failed container=pytorch "
                f"pod={node.pod}_ml-train",
                "reason": "CrashLoopBackOff",
            }
        }
        last = {"terminated": term}
    return state_kind, state, last


def _pod_owner(ctx: Ctx, node: NodeRT) -> tuple[dict[str, str], dict[str, Any]]:
    """The pod's labels and owner: a PyTorchJob worker or an indexed Job's pod."""
    spec = ctx.spec
    labels: dict[str, str]
    if spec.k8s_kind == "pytorchjob":
        labels = {
            "training.kubeflow.org/job-name": spec.job_name,
            "training.kubeflow.org/operator-name": "pytorchjob-controller",
            "training.kubeflow.org/replica-index": str(node.group),
            "training.kubeflow.org/replica-type": "worker",
        }
        if node.group == 0:
            labels["training.kubeflow.org/job-role"] = "master"
        owner = {
            "apiVersion": "kubeflow.org/v1",
            "blockOwnerDeletion": True,
            "controller": True,
            "kind": "PyTorchJob",
            "name": spec.job_name,
            "uid": job_ref(ctx)["uid"],
        }
    else:
        labels = {
            "batch.kubernetes.io/controller-uid": job_ref(ctx)["uid"],
            "batch.kubernetes.io/job-completion-index": str(node.group),
            "batch.kubernetes.io/job-name": spec.job_name,
            "job-name": spec.job_name,
        }
        owner = {
            "apiVersion": "batch/v1",
            "blockOwnerDeletion": True,
            "controller": True,
            "kind": "Job",
            "name": spec.job_name,
            "uid": job_ref(ctx)["uid"],
        }
    return labels, owner


def _pod_spec(ctx: Ctx, node: NodeRT, restarts: int, img: str) -> dict[str, Any]:
    spec = ctx.spec
    pod_spec: dict[str, Any] = {
        "containers": [
            {
                "command": [
                    "torchrun",
                    f"--nnodes={len(ctx.nodes)}",
                    f"--nproc-per-node={ctx.gpn}",
                    "--rdzv-backend=c10d",
                    f"--rdzv-endpoint={ctx.master.host}:29500",
                    "/workspace/train.py",
                    "--config",
                    "/config/train.yaml",
                ],
                "image": img,
                "imagePullPolicy": "IfNotPresent",
                "name": "pytorch",
                "resources": {
                    "limits": {
                        "memory": "1600Gi",
                        "nvidia.com/gpu": str(ctx.gpn),
                        "rdma/ib": "8",
                    },
                    "requests": {
                        "cpu": "180",
                        "memory": "1600Gi",
                        "nvidia.com/gpu": str(ctx.gpn),
                        "rdma/ib": "8",
                    },
                },
            }
        ],
        "nodeName": node.name,
        "priority": 0,
        "restartPolicy": "OnFailure" if restarts else "Never",
        "schedulerName": "default-scheduler",
        "tolerations": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}],
    }
    if spec.k8s_kind == "indexed_job":
        pod_spec["hostname"] = node.host
        pod_spec["subdomain"] = spec.job_name
    return pod_spec


def _pod(ctx: Ctx, oc: Outcome, i: int, node: NodeRT, img: str) -> dict[str, Any]:
    """`kubectl get pod -o json` of the pod on node `i`, as the job left it."""
    spec = ctx.spec
    info = dict(oc.pods.get(i, {}))
    end = info.get("finished", ctx.node_end.get(i))
    started = spec.start - timedelta(seconds=2 + node.group % 3)
    term = {
        "containerID": f"containerd://{_hex(random.Random(node.pod), 64)}",
        "exitCode": info.get("exit", ctx.node_exit.get(i, 1)),
        "finishedAt": _kt(end) if end else None,
        "reason": info.get("reason", "Error"),
        "startedAt": _kt(started),
    }
    restarts = info.get("restarts", 0)
    state_kind, state, last = _container_state(node, info, term, started, end, restarts)
    ready = state_kind == "running" and not info.get("not_ready", False)
    phase = info.get("phase", "Running" if state_kind != "terminated" else "Failed")
    labels, owner = _pod_owner(ctx, node)
    pod_spec = _pod_spec(ctx, node, restarts, img)
    conds = [
        {
            "lastProbeTime": None,
            "lastTransitionTime": _kt(started),
            "status": "True",
            "type": "PodScheduled",
        },
        {
            "lastProbeTime": None,
            "lastTransitionTime": _kt(started),
            "status": "True",
            "type": "Initialized",
        },
        {
            "lastProbeTime": None,
            "lastTransitionTime": _kt(info.get("ready_changed", end or started)),
            "status": "True" if ready else "False",
            "type": "Ready",
        },
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": _kt(spec.start - timedelta(seconds=45)),
            "labels": labels,
            "name": node.pod,
            "namespace": "ml-train",
            "ownerReferences": [owner],
            "uid": pod_ref(ctx, node)["uid"],
        },
        "spec": pod_spec,
        "status": {
            "conditions": conds,
            "containerStatuses": [
                {
                    "containerID": term["containerID"],
                    "image": img,
                    "imageID": "nvcr.io/nvidia/pytorch@sha256:" + _hex(random.Random(img), 64),
                    "lastState": last,
                    "name": "pytorch",
                    "ready": ready,
                    "restartCount": restarts,
                    "started": state_kind == "running",
                    "state": state,
                }
            ],
            "hostIP": node.ip,
            "phase": phase,
            "podIP": f"10.96.{i}.{10 + i * 3}",
            "qosClass": "Guaranteed",
            "startTime": _kt(spec.start - timedelta(seconds=40)),
        },
    }


def _node_conditions(oc: Outcome, node: NodeRT) -> list[dict[str, Any]]:
    """The node's pressure conditions and Ready, with what the case overrides."""
    over = oc.k8s_nodes.get(node.name, {})
    hb = over.get("heartbeat", oc.t_end + timedelta(seconds=9))
    ready_cond = {
        "lastHeartbeatTime": _kt(hb),
        "lastTransitionTime": _kt(node.boot + timedelta(seconds=80)),
        "message": "kubelet is posting ready status",
        "reason": "KubeletReady",
        "status": "True",
        "type": "Ready",
    }
    ready_cond.update(over.get("ready", {}))
    pressure = [
        {
            "lastHeartbeatTime": _kt(hb),
            "lastTransitionTime": _kt(node.boot + timedelta(seconds=80)),
            "message": f"kubelet has {m}",
            "reason": f"KubeletHas{r}",
            "status": "False",
            "type": k,
        }
        for k, r, m in (
            ("MemoryPressure", "SufficientMemory", "sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "no disk pressure"),
            ("PIDPressure", "SufficientPID", "sufficient PID available"),
        )
    ]
    for cond in pressure:
        cond.update(over.get(cond["type"], {}))
    return [*pressure, ready_cond]


def _node(ctx: Ctx, oc: Outcome, node: NodeRT) -> dict[str, Any]:
    """`kubectl get node -o json` of one node."""
    fl = _flavor(node.name)
    over = oc.k8s_nodes.get(node.name, {})
    alloc_gpu = over.get("alloc_gpu", ctx.gpn)
    node_spec: dict[str, Any] = {"providerID": fl["_provider"]}
    if over.get("taints"):
        node_spec["taints"] = over["taints"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "creationTimestamp": _kt(node.boot - timedelta(days=3)),
            "labels": {
                **{k: v for k, v in fl.items() if not k.startswith("_")},
                "kubernetes.io/hostname": node.name.split(".")[0],
                "nvidia.com/gpu.count": str(ctx.gpn),
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            },
            "name": node.name,
            "uid": _uuid(random.Random(node.name)),
        },
        "spec": node_spec,
        "status": {
            "addresses": [
                {"address": node.ip, "type": "InternalIP"},
                {"address": node.name.split(".")[0], "type": "Hostname"},
            ],
            "allocatable": {
                "cpu": "190",
                "ephemeral-storage": "1800Gi",
                "memory": "1900Gi",
                "nvidia.com/gpu": str(alloc_gpu),
                "pods": "110",
                "rdma/ib": "8",
            },
            "capacity": {
                "cpu": "192",
                "ephemeral-storage": "1900Gi",
                "memory": "2003Gi",
                "nvidia.com/gpu": str(ctx.gpn),
                "pods": "110",
                "rdma/ib": "8",
            },
            "conditions": _node_conditions(oc, node),
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://1.7.15",
                "kernelVersion": fl["_kernel"],
                "kubeletVersion": fl["_kubelet"],
                "operatingSystem": "linux",
                "osImage": fl["_os"],
            },
        },
    }


def write_k8s(ctx: Ctx, oc: Outcome) -> None:
    img = "nvcr.io/nvidia/pytorch:24.05-py3"
    pods, nodes = [], []
    for i, node in enumerate(ctx.nodes):
        pods.append(_pod(ctx, oc, i, node, img))
        nodes.append(_node(ctx, oc, node))
    ctx.sink("k8s/pods.json").raw = _k8s_list(pods)
    ctx.sink("k8s/nodes.json").raw = _k8s_list(nodes)
    events = sorted(oc.events, key=lambda e: (e["firstTimestamp"], e["metadata"]["name"]))
    ctx.sink("k8s/events.json").raw = _k8s_list(events)
