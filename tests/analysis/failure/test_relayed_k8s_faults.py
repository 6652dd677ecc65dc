"""Kubernetes faults the kubelet relays, investigated from bundles in kubectl's real text
formats (hand-made fixtures): the class, the node the pod is bound to, and the confidence the
rules allow (issue 24: one second-hand artifact, its confirmation missing, stays <= 0.6; two
observers of the same node agree: <= 0.7)."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.analysis.failure.ceilings import (
    OWNERS_RECORD,
    OWNERS_TWICE,
    UNCORROBORATED,
)
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

PODS = """NAME             READY   STATUS                     RESTARTS   AGE    IP            NODE       NOMINATED NODE   READINESS GATES
train-master-0   1/1     Running                    0          2h8m   10.244.1.10   gpu-a-01   <none>           <none>
train-worker-0   0/1     {status}   0          6m     10.244.3.12   gpu-a-07   <none>           <none>
train-worker-1   1/1     Running                    0          2h8m   10.244.4.13   gpu-a-09   <none>           <none>
"""  # noqa: E501
EVENTS = """LAST SEEN   TYPE      REASON                     OBJECT                MESSAGE
6m          Normal    SuccessfulDelete           pytorchjob/train      Deleted pod: train-worker-0
6m          Warning   {reason}   pod/train-worker-0    {message}
"""  # noqa: E501
GPU_LOST = ("Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: "
            "rpc error: code = Unknown desc = Unable to retrieve list of available devices: "
            "error creating nvml.Device 3: nvml: GPU is lost, which is unexpected")
INIT_OOM = ("Error: failed to create containerd task: failed to create shim task: OCI runtime "
            "create failed: runc create failed: unable to start container process: container "
            "init was OOM-killed (memory limit too low?): unknown")
NCCL_INIT = ("2026-03-06T19:33:53.000000002Z [rank{r}]:train-worker-0:{pid}:{tid} [{g}] NCCL INFO "
             "comm 0x10{r} rank {r} nranks 24 cudaDev {g} nvmlDev {g} busId {g}a000 commId "
             "0x7b1c9e - Init COMPLETE")


def _bundle(root: Path, status: str, reason: str, message: str,
            rank_error: str | None = None) -> Path:
    (root / "k8s").mkdir(parents=True)
    (root / "k8s" / "get_pods.txt").write_text(PODS.format(status=f"{status:<24}"))
    (root / "k8s" / "get_events.txt").write_text(EVENTS.format(reason=f"{reason:<24}",
                                                               message=message))
    (root / "incident.yaml").write_text("question: why did the train job fail?\n")
    if rank_error is not None:
        (root / "logs").mkdir()
        lines = [NCCL_INIT.format(r=8 + g, g=g, pid=100 + g, tid=180 + g) for g in range(8)]
        lines.append(f"2026-03-06T21:24:11.503185002Z [rank11]:{rank_error}")
        (root / "logs" / "train-worker-0.log").write_text("\n".join(lines) + "\n")
    return root


def _investigate(tmp_path: Path, bundle: Path):
    with Ledger(tmp_path / "l.duckdb") as lg:
        return investigate_bundle(bundle, lg).root_cause


def test_the_device_plugins_gpu_lost_is_the_pods_node_gpu_said_second_hand(tmp_path) -> None:
    rc = _investigate(tmp_path, _bundle(tmp_path / "b", "UnexpectedAdmissionError",
                                        "UnexpectedAdmissionError", GPU_LOST))
    assert (rc.category, rc.node) == ("gpu_hardware", "gpu-a-07")
    assert UNCORROBORATED < rc.confidence <= OWNERS_RECORD  # NVML's record, no kernel's


def test_a_ranks_cuda_error_on_that_node_agrees_but_stays_second_hand(tmp_path) -> None:
    rc = _investigate(tmp_path, _bundle(tmp_path / "b", "UnexpectedAdmissionError",
                                        "UnexpectedAdmissionError", GPU_LOST,
                                        rank_error="RuntimeError: CUDA error: unknown error"))
    assert (rc.category, rc.node) == ("gpu_hardware", "gpu-a-07")
    alone = _investigate(tmp_path, _bundle(
        tmp_path / "b2", "UnexpectedAdmissionError", "UnexpectedAdmissionError", GPU_LOST))
    assert alone.confidence <= rc.confidence <= OWNERS_TWICE


def test_runcs_container_init_oom_kill_is_host_memory_on_the_pods_node(tmp_path) -> None:
    rc = _investigate(tmp_path, _bundle(tmp_path / "b", "CreateContainerError", "Failed",
                                        INIT_OOM))
    assert (rc.category, rc.node) == ("host_oom", "gpu-a-07")
    assert rc.confidence >= 0.75  # runc's own record of the cgroup's OOM kill


def test_a_failure_to_start_for_another_reason_is_no_memory_verdict(tmp_path) -> None:
    rc = _investigate(tmp_path, _bundle(tmp_path / "b", "CreateContainerError", "Failed",
                                        "Error: container create failed: executable file not "
                                        "found in $PATH: unknown"))
    assert rc.category != "host_oom" and rc.confidence <= 0.6
