"""Faults the kubelet relays in an Event's message from the device plugin or the container
runtime, whatever the Event's reason ("Failed", "UnexpectedAdmissionError"):
- the NVIDIA device plugin failing an allocation because NVML cannot reach a GPU (kubernetes
  #97131, NVIDIA/k8s-device-plugin#231: `Allocate failed due to device plugin
  GetPreferredAllocation rpc failed with err: ... error creating nvml.Device 3: nvml: GPU is
  lost, which is unexpected`): the GPU is lost, as user space (NVML) sees it; the kernel's Xid
  line would be the first-hand record (a second-hand artifact, analysis/failure/ceilings.py);
- runc failing to start the container because its init process was OOM-killed
  (aws/amazon-ecs-agent#3021: `OCI runtime create failed: ... container init was OOM-killed
  (memory limit too low?)`): runc read the container's memory cgroup, a first-hand record
  (as the kernel's OOM line is); the pod's memory limit is below what the container needs to
  start.
Every other Event is judged by verdicts.classify_k8s_event (an eviction by eviction_verdict).
"""

from __future__ import annotations

import re

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.k8s.verdicts import Verdict, classify_k8s_event, eviction_verdict

_GPU_LOST = re.compile(r"(?:nvml\.Device (?P<index>\d+): )?nvml: GPU is lost|NVMLError_GpuIsLost")
_INIT_OOM = re.compile(r"container init was OOM-killed")


def relayed_verdict(message: str) -> Verdict | None:
    """The fault a device plugin's or container runtime's message names, else None."""
    if "GPU" in message and (m := _GPU_LOST.search(message)):
        # NVML's own word on the GPU's state, as the device plugin relays it
        detail: dict[str, object] = {"user_space": "device plugin (NVML)", "weight": 0.8}
        if m["index"] is not None:
            detail["gpu_index"] = int(m["index"])
        return Verdict(EventKind.gpu_device_unhealthy, Role.primary, "gpu_hardware",
                       detail=detail)
    if "OOM-killed" in message and _INIT_OOM.search(message):
        # runc's own record (it read the container's memory cgroup), not a guess from exit 137
        return Verdict(EventKind.cgroup_oom, Role.primary, "host_oom",
                       detail={"runtime": "runc", "container_start_failed": True})
    return None


def event_verdict(reason: str, message: str, event_type: str) -> Verdict | None:
    """What one Kubernetes Event says, its message read first for a relayed fault."""
    if reason == "Evicted":
        return eviction_verdict(message)
    return relayed_verdict(message) or classify_k8s_event(reason, message, event_type)
