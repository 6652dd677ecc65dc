"""Faults the kubelet relays from the device plugin and the container runtime in an Event's
message, in kubectl's and the runtimes' real wording (kubernetes#97131,
NVIDIA/k8s-device-plugin#231, aws/amazon-ecs-agent#3021): the GPU lost as NVML sees it
(second-hand: the device plugin's word), runc's container init OOM-killed (runc's own record);
and the scheduler's `Successfully assigned NS/POD to NODE` naming where a pod is bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.bundle import scan
from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log.host_memory import host_memory_message
from goodput_agent.parsing.k8s.relayed import event_verdict, relayed_verdict
from goodput_agent.parsing.k8s.tables import PARSER
from goodput_agent.parsing.k8s.verdicts import eviction_verdict

GPU_LOST = ("Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: "
            "rpc error: code = Unknown desc = Unable to retrieve list of available devices: "
            "error creating nvml.Device 5: nvml: GPU is lost, which is unexpected")
RUNC_INIT_OOM = ("Error: failed to create containerd task: failed to create shim task: OCI "
                 "runtime create failed: runc create failed: unable to start container process: "
                 "container init was OOM-killed (memory limit too low?): unknown")
DOCKER_INIT_OOM = ("CannotStartContainerError: Error response from daemon: OCI runtime create "
                   "failed: container_linux.go:380: starting container process caused: container "
                   "init was OOM-killed (memory limit too low?): unknown")


def test_the_device_plugins_gpu_lost_is_gpu_hardware_said_second_hand() -> None:
    v = relayed_verdict(GPU_LOST)
    assert v is not None
    assert (v.kind, v.role, v.category) == (EventKind.gpu_device_unhealthy, Role.primary,
                                            "gpu_hardware")
    assert v.detail["gpu_index"] == 5 and v.detail["user_space"]  # ceilings.secondhand


@pytest.mark.parametrize("message", [RUNC_INIT_OOM, DOCKER_INIT_OOM])
def test_runcs_container_init_oom_kill_is_host_memory(message: str) -> None:
    v = event_verdict("Failed", message, "Warning")
    assert v is not None and (v.kind, v.category) == (EventKind.cgroup_oom, "host_oom")
    assert "user_space" not in v.detail  # runc read the cgroup itself


def test_other_failures_to_start_stay_context() -> None:
    v = event_verdict("Failed", "Error: ErrImagePull", "Warning")
    assert v is not None and v.role == Role.context and v.category is None
    assert relayed_verdict("Back-off restarting failed container pytorch") is None


def test_an_events_table_reads_the_relayed_faults_and_where_the_pod_was_scheduled(
        tmp_path: Path) -> None:
    (tmp_path / "get_events.txt").write_text(
        "LAST SEEN   TYPE      REASON                     OBJECT              MESSAGE\n"
        "6m          Normal    Scheduled                  pod/train-worker-1  Successfully "
        "assigned ml/train-worker-1 to gpu-a-07\n"
        f"6m          Warning   UnexpectedAdmissionError   pod/train-worker-1  {GPU_LOST}\n"
        f"5m          Warning   Failed                     pod/train-worker-2  {RUNC_INIT_OOM}\n")
    assert scan(tmp_path).files[0].format == "k8s_table"
    res = PARSER.parse(tmp_path / "get_events.txt", ParseContext(rel_path="get_events.txt"))
    got = [(e.category, e.detail["object"], e.locator.line_start) for e in res.events
           if e.role == Role.primary]
    assert got == [("gpu_hardware", "train-worker-1", 3), ("host_oom", "train-worker-2", 4)]
    assert res.facts["pods"] == [{"name": "train-worker-1", "namespace": "ml",
                                  "node": "gpu-a-07"}]


def test_the_kubelets_memory_eviction_reads_the_same_wherever_it_is_pasted() -> None:
    """The killer's own record: the Kubernetes parsers and a pasted job log give it the same
    weight and the same owner, so its verdict does not depend on which parser read it."""
    message = ("The node was low on resource: memory. Container trainer was using 61Gi, "
               "which exceeds its request of 32Gi.")
    k8s = eviction_verdict(message)
    pasted = host_memory_message(message)
    assert pasted is not None and k8s.category == "host_oom"
    assert k8s.detail == pasted.detail and k8s.detail["monitor"] == "kubelet"
