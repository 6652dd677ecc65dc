"""Objects for the watch tests, in the real API shapes (hand-built fixtures, not recordings):
GPU pods whose containers end, Jobs / JobSets / PyTorchJobs whose status turns Failed, GPU
nodes whose Ready condition or taints change."""

from __future__ import annotations

from typing import Any

GPU = {"limits": {"nvidia.com/gpu": "8"}}


def pod(name: str, *, ns: str = "train", node: str = "gpu-1", gpu: bool = True,
        ended: str | None = None, restarts: int = 0, last: str | None = None,
        evicted: bool = False, labels: dict[str, str] | None = None,
        finished: str | None = None) -> dict[str, Any]:
    """A pod whose container `main` runs, or ended with reason `ended` (current state), or
    ended with `last` and was restarted (lastState, restartCount `restarts`)."""
    state: dict[str, Any] = {"running": {"startedAt": "2026-12-04T05:00:00Z"}}
    if ended:
        state = {"terminated": {"reason": ended, "exitCode": 137 if ended == "OOMKilled" else 1,
                                "startedAt": "2026-12-04T05:00:00Z",
                                "finishedAt": finished or
                                f"2026-12-04T05:{10 + restarts:02d}:00Z"}}
    last_state = {"terminated": {"reason": last, "exitCode": 137,
                                 "finishedAt": f"2026-12-04T05:{9 + restarts:02d}:00Z"}} \
        if last else {}
    status: dict[str, Any] = {"phase": "Failed" if ended or evicted else "Running",
                              "containerStatuses": [{"name": "main", "restartCount": restarts,
                                                     "state": state, "lastState": last_state}]}
    if evicted:
        status.update(reason="Evicted", message="The node was low on resource: memory.")
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {"app": "train"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                              "name": "trainer", "uid": "u-trainer",
                                              "controller": True}]},
            "spec": {"nodeName": node, "restartPolicy": "OnFailure",
                     "containers": [{"name": "main", "image": "trainer:1",
                                     "resources": GPU if gpu else {}}]},
            "status": status}


def job(api_version: str, kind: str, name: str, *, ns: str = "train", failed: bool = False,
        restarts: int = 0, labels: dict[str, str] | None = None) -> dict[str, Any]:
    conditions = [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                   "message": "Job has reached the specified backoff limit",
                   "lastTransitionTime": "2026-12-04T05:30:00Z"}] if failed else []
    status: dict[str, Any] = {"conditions": conditions}
    if kind == "JobSet":
        status["restarts"] = restarts
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": ns, "labels": labels or {"app": "train"}},
            "spec": {}, "status": status}


def node(name: str, *, gpus: int = 8, ready: str = "True",
         since: str = "2026-12-01T00:00:00Z",
         taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present",
                                 "effect": "NoSchedule"}, *(taints or [])]},
            "status": {"capacity": {"nvidia.com/gpu": str(gpus)},
                       "conditions": [{"type": "Ready", "status": ready,
                                       "reason": "KubeletReady" if ready == "True"
                                       else "NodeStatusUnknown",
                                       "message": "Kubelet stopped posting node status.",
                                       "lastTransitionTime": since}]}}
