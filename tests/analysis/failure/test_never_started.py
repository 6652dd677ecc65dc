"""A job the scheduler never started has no failure in it: the answer says so and points at the
scheduler's record, whichever scheduler and format (sacct, kubectl describe, kubectl -o json)."""

import json
from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

SACCT = ("JobID|JobName|Partition|State|ExitCode|Start|End|Elapsed|NodeList|Reason\n"
         "4242|train|gpu|PENDING|0:0|Unknown|Unknown|00:00:00|None assigned|Resources\n")
DESCRIBE = """Name:             trainer-0
Namespace:        ml
Priority:         0
Node:             <none>
Labels:           app=trainer
Status:           Pending
IP:
Controlled By:    Job/trainer
Containers:
  trainer:
    Image:       train:latest
    Limits:
      nvidia.com/gpu:  8
Conditions:
  Type           Status
  PodScheduled   False
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  Warning  FailedScheduling  2m    default-scheduler  0/4 nodes are available: """ \
    """4 Insufficient nvidia.com/gpu.
"""
POD_JSON = {"apiVersion": "v1", "kind": "List", "items": [{
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "trainer-0", "namespace": "ml", "uid": "u1"},
    "spec": {"containers": [{"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
    "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}]}}]}


@pytest.mark.parametrize(("name", "text", "where"), [
    ("sacct.txt", SACCT, "sacct.txt:2"),
    ("describe-pod.txt", DESCRIBE, "describe-pod.txt:6"),
    ("pods.json", json.dumps(POD_JSON, indent=1), "pods.json"),
])
def test_a_job_that_never_started_has_no_failure(tmp_path: Path, name: str, text: str,
                                                 where: str) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / name).write_text(text)
    with Ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(bundle, ledger, "failure")
    rc = report.root_cause
    assert rc.category == "unknown" and "never started" in rc.summary
    assert rc.evidence and rc.evidence[0].locator.startswith(where)
    assert report.unread == []


def test_a_started_job_is_not_called_pending(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "sacct.txt").write_text(SACCT.replace("PENDING", "RUNNING").replace(
        "Unknown|Unknown", "2026-11-02T09:00:00|Unknown"))
    with Ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(bundle, ledger, "failure")
    assert "never started" not in report.root_cause.summary
