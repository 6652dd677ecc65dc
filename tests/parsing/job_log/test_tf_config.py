"""TensorFlow's TF_CONFIG, echoed into a worker's log, names that worker's host: TensorFlow's
own lines never do, and a per-worker log may be called anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.parsing.job_log.tf_config import tf_task

CLUSTER = {"chief": ["tfc-0:2222"], "worker": ["tfw-1:2222", "tfw-2:2222", "tfw-3:2222"]}
ECC = ("2026-10-18 14:59:33.166065: E tensorflow/stream_executor/cuda/cuda_event.cc:29] Error "
       "polling for event status: failed to query event: CUDA_ERROR_ECC_UNCORRECTABLE: "
       "uncorrectable ECC error encountered")
EPOCH = "2000/2000 [==============================] - 611s 305ms/step - loss: 1.4000"


@pytest.mark.parametrize("line", [
    "TF_CONFIG=" + json.dumps({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}}),
    "export TF_CONFIG='" + json.dumps({"cluster": CLUSTER,
                                       "task": {"type": "worker", "index": 1}}) + "'",
    "TF_CONFIG: " + repr({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}}),
])
def test_the_task_a_spec_names_is_its_own_host_in_every_spelling(line: str) -> None:
    task = tf_task(line)
    assert task is not None
    assert task.own == "tfw-2"
    assert task.hosts == ["tfc-0", "tfw-1", "tfw-2", "tfw-3"]


def test_a_spec_without_a_task_names_hosts_but_no_own_and_text_without_one_nothing() -> None:
    task = tf_task("TF_CONFIG=" + json.dumps({"cluster": CLUSTER}))
    assert task is not None and task.own is None
    assert tf_task("TF_CONFIG is not set, running single-worker") is None


def _bundle(root: Path, names: list[str]) -> Path:
    """Four workers' logs under the given names; worker 2's GPU reports an uncorrectable ECC
    error and aborts, the others log epochs."""
    (root / "logs").mkdir(parents=True)
    for index, name in enumerate(names):
        spec = {"cluster": {"worker": [f"tfw-{i}:2222" for i in range(4)]},
                "task": {"type": "worker", "index": index}}
        lines = [f"TF_CONFIG={json.dumps(spec)}", EPOCH] + ([ECC] if index == 2 else [EPOCH])
        (root / "logs" / name).write_text("\n".join(lines) + "\n")
    return root


@pytest.mark.parametrize("names", [
    ["worker-a.log", "worker-b.log", "worker-c.log", "worker-d.log"],  # nothing in the name
    ["w0.out", "w1.out", "w2.out", "w3.out"],
])
def test_a_tensorflow_workers_fault_is_placed_on_its_host_by_its_own_spec(
        tmp_path: Path, names: list[str]) -> None:
    bundle = _bundle(tmp_path / "b", names)
    with Ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(bundle, ledger)
    assert (report.root_cause.category, report.root_cause.node) == ("gpu_hardware", "tfw-2")


def test_an_ipv6_task_address_is_its_host_without_brackets_or_port() -> None:
    spec = {"cluster": {"worker": ["[fd00::1]:2222", "[fd00::2]:2222"]},
            "task": {"type": "worker", "index": 1}}
    task = tf_task("TF_CONFIG=" + json.dumps(spec))
    assert task is not None and (task.own, task.hosts) == ("fd00::2", ["fd00::1", "fd00::2"])
