"""Fixture clusters for the fixture API server (tests/servers/kube_api.py): hand-built objects
in the real API shapes and labels of each controller (named fixtures, not recordings).

- `serving_cluster()`: a vLLM Deployment whose pod restarts after OOMKilled (CrashLoopBackOff,
  lastState.terminated, a previous log), a sidecar, a StatefulSet, a JobSet and a batch Job
  with the controller-uid selector the Job controller sets; a GPU node whose device plugin
  withdrew one GPU (allocatable 7 of 8) with a NoSchedule taint, and events.
- eval cases: FixtureCluster.from_bundle(evals/cases/<case>) serves a generated case.
"""

from __future__ import annotations

from typing import Any

from tests.servers.kube_api import FixtureCluster

JOB_UID = "5f0c3a52-9f1e-4a57-8d1b-2f6a1c0e7b11"
HF_TOKEN = "hf_fixtureSecretValue0123456789abcdef"  # a secret in a pod's env: never in a bundle
# secrets whose variable names say nothing: masked by their value's shape
SHAPED_SECRETS = {"SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0FIX/B0FIX/zz9fixture",
                  "WANDB_KEY": "3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"}


def _pod(name: str, ns: str, labels: dict[str, str], node: str, containers: list[str],
         statuses: list[dict[str, Any]], owner: tuple[str, str, str] | None = None,
         phase: str = "Running") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels,
                            "creationTimestamp": "2026-03-02T09:00:00Z"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2],
                                    "uid": f"uid-{owner[2]}", "controller": True,
                                    "blockOwnerDeletion": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "restartPolicy": "Always",
                     "containers": [{"name": c, "image": f"{c}:1",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                                    for c in containers]},
            "status": {"phase": phase, "startTime": "2026-03-02T09:00:05Z",
                       "containerStatuses": statuses}}


def _running(name: str, started: str = "2026-03-02T09:00:10Z") -> dict[str, Any]:
    return {"name": name, "ready": True, "restartCount": 0, "started": True, "image": f"{name}:1",
            "imageID": "", "lastState": {}, "state": {"running": {"startedAt": started}}}


def serving_cluster() -> FixtureCluster:
    c = FixtureCluster()
    c.add({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": "gpu-node-07", "labels": {"nvidia.com/gpu.product": "H100"}},
           "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present",
                                "effect": "NoSchedule"}]},
           "status": {"capacity": {"cpu": "192", "nvidia.com/gpu": "8"},
                      "allocatable": {"cpu": "190", "nvidia.com/gpu": "7"},
                      "conditions": [
                          {"type": "MemoryPressure", "status": "False",
                           "reason": "KubeletHasSufficientMemory",
                           "lastTransitionTime": "2026-03-01T00:00:00Z"},
                          {"type": "Ready", "status": "True", "reason": "KubeletReady",
                           "message": "kubelet is posting ready status",
                           "lastTransitionTime": "2026-03-01T00:00:00Z"}],
                      "nodeInfo": {"kubeletVersion": "v1.32.1"}}})
    c.add({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "vllm", "namespace": "serving"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "vllm"}},
                    "template": {"metadata": {"labels": {"app": "vllm"}},
                                 "spec": {"containers": [{"name": "vllm", "image": "vllm:1"},
                                                         {"name": "proxy", "image": "proxy:1"}]}}},
           "status": {"replicas": 1, "unavailableReplicas": 1}})
    c.add({"apiVersion": "apps/v1", "kind": "ReplicaSet",  # the Deployment's, owning the pod
           "metadata": {"name": "vllm-6d4f9c7b8", "namespace": "serving",
                        "labels": {"app": "vllm", "pod-template-hash": "6d4f9c7b8"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "vllm", "uid": "uid-vllm",
                                             "controller": True, "blockOwnerDeletion": True}]},
           "spec": {"replicas": 1, "selector": {"matchLabels": {
               "app": "vllm", "pod-template-hash": "6d4f9c7b8"}}}})
    oom = {"name": "vllm", "ready": False, "restartCount": 3, "started": False,
           "image": "vllm:1", "imageID": "",
           "state": {"waiting": {"reason": "CrashLoopBackOff",
                                 "message": "back-off 40s restarting failed container=vllm "
                                            "pod=vllm-6d4f9c7b8-x2k9p_serving(uid)"}},
           "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                        "startedAt": "2026-03-02T09:20:00Z",
                                        "finishedAt": "2026-03-02T09:31:12Z",
                                        "containerID": "containerd://abc"}}}
    proxy = {**_running("proxy", "2026-03-02T09:05:00Z"), "restartCount": 1,
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                          "startedAt": "2026-03-02T09:00:10Z",
                                          "finishedAt": "2026-03-02T09:04:58Z",
                                          "containerID": "containerd://def"}}}
    vllm = _pod("vllm-6d4f9c7b8-x2k9p", "serving", {"app": "vllm", "pod-template-hash":
                                                    "6d4f9c7b8"}, "gpu-node-07",
                ["vllm", "proxy"], [oom, proxy],
                ("apps/v1", "ReplicaSet", "vllm-6d4f9c7b8"))
    vllm["spec"]["containers"][0]["env"] = [{"name": "HF_TOKEN", "value": HF_TOKEN},
                                            {"name": "VLLM_PORT", "value": "8000"}] + [
        {"name": k, "value": v} for k, v in SHAPED_SECRETS.items()]
    c.add(vllm)
    c.add(_pod("other-0", "serving", {"app": "other"}, "gpu-node-07", ["main"],
               [_running("main")]))
    c.add_log("serving", "vllm-6d4f9c7b8-x2k9p", "vllm",
              "2026-03-02T09:20:01Z INFO Starting vLLM API server\n"
              "2026-03-02T09:31:11Z INFO Avg prompt throughput: 1200 tokens/s\n", previous=True)
    c.add_log("serving", "vllm-6d4f9c7b8-x2k9p", "proxy",
              "2026-03-02T09:05:01Z proxy listening on :8080\n")
    c.add_log("serving", "vllm-6d4f9c7b8-x2k9p", "proxy",
              "2026-03-02T09:04:58Z proxy: upstream vllm:8000 refused, exiting\n",
              previous=True)
    c.add({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": "vllm-6d4f9c7b8-x2k9p.18a1", "namespace": "serving"},
           "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "vllm-6d4f9c7b8-x2k9p",
                              "namespace": "serving", "fieldPath": "spec.containers{vllm}"},
           "reason": "BackOff", "message": "Back-off restarting failed container vllm in pod "
                                           "vllm-6d4f9c7b8-x2k9p_serving(uid)",
           "type": "Warning", "count": 12, "firstTimestamp": "2026-03-02T09:31:20Z",
           "lastTimestamp": "2026-03-02T09:40:00Z", "source": {"component": "kubelet",
                                                               "host": "gpu-node-07"}})
    c.add({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": "other-0.18a2", "namespace": "serving"},
           "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "other-0",
                              "namespace": "serving"},
           "reason": "BackOff", "message": "not this workload's", "type": "Warning",
           "firstTimestamp": "2026-03-02T09:30:00Z", "source": {"component": "kubelet"}})
    c.add({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": "gpu-node-07.18a3", "namespace": "default"},
           "involvedObject": {"kind": "Node", "name": "gpu-node-07", "uid": "gpu-node-07"},
           "reason": "NodeHasSufficientMemory", "message": "Node gpu-node-07 status is now: "
                                                          "NodeHasSufficientMemory",
           "type": "Normal", "firstTimestamp": "2026-03-02T08:00:00Z",
           "source": {"component": "kubelet", "host": "gpu-node-07"}})
    # a StatefulSet, a JobSet and a batch Job (selector by controller-uid)
    c.add({"apiVersion": "apps/v1", "kind": "StatefulSet",
           "metadata": {"name": "kv", "namespace": "serving"},
           "spec": {"selector": {"matchLabels": {"app": "kv"}}, "serviceName": "kv"}})
    c.add(_pod("kv-0", "serving", {"app": "kv", "apps.kubernetes.io/pod-index": "0"},
               "gpu-node-07", ["kv"], [_running("kv")], ("apps/v1", "StatefulSet", "kv")))
    c.add({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
           "metadata": {"name": "pretrain", "namespace": "train"},
           "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2}]}})
    for i in range(2):
        c.add(_pod(f"pretrain-workers-{i}-0-abcde", "train",
                   {"jobset.sigs.k8s.io/jobset-name": "pretrain",
                    "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                    "jobset.sigs.k8s.io/job-index": str(i),
                    "batch.kubernetes.io/job-name": f"pretrain-workers-{i}"},
                   "gpu-node-07", ["trainer"], [_running("trainer")],
                   ("batch/v1", "Job", f"pretrain-workers-{i}")))
    c.add({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": "pretrain-workers-1.18b1", "namespace": "train"},
           "involvedObject": {"apiVersion": "batch/v1", "kind": "Job",
                              "name": "pretrain-workers-1", "namespace": "train"},
           "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff "
                                                       "limit", "type": "Warning", "count": 1,
           "firstTimestamp": "2026-03-02T09:31:00Z", "source": {"component": "job-controller"}})
    c.add({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": "other-job.18b2", "namespace": "train"},
           "involvedObject": {"apiVersion": "batch/v1", "kind": "Job", "name": "other-job",
                              "namespace": "train"},
           "reason": "BackoffLimitExceeded", "message": "not this JobSet's", "type": "Warning",
           "firstTimestamp": "2026-03-02T09:20:00Z", "source": {"component": "job-controller"}})
    c.add({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "finetune", "namespace": "train", "uid": JOB_UID},
           "spec": {"completions": 2, "parallelism": 2, "completionMode": "Indexed",
                    "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid":
                                                 JOB_UID}}}})
    for i in range(2):
        c.add(_pod(f"finetune-{i}-q7x2z", "train",
                   {"batch.kubernetes.io/controller-uid": JOB_UID, "controller-uid": JOB_UID,
                    "batch.kubernetes.io/job-name": "finetune", "job-name": "finetune",
                    "batch.kubernetes.io/job-completion-index": str(i)},
                   "gpu-node-07", ["trainer"], [_running("trainer")],
                   ("batch/v1", "Job", "finetune")))
    # an older run's pod with the same job-name but another controller-uid: not this Job's
    c.add(_pod("finetune-0-old00", "train", {"batch.kubernetes.io/controller-uid": "old",
                                             "job-name": "finetune"},
               "gpu-node-07", ["trainer"], [_running("trainer")]))
    return c
