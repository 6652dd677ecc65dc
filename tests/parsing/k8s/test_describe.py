"""`kubectl describe pod|node` text: the same facts and rules as the JSON objects. The describe
texts below are written after kubectl's output format (names and values made up)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.k8s.describe import PARSER
from goodput_agent.parsing.registry import identify

POD = """\
Name:             llama-worker-3
Namespace:        train
Priority:         0
Node:             gpu-node-07/10.4.0.17
Start Time:       Tue, 03 Jun 2025 11:02:14 +0000
Status:           Running
Containers:
  pytorch:
    Container ID:   containerd://4f1c
    Image:          nvcr.io/nvidia/pytorch:24.05-py3
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Tue, 03 Jun 2025 11:10:02 +0000
      Finished:     Tue, 03 Jun 2025 11:12:40 +0000
    Ready:          False
    Restart Count:  5
    Limits:
      memory:          64Gi
      nvidia.com/gpu:  8
Conditions:
  Type              Status
  Ready             False
Events:
  Type     Reason     Age                  From     Message
  ----     ------     ----                 ----     -------
  Normal   Pulled     12m                  kubelet  Container image already present on machine
  Warning  BackOff    2m (x20 over 9m)     kubelet  Back-off restarting failed container pytorch
"""

NODE = """\
Name:               gpu-node-07
Roles:              <none>
Taints:             node.kubernetes.io/unreachable:NoExecute
Conditions:
  Type             Status    LastHeartbeatTime                 LastTransitionTime                Reason              Message
  ----             ------    -----------------                 ------------------                ------              -------
  MemoryPressure   Unknown   Tue, 03 Jun 2025 11:20:30 +0000   Tue, 03 Jun 2025 11:21:14 +0000   NodeStatusUnknown   Kubelet stopped posting node status.
  Ready            Unknown   Tue, 03 Jun 2025 11:20:30 +0000   Tue, 03 Jun 2025 11:21:14 +0000   NodeStatusUnknown   Kubelet stopped posting node status.
Addresses:
  InternalIP:  10.4.0.17
"""  # noqa: E501


def parse(tmp_path: Path, text: str):
    path = tmp_path / "describe.txt"
    path.write_text(text)
    assert identify(text, path.name) is PARSER
    return PARSER.parse(path, ParseContext(rel_path="k8s/describe.txt"))


def test_a_pods_last_termination_is_judged_as_in_the_json(tmp_path) -> None:
    res = parse(tmp_path, POD)
    oom = [e for e in res.events if e.kind == EventKind.cgroup_oom]
    assert len(oom) == 1
    e = oom[0]
    assert (e.category, e.role, e.node) == ("host_oom", Role.primary, "gpu-node-07")
    assert e.ts == datetime(2025, 6, 3, 11, 12, 40, tzinfo=UTC)
    assert e.detail["exit_code"] == 137 and e.detail["restart_count"] == "5"
    assert (e.locator.line_start, e.locator.line_end) == (13, 17)
    assert "llama-worker-3 container pytorch last termination: OOMKilled" in e.summary
    backoff = [e for e in res.events if e.detail.get("reason") == "BackOff"]
    assert backoff and backoff[0].role == Role.symptom and backoff[0].ts is None
    assert res.facts["k8s_pod_node"] == {"llama-worker-3": "gpu-node-07"}


def test_a_node_that_stopped_posting_status_is_not_ready_from_its_last_transition(
        tmp_path) -> None:
    res = parse(tmp_path, NODE)
    (ready,) = [e for e in res.events if e.detail.get("condition") == "Ready"]
    assert (ready.kind, ready.category, ready.node) == (
        EventKind.node_not_ready, "node_failure", "gpu-node-07")
    assert ready.ts == datetime(2025, 6, 3, 11, 21, 14, tzinfo=UTC)
    # an Unknown pressure condition says nothing about pressure
    assert not [e for e in res.events if e.detail.get("condition") == "MemoryPressure"]


def test_a_pasted_fragment_without_the_header_is_read(tmp_path) -> None:
    fragment = "still failing:\n\n    State:          Waiting\n      Reason:       " \
               "CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n" \
               "      Exit Code:    1\n"
    res = parse(tmp_path, fragment)
    (e,) = [e for e in res.events if e.kind == EventKind.exit_status]
    assert (e.category, e.detail["exit_code"]) == ("application_error", 1)
    assert "a pod a container last termination: Error" in e.summary


def test_job_logs_and_json_are_not_taken_for_describe_output() -> None:
    assert not PARSER.sniff('{"kind": "PodList", "items": []}', "pods.json")
    assert not PARSER.sniff("[rank0]: Traceback (most recent call last):\n", "rank0.log")


EVENTS_BLOCK = """Events:
  Type     Reason   Age  From                  Message
  ----     ------   ---  ----                  -------
  Warning  Evicted  12m  {source}  The node was low on resource: memory. Threshold quantity: 100Mi, available: 95521Ki. Container pytorch was using 1557135360Ki, request is 256Gi, has larger consumption of memory.
  Normal   Killing  12m  {source}  Stopping container pytorch
"""  # noqa: E501


@pytest.mark.parametrize(("source", "node"), [("kubelet, gpu-node-19", "gpu-node-19"),
                                              ("kubelet", None)])
def test_the_from_column_of_kubectl_before_1_20_names_the_kubelets_node(
        tmp_path: Path, source: str, node: str | None) -> None:
    res = parse(tmp_path, EVENTS_BLOCK.format(source=f"{source:<20}"))
    [evicted] = [e for e in res.events if e.role == Role.primary]
    assert (evicted.category, evicted.node) == ("host_oom", node)


def test_a_pods_status_message_relayed_from_the_device_plugin_is_read(tmp_path: Path) -> None:
    res = parse(tmp_path, (
        "Name:         rojin-2q6ld\nNamespace:    default\nNode:         gpu-b-02/10.0.0.7\n"
        "Status:       Failed\nReason:       UnexpectedAdmissionError\n"
        "Message:      Pod Allocate failed due to device plugin GetPreferredAllocation rpc "
        "failed with err: rpc error: code = Unknown desc = Unable to retrieve list of available "
        "devices: error creating nvml.Device 5: nvml: GPU is lost, which is unexpected\n"))
    [lost] = res.events
    assert (lost.category, lost.node, lost.locator.line_start) == ("gpu_hardware", "gpu-b-02", 6)
    assert lost.detail["user_space"]


EVICTED_POD = """\
Name:           trainer-0
Namespace:      research
Node:           gpu-node-11/10.0.4.11
Status:         Failed
Reason:         {reason}
Message:        The node was low on resource: {resource}. Container trainer was using 1275700Ki, which exceeds its request of 0.
IP:
Controlled By:  Job/trainer
"""  # noqa: E501


@pytest.mark.parametrize(("reason", "resource", "category"), [
    ("Evicted", "memory", "host_oom"),
    ("Evicted", "ephemeral-storage", None),  # no memory fault
])
def test_a_pods_eviction_status_message_is_the_kubelets_eviction(
        tmp_path, reason: str, resource: str, category: str | None) -> None:
    res = parse(tmp_path, EVICTED_POD.format(reason=reason, resource=resource))
    judged = [e for e in res.events if e.role == Role.primary]
    assert [e.category for e in judged] == ([category] if category else [])
    if category:
        assert judged[0].node == "gpu-node-11" and judged[0].locator.line_start == 6


@pytest.mark.parametrize(("reason", "message", "category"), [
    ("DeadlineExceeded", "Job was active longer than specified deadline", "time_limit"),
    ("Preempted", "Preempted in order to admit critical pod", "preempted"),
    ("Completed", "done", None),
])
def test_a_pods_status_reason_is_judged_as_an_event_with_that_reason_is(
        tmp_path, reason: str, message: str, category: str | None) -> None:
    text = EVICTED_POD.format(reason=reason, resource="memory").replace(
        "The node was low on resource: memory. Container trainer was using 1275700Ki, which "
        "exceeds its request of 0.", message)
    judged = [e for e in parse(tmp_path, text).events if e.role == Role.primary]
    assert [e.category for e in judged] == ([category] if category else [])
