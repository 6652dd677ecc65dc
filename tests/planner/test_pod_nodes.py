"""Kubernetes evidence names the pod; where it ran is in another file (`kubectl get pods -o
wide`, or the JSON pods). Events about a pod, and the lines of the log a file holds for a pod
(`kubectl logs POD > POD.log`), are then that pod's node: a NotReady node that held the job's
pod is located (and excluded from the retry), a rank-prefixed traceback in one pod's log names
its node as well as its rank. Hand-made bundles (fixtures), in the shape of the held-out cases
that showed the class."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

PODS_WIDE = """NAME          READY   STATUS    RESTARTS   AGE   IP            NODE       NOMINATED NODE   READINESS GATES
train-master-0   1/1     Running   0          5h    10.244.1.10   gpu-a-01   <none>           <none>
train-worker-0   1/1     Running   0          5h    10.244.2.11   gpu-a-02   <none>           <none>
train-worker-1   1/1     {status}   0          5h    10.244.3.12   gpu-a-07   <none>           <none>
"""  # noqa: E501
NODES = """NAME       STATUS     ROLES    AGE   VERSION
gpu-a-01   Ready      <none>   40d   v1.29.6
gpu-a-02   Ready      <none>   40d   v1.29.6
gpu-a-07   {state}   <none>   40d   v1.29.6
"""
NOT_READY_EVENTS = """LAST SEEN   TYPE      REASON                 OBJECT                 MESSAGE
24m         Warning   NodeNotReady           pod/train-worker-1     Node is not ready
20m         Warning   TaintManagerEviction   pod/train-worker-1     Marking for deletion Pod ml/train-worker-1
"""  # noqa: E501
TIMEOUT = ("[rank{r}]:[E0312 01:07:57.013710 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum=5120, OpType=ALLREDUCE, NumelIn=4194304,"
           " NumelOut=4194304, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.")
TRACEBACK = """[rank20]: Traceback (most recent call last):
[rank20]:   File "/workspace/train.py", line 211, in <module>
[rank20]:     batch = collate(samples)
[rank20]:   File "/workspace/data.py", line 88, in collate
[rank20]:     ids = [s["input_ids"] for s in samples]
[rank20]: KeyError: 'input_ids'
"""


def bundle(root: Path, wide: bool, lost: bool) -> Path:
    (root / "k8s").mkdir(parents=True)
    (root / "logs").mkdir()
    pods = PODS_WIDE.format(status="Unknown" if lost else "Error  ")
    if not wide:  # without -o wide: no IP, no NODE
        pods = "\n".join(ln[:60].rstrip() for ln in pods.splitlines()) + "\n"
    (root / "k8s" / "get_pods.txt").write_text(pods)
    (root / "k8s" / "get_nodes.txt").write_text(NODES.format(
        state="NotReady" if lost else "Ready   "))
    if lost:
        (root / "k8s" / "get_events.txt").write_text(NOT_READY_EVENTS)
    (root / "incident.yaml").write_text("question: why did the train job fail?\n")
    for pod, ranks in (("train-master-0", range(0, 8)), ("train-worker-0", range(8, 16))):
        (root / "logs" / f"{pod}.log").write_text(
            "\n".join(TIMEOUT.format(r=r) for r in ranks) + "\n")
    (root / "logs" / "train-worker-1-previous.log").write_text(
        "" if lost else TRACEBACK)
    return root


@pytest.mark.parametrize("wide", [True, False])
def test_a_lost_node_that_held_the_jobs_pod_is_located(tmp_path: Path, wide: bool) -> None:
    with Ledger(tmp_path / "l.duckdb") as lg:
        report = investigate_bundle(bundle(tmp_path / "b", wide, lost=True), lg)
    assert report.root_cause.category == "node_failure"
    if not wide:  # nothing says where the pod ran: not located, and not guessed
        assert report.root_cause.node is None
        return
    assert report.root_cause.node == "gpu-a-07"
    # the restart avoids the lost node, whether proposed or advice (no job named in the bundle)
    avoid = [a.args for a in report.actions if a.tool == "k8s_restart_job_pods"] + [
        a.details for a in report.advice if a.topic == "k8s_restart_job_pods"]
    assert avoid and all("gpu-a-07" in a.get("avoid_nodes", []) for a in avoid)
    assert any(a.tool == "k8s_cordon_node" and a.args == {"node": "gpu-a-07"}
               for a in report.actions)


@pytest.mark.parametrize("wide", [True, False])
def test_a_rank_prefixed_traceback_in_one_pods_log_names_its_node(tmp_path: Path,
                                                                  wide: bool) -> None:
    with Ledger(tmp_path / "l.duckdb") as lg:
        report = investigate_bundle(bundle(tmp_path / "b", wide, lost=False), lg)
    rc = report.root_cause
    assert (rc.category, rc.rank) == ("application_error", 20)
    assert rc.node == ("gpu-a-07" if wide else None)


EVICTED_BLOCK = """Events:
  Type     Reason   Age  From     Message
  ----     ------   ---  ----     -------
  Warning  Evicted  27m  kubelet  The node was low on resource: memory. Threshold quantity: 100Mi, available: 92856Ki. Container pytorch was using 1616904192Ki, request is 384Gi, has larger consumption of memory.
  Normal   Killing  27m  kubelet  Stopping container pytorch
"""  # noqa: E501
LAST_STATE = """    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Thu, 26 Mar 2026 00:58:07 +0000
      Finished:     Thu, 26 Mar 2026 03:23:57 +0000
    Restart Count:  3
"""


@pytest.mark.parametrize(("fragment", "status"), [(EVICTED_BLOCK, "Evicted"),
                                                  (LAST_STATE, "CrashLoopBackOff")])
@pytest.mark.parametrize("failing", [1, 2])
def test_a_pasted_describe_fragment_is_the_only_failing_pods(
        tmp_path: Path, fragment: str, status: str, failing: int) -> None:
    """A fragment names no pod: it is the one failing pod's, and its node the fault's; with
    two failing pods the fragment could be either's, and nothing is located."""
    root = tmp_path / "b"
    (root / "k8s").mkdir(parents=True)
    pods = PODS_WIDE.format(status=f"{status:<7}")
    if failing == 2:
        pods = pods.replace("train-worker-0   1/1     Running",
                            f"train-worker-0   0/1     {status}")
    (root / "k8s" / "get_pods.txt").write_text(pods)
    (root / "k8s" / "pasted.txt").write_text(fragment)
    (root / "incident.yaml").write_text("question: what killed the train job?\n")
    with Ledger(tmp_path / "l.duckdb") as lg:
        rc = investigate_bundle(root, lg).root_cause
    assert rc.category == "host_oom"
    assert rc.node == ("gpu-a-07" if failing == 1 else None)
