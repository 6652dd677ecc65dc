"""What a Kubernetes termination, pod reason or Event says about a failure."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from goodput_agent.core.events import EventKind, Role

_EXTERNAL_SIGNALS = {1, 2, 9, 15}  # SIGHUP, SIGINT, SIGKILL, SIGTERM: sent by someone else
_CRASH_SIGNALS = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}
SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 9: "SIGKILL", 15: "SIGTERM", **_CRASH_SIGNALS}


@dataclass(frozen=True)
class Verdict:
    kind: EventKind
    role: Role
    category: str | None = None
    weight: str | None = None
    # what the event's detail keeps beside it (who relayed the fault: user_space)
    detail: dict[str, Any] = field(default_factory=dict, compare=False)


# a node offering fewer GPUs than it has: the device plugin withdrew the ones it marked
# unhealthy (an Xid it treats as fatal, a GPU lost); its own health record, not the kernel's
GPU_SHORTFALL = {"weight": 0.8, "user_space": "device plugin"}


def classify_termination(reason: str, exit_code: int | None, signal: int | None) -> Verdict:
    """What one container termination says about the failure."""
    if reason == "OOMKilled":
        return Verdict(EventKind.cgroup_oom, Role.primary, "host_oom")
    if reason == "DeadlineExceeded":
        return Verdict(EventKind.time_limit, Role.primary, "time_limit")
    if reason == "ContainerStatusUnknown":  # the container vanished with its pod; no verdict
        return Verdict(EventKind.exit_status, Role.context)
    if exit_code == 0 or reason == "Completed":
        return Verdict(EventKind.exit_status, Role.context)
    sig = signal or (exit_code - 128 if exit_code is not None and 128 < exit_code < 160 else None)
    if sig in _EXTERNAL_SIGNALS:
        return Verdict(EventKind.signal, Role.symptom)
    if sig == 11:
        return Verdict(EventKind.segfault, Role.primary, "application_error")
    if sig in _CRASH_SIGNALS:
        return Verdict(EventKind.signal, Role.primary, "application_error")
    if exit_code is None and not reason:
        return Verdict(EventKind.exit_status, Role.context)
    # a plain non-zero exit: the program failed, the reason is in its own log
    return Verdict(EventKind.exit_status, Role.primary, "application_error", weight="low")


POD_REASONS: dict[str, Verdict] = {
    "Evicted": Verdict(EventKind.other, Role.context),
    "DeadlineExceeded": Verdict(EventKind.time_limit, Role.primary, "time_limit"),
    "Preempted": Verdict(EventKind.preempted, Role.primary, "preempted"),
    "Preempting": Verdict(EventKind.preempted, Role.primary, "preempted"),
    "NodeLost": Verdict(EventKind.node_not_ready, Role.primary, "node_failure"),
    "NodeAffinity": Verdict(EventKind.other, Role.context),
    "UnexpectedAdmissionError": Verdict(EventKind.other, Role.context),
}
DISRUPTION: dict[str, Verdict] = {
    "PreemptionByScheduler": Verdict(EventKind.preempted, Role.primary, "preempted"),
    "PreemptionByKubeScheduler": Verdict(EventKind.preempted, Role.primary, "preempted"),
    "DeletionByTaintManager": Verdict(EventKind.node_not_ready, Role.symptom, "node_failure"),
    "TerminationByKubelet": Verdict(EventKind.other, Role.context),
    "EvictionByEvictionAPI": Verdict(EventKind.other, Role.context),
    "DeletionByPodGC": Verdict(EventKind.other, Role.context),
}


def classify_k8s_event(reason: str, message: str, event_type: str) -> Verdict | None:
    """What a Kubernetes Event says; None for routine events not worth keeping."""
    if reason == "NodeNotReady" or "status is now: NodeNotReady" in message:
        return Verdict(EventKind.node_not_ready, Role.primary, "node_failure")
    if reason == "NodeHasInsufficientMemory":
        return Verdict(EventKind.node_not_ready, Role.primary, "host_oom")
    if reason.startswith("NodeHasInsufficient") or reason == "NodeHasDiskPressure":
        return Verdict(EventKind.node_not_ready, Role.primary, "node_failure")
    if reason in ("OOMKilling", "SystemOOM"):
        return Verdict(EventKind.host_oom_kill, Role.primary, "host_oom")
    if reason == "Rebooted":
        return Verdict(EventKind.node_fail, Role.primary, "node_failure")
    if reason in ("Preempted", "Preempting"):
        return Verdict(EventKind.preempted, Role.primary, "preempted")
    if reason == "DeadlineExceeded":
        return Verdict(EventKind.time_limit, Role.primary, "time_limit")
    if reason in ("BackOff", "Killing", "TaintManagerEviction"):
        return Verdict(EventKind.other, Role.symptom)
    if reason in ("Evicted", "FailedScheduling", "NodeReady", "NodeNotSchedulable") or \
            event_type == "Warning":
        return Verdict(EventKind.other, Role.context)
    return None


# the kubelet's own record of a memory eviction: the killer names the class (a memory monitor,
# analysis/failure/ceilings.owners_record), wherever the message is pasted
KUBELET_MEMORY_EVICTION = {"monitor": "kubelet", "weight": 0.85}
EVICTED_RESOURCE = re.compile(r"low on resource: ([\w\-]+(?:\.[\w\-]+)*)")


def eviction_verdict(message: str) -> Verdict:
    """The kubelet evicted a pod: because the node ran low on memory, that is host memory
    running out (the pod's own use beyond its request is what the kubelet named); other
    resources (ephemeral storage, PIDs) are no memory fault and decide nothing here."""
    m = EVICTED_RESOURCE.search(message)
    if (m and m.group(1) == "memory") or "MemoryPressure" in message:
        return Verdict(EventKind.host_oom_kill, Role.primary, "host_oom",
                       detail=dict(KUBELET_MEMORY_EVICTION))
    return Verdict(EventKind.other, Role.context)
