"""Issue 24, classes 2 and 10: Kubernetes device and node signals in kubectl's text forms: a
pod refused admission because NVML lost a GPU, a node whose allocatable nvidia.com/gpu fell
below its capacity, a NotReady node in `get nodes`, a container OOMKilled in `get pods`."""

from __future__ import annotations

import random
from datetime import timedelta

import yaml

from . import k8s_text as kt
from .case import Case, Expected

QUESTION = "why did the {n} training job fail on the cluster?"


def _question(kj: kt.KubeJob, files: dict[str, str]) -> None:
    files["incident.yaml"] = yaml.safe_dump({"question": QUESTION.format(n=kj.name)})


def gpu_lost_admission(rng: random.Random, case_id: str, variant: int) -> Case:
    """A GPU dies under a worker; the operator restarts the pod on the same node and the kubelet
    refuses it: UnexpectedAdmissionError, `nvml: GPU is lost`."""
    kj = kt.make_kube_job(rng)
    bad = rng.randrange(len(kj.nodes))
    gpu = rng.randrange(8)
    culprit = bad * 8 + gpu
    t_fail = kj.start + timedelta(hours=rng.uniform(1, 6))
    kt.training_progress(kj, rng, t_fail)
    kj.say(bad, t_fail, "RuntimeError: CUDA error: unknown error", culprit)
    kt.watchdog_timeouts(kj, rng, t_fail, {culprit})
    kj.now = t_fail + timedelta(minutes=rng.randint(15, 50))
    readmit = t_fail + timedelta(seconds=660)
    msg = ("Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc "
           "error: code = Unknown desc = Unable to retrieve list of available devices: error "
           f"creating nvml.Device {gpu}: nvml: GPU is lost, which is unexpected")
    files = kt.pod_logs(kj, rng) if variant % 2 == 0 else {}
    files["k8s/get_pods.txt"] = kt.pods_table(kj, {bad: ("0/1", "UnexpectedAdmissionError", 0)},
                                              {bad: readmit})
    files["k8s/get_events.txt"] = kt.events_table(kj, [
        (readmit, "Warning", "UnexpectedAdmissionError", f"pod/{kj.pod(bad)}", msg),
        (readmit - timedelta(seconds=20), "Normal", "SuccessfulDelete",
         f"pytorchjob/{kj.name}", f"Deleted pod: {kj.pod(bad)}"),
        (readmit - timedelta(seconds=5), "Normal", "Scheduled", f"pod/{kj.pod(bad)}",
         f"Successfully assigned {kj.namespace}/{kj.pod(bad)} to {kj.nodes[bad]}")])
    _question(kj, files)
    return Case(expected=Expected(
        case_id=case_id, category="gpu_hardware", node=kj.nodes[bad],
        rank=culprit if variant % 2 == 0 else None,
        notes=f"kubelet on {kj.nodes[bad]} refuses the restarted pod: NVML says GPU {gpu} is "
              "lost (UnexpectedAdmissionError in get events / get pods)"
              + (f"; rank {culprit} (GPU {gpu} of that pod) raised the first CUDA error, the "
                 "others timed out" if variant % 2 == 0 else "; no pod logs in the bundle")),
        files=files)


def allocatable_below_capacity(rng: random.Random, case_id: str, variant: int) -> Case:
    """The device plugin marked a GPU unhealthy: allocatable nvidia.com/gpu 7 of 8 on one node;
    the job's restart cannot be placed; the failing rank's own CUDA error is on that node."""
    kj = kt.make_kube_job(rng, n_min=3)
    bad = rng.randrange(len(kj.nodes))
    culprit = bad * 8 + rng.randrange(8)
    t_fail = kj.start + timedelta(hours=rng.uniform(1, 8))
    kt.training_progress(kj, rng, t_fail)
    kj.say(bad, t_fail, rng.choice(("RuntimeError: CUDA error: unspecified launch failure",
                                    "RuntimeError: CUDA error: uncorrectable ECC error "
                                    "encountered")), culprit)
    kt.watchdog_timeouts(kj, rng, t_fail, {culprit})
    kj.now = t_fail + timedelta(minutes=30)
    files = kt.pod_logs(kj, rng)
    files[f"k8s/describe_node_{kj.nodes[bad]}.txt"] = kt.describe_node_resources(
        kj.nodes[bad], 8, 7, 2113412340)
    healthy = rng.choice([n for n in kj.nodes if n != kj.nodes[bad]])
    files[f"k8s/describe_node_{healthy}.txt"] = kt.describe_node_resources(healthy, 8, 8,
                                                                           2113412340)
    files["k8s/get_pods.txt"] = kt.pods_table(kj, {bad: ("0/1", "Pending", 0)})
    files["k8s/get_events.txt"] = kt.events_table(kj, [(
        kj.now - timedelta(minutes=2), "Warning", "FailedScheduling", f"pod/{kj.pod(bad)}",
        f"0/{len(kj.nodes) + 2} nodes are available: 1 Insufficient nvidia.com/gpu, "
        f"{len(kj.nodes) + 1} node(s) didn't match pod affinity rules. preemption: 0/"
        f"{len(kj.nodes) + 2} nodes are available: {len(kj.nodes) + 2} No preemption victims "
        "found for incoming pod.")])
    _question(kj, files)
    return Case(expected=Expected(
        case_id=case_id, category="gpu_hardware", node=kj.nodes[bad], rank=culprit,
        notes=f"{kj.nodes[bad]} advertises nvidia.com/gpu capacity 8, allocatable 7 (the device "
              f"plugin marked one unhealthy); rank {culprit}, a rank of the pod on that node, "
              "raised the first CUDA error; the restarted pod cannot be scheduled"), files=files)


def node_not_ready(rng: random.Random, case_id: str, variant: int) -> Case:
    """A node stops answering: `get nodes` NotReady, its pod Unknown/Terminating, NodeNotReady
    events; its pod's log just stops."""
    kj, bad, t_fail = kt.lost_pod(rng, (2, 9), (20, 40))
    files = kt.pod_logs(kj, rng)
    state = rng.choice(("Unknown", "Terminating"))
    files["k8s/get_pods.txt"] = kt.pods_table(kj, {bad: ("1/1", state, 0)})
    files["k8s/get_nodes.txt"] = kt.nodes_table(kj, {kj.nodes[bad]: "NotReady"},
                                                ["cpu-pool-a1", "cpu-pool-a2"])
    files["k8s/get_events.txt"] = kt.events_table(kj, [
        (t_fail + timedelta(seconds=45), "Warning", "NodeNotReady", f"pod/{kj.pod(bad)}",
         "Node is not ready"),
        (t_fail + timedelta(seconds=300), "Warning", "TaintManagerEviction",
         f"pod/{kj.pod(bad)}", f"Marking for deletion Pod {kj.namespace}/{kj.pod(bad)}")])
    _question(kj, files)
    return Case(expected=Expected(
        case_id=case_id, category="node_failure", node=kj.nodes[bad],
        notes=f"{kj.nodes[bad]} is NotReady in get nodes, its pod {state}, NodeNotReady events; "
              "its pod's log stops without an error and every other rank times out"),
        files=files)


def pods_oomkilled(rng: random.Random, case_id: str, variant: int) -> Case:
    """`kubectl get pods -o wide` shows one worker OOMKilled (or CrashLoopBackOff after it)."""
    kj, bad, t_fail = kt.lost_pod(rng, (0.5, 5), (12, 30))
    status = ("0/1", "OOMKilled", 1) if variant % 2 == 0 else ("0/1", "CrashLoopBackOff", 3)
    files = kt.pod_logs(kj, rng)
    files["k8s/get_pods.txt"] = kt.pods_table(kj, {bad: status})
    if variant % 2:
        files["k8s/pod_last_state.txt"] = (
            f"    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    "
            f"137\n      Started:      {kj.start:%a, %d %b %Y %H:%M:%S} +0000\n      Finished:"
            f"     {t_fail:%a, %d %b %Y %H:%M:%S} +0000\n    Ready:          False\n"
            f"    Restart Count:  3\n    Limits:\n      memory:          512Gi\n"
            f"      nvidia.com/gpu:  8\n")
    _question(kj, files)
    return Case(expected=Expected(
        case_id=case_id, category="host_oom", node=kj.nodes[bad],
        notes=f"{kj.pod(bad)} on {kj.nodes[bad]} is {status[1]} in get pods"
              + (" and its pasted Last State says OOMKilled, exit 137" if variant % 2 else "")
              + "; its ranks' log stops, the others time out (container memory limit)"),
        files=files)
