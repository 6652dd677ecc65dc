import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.base import ParseContext, ParseError
from goodput_agent.parsing.json_positions import JsonPositions
from goodput_agent.parsing.k8s import K8S_LIST
from goodput_agent.parsing.k8s.verdicts import classify_termination
from goodput_agent.parsing.lines import read_head

REALWORLD = (Path(__file__).resolve().parents[3] / ".." / "shared" / "realworld").resolve()

# kubectl get pods -o json for a PyTorchJob (training-operator labels and injected env): the
# worker-1 container was OOM-killed once and is now in CrashLoopBackOff; worker-0 exited 1.
FIXTURE_PYTORCHJOB_PODS = {
    "apiVersion": "v1",
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "labels": {
                    "training.kubeflow.org/job-name": "llama-ft",
                    "training.kubeflow.org/job-role": "master",
                    "training.kubeflow.org/operator-name": "pytorchjob-controller",
                    "training.kubeflow.org/replica-index": "0",
                    "training.kubeflow.org/replica-type": "master",
                },
                "name": "llama-ft-master-0",
                "namespace": "ml",
                "uid": "0b6f6b8e-5c1e-4c39-9d55-2f0b7c8a0001",
            },
            "spec": {
                "containers": [{
                    "name": "pytorch",
                    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }],
                "nodeName": "gpu-node-3",
            },
            "status": {
                "containerStatuses": [{
                    "name": "pytorch",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"terminated": {
                        "containerID": "containerd://a1",
                        "exitCode": 137,
                        "reason": "Error",
                        "startedAt": "2024-06-02T09:00:05Z",
                        "finishedAt": "2024-06-02T10:14:40Z",
                    }},
                }],
                "phase": "Failed",
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "labels": {
                    "training.kubeflow.org/job-name": "llama-ft",
                    "training.kubeflow.org/replica-index": "0",
                    "training.kubeflow.org/replica-type": "worker",
                },
                "name": "llama-ft-worker-0",
                "namespace": "ml",
            },
            "spec": {
                "containers": [{"name": "pytorch",
                                "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
                "nodeName": "gpu-node-5",
            },
            "status": {
                "containerStatuses": [{
                    "name": "pytorch",
                    "restartCount": 0,
                    "state": {"terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "startedAt": "2024-06-02T09:00:06Z",
                        "finishedAt": "2024-06-02T10:14:52Z",
                    }},
                }],
                "phase": "Failed",
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "labels": {
                    "training.kubeflow.org/job-name": "llama-ft",
                    "training.kubeflow.org/replica-index": "1",
                    "training.kubeflow.org/replica-type": "worker",
                },
                "name": "llama-ft-worker-1",
                "namespace": "ml",
            },
            "spec": {
                "containers": [{
                    "name": "pytorch",
                    "env": [{"name": "MASTER_ADDR", "value": "llama-ft-master-0"},
                            {"name": "WORLD_SIZE", "value": "3"}],
                    "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "64Gi"}},
                }],
                "nodeName": "gpu-node-7",
            },
            "status": {
                "containerStatuses": [{
                    "name": "pytorch",
                    "ready": False,
                    "restartCount": 1,
                    "lastState": {"terminated": {
                        "containerID": "containerd://c3",
                        "exitCode": 137,
                        "reason": "OOMKilled",
                        "startedAt": "2024-06-02T09:00:07Z",
                        "finishedAt": "2024-06-02T10:14:31Z",
                    }},
                    "state": {"waiting": {
                        "message": "back-off 10s restarting failed container=pytorch",
                        "reason": "CrashLoopBackOff",
                    }},
                }],
                "phase": "Running",
            },
        },
    ],
    "kind": "List",
    "metadata": {"resourceVersion": ""},
}

# kubectl get events -o json: node-controller/kubelet NodeNotReady, node-problem-detector
# OOMKilling, kubelet BackOff, a scheduler Preempted, an events.k8s.io/v1 Evicted.
FIXTURE_EVENTS = {
    "apiVersion": "v1",
    "items": [
        {
            "apiVersion": "v1",
            "count": 1,
            "firstTimestamp": "2024-06-02T10:13:58Z",
            "involvedObject": {"kind": "Node", "name": "gpu-node-7", "uid": "gpu-node-7"},
            "kind": "Event",
            "lastTimestamp": "2024-06-02T10:13:58Z",
            "message": "Node gpu-node-7 status is now: NodeNotReady",
            "metadata": {"name": "gpu-node-7.17d8a2b3c4d5e6f7", "namespace": "default"},
            "reason": "NodeNotReady",
            "source": {"component": "node-controller"},
            "type": "Normal",
        },
        {
            "apiVersion": "v1",
            "count": 1,
            "eventTime": None,
            "firstTimestamp": "2024-06-02T10:14:30Z",
            "involvedObject": {"kind": "Node", "name": "gpu-node-7", "uid": "gpu-node-7"},
            "kind": "Event",
            "lastTimestamp": "2024-06-02T10:14:30Z",
            "message": "Memory cgroup out of memory: Killed process 4121 (python) "
                       "total-vm:98123456kB, anon-rss:67108864kB",
            "metadata": {"name": "gpu-node-7.17d8a2b3c4d5e6f8", "namespace": "default"},
            "reason": "OOMKilling",
            "source": {"component": "kernel-monitor", "host": "gpu-node-7"},
            "type": "Warning",
        },
        {
            "apiVersion": "v1",
            "count": 5,
            "firstTimestamp": "2024-06-02T10:14:45Z",
            "involvedObject": {"kind": "Pod", "name": "llama-ft-worker-1", "namespace": "ml"},
            "kind": "Event",
            "lastTimestamp": "2024-06-02T10:16:00Z",
            "message": "Back-off restarting failed container pytorch in pod llama-ft-worker-1",
            "metadata": {"name": "llama-ft-worker-1.17d8", "namespace": "ml"},
            "reason": "BackOff",
            "source": {"component": "kubelet", "host": "gpu-node-7"},
            "type": "Warning",
        },
        {
            "apiVersion": "v1",
            "firstTimestamp": "2024-06-02T11:00:00Z",
            "involvedObject": {"kind": "Pod", "name": "eval-0", "namespace": "ml"},
            "kind": "Event",
            "lastTimestamp": "2024-06-02T11:00:00Z",
            "message": "Preempted by ml/prod-train-0 on node gpu-node-2",
            "metadata": {"name": "eval-0.17d9", "namespace": "ml"},
            "reason": "Preempted",
            "source": {"component": "default-scheduler"},
            "type": "Normal",
        },
        {
            "apiVersion": "events.k8s.io/v1",
            "eventTime": "2024-06-02T11:05:01.123456Z",
            "kind": "Event",
            "metadata": {"name": "etl-1.17da", "namespace": "ml",
                         "creationTimestamp": "2024-06-02T11:05:01Z"},
            "note": "The node was low on resource: memory. Threshold quantity: 100Mi, "
                    "available: 90Mi.",
            "reason": "Evicted",
            "regarding": {"kind": "Pod", "name": "etl-1", "namespace": "ml"},
            "reportingController": "kubelet",
            "deprecatedSource": {"component": "kubelet", "host": "cpu-node-1"},
            "type": "Warning",
        },
        {
            "apiVersion": "v1",
            "firstTimestamp": "2024-06-02T09:00:01Z",
            "involvedObject": {"kind": "Pod", "name": "llama-ft-master-0", "namespace": "ml"},
            "kind": "Event",
            "lastTimestamp": "2024-06-02T09:00:01Z",
            "message": "Successfully assigned ml/llama-ft-master-0 to gpu-node-3",
            "metadata": {"name": "llama-ft-master-0.17d7", "namespace": "ml"},
            "reason": "Scheduled",
            "source": {"component": "default-scheduler"},
            "type": "Normal",
        },
    ],
    "kind": "List",
    "metadata": {"resourceVersion": ""},
}

# kubectl get nodes -o json (the NodeList API shape: items carry no "kind"): gpu-node-7 lost
# its kubelet (Ready Unknown + unreachable taints); cpu-node-1 is under memory pressure.
FIXTURE_NODES = {
    "apiVersion": "v1",
    "kind": "NodeList",
    "items": [
        {
            "metadata": {"name": "gpu-node-7", "labels": {"kubernetes.io/hostname": "gpu-node-7"}},
            "spec": {"taints": [
                {"effect": "NoSchedule", "key": "node.kubernetes.io/unreachable",
                 "timeAdded": "2024-06-02T10:13:58Z"},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable",
                 "timeAdded": "2024-06-02T10:14:03Z"},
            ]},
            "status": {
                "capacity": {"nvidia.com/gpu": "8"},
                "conditions": [
                    {"lastHeartbeatTime": "2024-06-02T10:12:40Z",
                     "lastTransitionTime": "2024-05-30T08:00:00Z", "message":
                     "kubelet has sufficient memory available", "reason":
                     "KubeletHasSufficientMemory", "status": "False", "type": "MemoryPressure"},
                    {"lastHeartbeatTime": "2024-06-02T10:12:40Z",
                     "lastTransitionTime": "2024-06-02T10:13:58Z",
                     "message": "Kubelet stopped posting node status.",
                     "reason": "NodeStatusUnknown", "status": "Unknown", "type": "Ready"},
                ],
                "nodeInfo": {"kubeletVersion": "v1.29.4"},
            },
        },
        {
            "metadata": {"name": "cpu-node-1"},
            "spec": {},
            "status": {
                "conditions": [
                    {"lastTransitionTime": "2024-06-02T11:04:00Z",
                     "message": "kubelet has insufficient memory available",
                     "reason": "KubeletHasInsufficientMemory", "status": "True",
                     "type": "MemoryPressure"},
                    {"lastTransitionTime": "2024-05-01T00:00:00Z",
                     "message": "kubelet is posting ready status", "reason": "KubeletReady",
                     "status": "True", "type": "Ready"},
                ],
                "nodeInfo": {"kubeletVersion": "v1.29.4"},
            },
        },
    ],
}

# kubectl get pod -o json for one evicted pod (no "items")
FIXTURE_EVICTED_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "infras-logstash-d484d57fc-rkx95", "namespace": "sre"},
    "spec": {"containers": [{"name": "infras-logstash"}], "nodeName": "192.168.250.5"},
    "status": {
        "message": "The node was low on resource: ephemeral-storage. Threshold quantity: 30Gi, "
                   "available: 24094024Ki.",
        "phase": "Failed",
        "reason": "Evicted",
    },
}


def _write(tmp_path: Path, name: str, doc: object) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc, indent=4) + "\n")
    return p


def _parse(p: Path):
    head = read_head(p).decode()
    assert K8S_LIST.sniff(head, p.name)
    return K8S_LIST.parse(p, ParseContext(rel_path=f"k8s/{p.name}"))


def test_oomkilled_last_state_is_host_oom_on_the_pods_node(tmp_path: Path) -> None:
    p = _write(tmp_path, "pods.json", FIXTURE_PYTORCHJOB_PODS)
    result = _parse(p)
    oom = [e for e in result.events if e.kind == EventKind.cgroup_oom]
    assert len(oom) == 1
    ev = oom[0]
    assert (ev.role, ev.category, ev.node) == (Role.primary, "host_oom", "gpu-node-7")
    assert ev.ts == datetime(2024, 6, 2, 10, 14, 31, tzinfo=UTC)
    assert ev.detail["json_path"] == "items[2].status.containerStatuses[0].lastState.terminated"
    assert ev.detail["restart_count"] == 1 and ev.detail["container"] == "pytorch"
    # the locator spans exactly the terminated block, and the excerpt is that text
    lines = p.read_text().splitlines()
    assert '"terminated"' in lines[ev.locator.line_start - 1]
    assert '"OOMKilled"' in "\n".join(lines[ev.locator.line_start - 1:ev.locator.line_end])
    assert lines[ev.locator.line_end - 1].strip().startswith("}")
    assert '"reason": "OOMKilled"' in ev.excerpt
    # worker-1 of a job with a master is rank 2; one GPU, so the event carries the rank
    assert ev.rank == 2 and ev.detail["pod_rank"] == 2


def test_exit_137_without_oom_is_a_symptom_and_exit_1_a_weak_primary(tmp_path: Path) -> None:
    result = _parse(_write(tmp_path, "pods.json", FIXTURE_PYTORCHJOB_PODS))
    by_pod = {e.detail.get("pod"): e for e in result.events if e.kind != EventKind.other}
    master = by_pod["llama-ft-master-0"]
    assert (master.kind, master.role, master.category) == (EventKind.signal, Role.symptom, None)
    assert master.detail["signal"] == "SIGKILL" and master.rank == 0
    worker0 = by_pod["llama-ft-worker-0"]
    assert (worker0.kind, worker0.role, worker0.category) == (
        EventKind.exit_status, Role.primary, "application_error")
    assert worker0.detail["weight"] == "low" and worker0.detail["exit_code"] == 1
    # 8 GPUs in the pod: the replica rank is not a process rank
    assert worker0.rank is None and worker0.detail["pod_rank"] == 1
    backoff = [e for e in result.events if e.detail.get("reason") == "CrashLoopBackOff"]
    assert backoff and backoff[0].role == Role.symptom
    pods = {p["name"]: p for p in result.facts["pods"]}
    assert pods["llama-ft-worker-1"]["node"] == "gpu-node-7"
    assert pods["llama-ft-worker-1"]["containers"][0]["last_reason"] == "OOMKilled"
    assert pods["llama-ft-master-0"]["rank"] == 0 and pods["llama-ft-master-0"]["phase"] == "Failed"


def test_events_node_not_ready_oomkilling_preempted_evicted(tmp_path: Path) -> None:
    p = _write(tmp_path, "events.json", FIXTURE_EVENTS)
    result = _parse(p)
    by_reason = {e.detail["reason"]: e for e in result.events}
    assert "Scheduled" not in by_reason  # routine Normal events are not kept
    nnr = by_reason["NodeNotReady"]
    assert (nnr.kind, nnr.role, nnr.category, nnr.node) == (
        EventKind.node_not_ready, Role.primary, "node_failure", "gpu-node-7")
    assert nnr.ts == datetime(2024, 6, 2, 10, 13, 58, tzinfo=UTC)
    item_lines = p.read_text().splitlines()[nnr.locator.line_start - 1:nnr.locator.line_end]
    assert item_lines[0].strip() == "{" and item_lines[-1].strip().startswith("}")
    assert any("NodeNotReady" in ln for ln in item_lines)
    assert nnr.detail["json_path"] == "items[0]"
    oom = by_reason["OOMKilling"]
    assert (oom.kind, oom.role, oom.category, oom.node) == (
        EventKind.host_oom_kill, Role.primary, "host_oom", "gpu-node-7")
    assert by_reason["BackOff"].role == Role.symptom
    assert by_reason["BackOff"].node == "gpu-node-7"  # from source.host
    pre = by_reason["Preempted"]
    assert (pre.kind, pre.category, pre.node) == (EventKind.preempted, "preempted", "gpu-node-2")
    ev = by_reason["Evicted"]
    assert ev.role == Role.context and ev.detail["resource"] == "memory"
    assert ev.ts == datetime(2024, 6, 2, 11, 5, 1, 123456, tzinfo=UTC)  # eventTime
    assert ev.node == "cpu-node-1"
    assert result.facts["events"] == 6


def test_node_conditions_ready_unknown_and_memory_pressure(tmp_path: Path) -> None:
    result = _parse(_write(tmp_path, "nodes.json", FIXTURE_NODES))
    not_ready = [e for e in result.events if e.kind == EventKind.node_not_ready]
    assert len(not_ready) == 1
    ev = not_ready[0]
    assert (ev.role, ev.category, ev.node) == (Role.primary, "node_failure", "gpu-node-7")
    assert ev.ts == datetime(2024, 6, 2, 10, 13, 58, tzinfo=UTC)
    assert ev.detail["taints"] == ["node.kubernetes.io/unreachable"] * 2
    assert ev.detail["json_path"] == "items[0].status.conditions[1]"
    pressure = [e for e in result.events if e.detail.get("condition") == "MemoryPressure"]
    assert [(e.node, e.role) for e in pressure] == [("cpu-node-1", Role.context)]
    facts = {n["name"]: n for n in result.facts["nodes"]}
    assert facts["gpu-node-7"]["ready"] is False and facts["cpu-node-1"]["ready"] is True
    assert facts["gpu-node-7"]["reason"] == "NodeStatusUnknown"


def test_single_evicted_pod_object(tmp_path: Path) -> None:
    result = _parse(_write(tmp_path, "pod.json", FIXTURE_EVICTED_POD))
    assert len(result.events) == 1
    ev = result.events[0]
    assert (ev.role, ev.node) == (Role.context, "192.168.250.5")
    assert ev.detail["resource"] == "ephemeral-storage"
    assert "Evicted" in ev.excerpt and ev.detail["json_path"] == "status.reason"


def test_minified_json_still_locates_line_one(tmp_path: Path) -> None:
    p = tmp_path / "pods.min.json"
    p.write_text(json.dumps(FIXTURE_PYTORCHJOB_PODS))
    result = _parse(p)
    oom = next(e for e in result.events if e.kind == EventKind.cgroup_oom)
    assert (oom.locator.line_start, oom.locator.line_end) == (1, 1)
    assert oom.excerpt.startswith('"terminated": {') and len(oom.excerpt) <= 500


@pytest.mark.parametrize("text", [
    '{"apiVersion": "v1", "items": [{"kind": "Pod", "metadata": {"name": "a"',  # truncated
    '{"apiVersion": "v1", "kind": "List", "items": [}',
])
def test_truncated_or_broken_json_raises_one_line_parse_error(tmp_path: Path, text: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(text)
    assert K8S_LIST.sniff(text, p.name)
    with pytest.raises(ParseError) as err:
        K8S_LIST.parse(p, ParseContext(rel_path="bad.json"))
    assert "\n" not in str(err.value) and "bad.json" in str(err.value)


def test_real_pod_list_truncated_in_the_middle_raises_parse_error(tmp_path: Path) -> None:
    text = json.dumps(FIXTURE_PYTORCHJOB_PODS, indent=2)
    p = tmp_path / "cut.json"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(ParseError):
        K8S_LIST.parse(p, ParseContext(rel_path="cut.json"))


def test_json_that_is_not_kubernetes_raises(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"apiVersion": "v1", "data": {}}')
    with pytest.raises(ParseError):
        K8S_LIST.parse(p, ParseContext(rel_path="x.json"))


def test_sniff_is_specific() -> None:
    assert not K8S_LIST.sniff('{"traceEvents": [], "schemaVersion": 1}', "trace.json")
    assert not K8S_LIST.sniff('{"jobs": [{"job_id": 1}]}', "sacct.json")
    assert not K8S_LIST.sniff("Name: p100\nRoles: <none>\n", "describe.txt")
    assert not K8S_LIST.sniff("", "empty.json")


def test_classify_termination_table() -> None:
    assert classify_termination("OOMKilled", 137, None).category == "host_oom"
    assert classify_termination("Completed", 0, None).role == Role.context
    assert classify_termination("Error", 139, None).kind == EventKind.segfault
    assert classify_termination("Error", 143, None).role == Role.symptom
    assert classify_termination("ContainerStatusUnknown", 137, None).role == Role.context
    assert classify_termination("DeadlineExceeded", None, None).category == "time_limit"


def test_positions_handle_escaped_keys_and_nested_arrays() -> None:
    text = '{\n "a\\"b": [\n  [1, 2],\n  {"c": "x,y"}\n ],\n "d": 3\n}'
    pos = JsonPositions(text, lambda p: True)
    assert pos.lines(('a"b', 1)) == (4, 4)
    assert pos.lines(("d",)) == (6, 6)
    assert pos.excerpt(('a"b', 1, "c")) == '"c": "x,y"'


def test_no_realworld_file_breaks_the_sniffer_or_parser() -> None:
    if not REALWORLD.is_dir():
        pytest.skip("../shared/realworld is not present (it is in CI)")
    for f in sorted(x for x in REALWORLD.rglob("*") if x.is_file()):
        head = read_head(f).decode("utf-8", errors="replace")
        if K8S_LIST.sniff(head, f.name):
            K8S_LIST.parse(f, ParseContext(rel_path=f.name))
