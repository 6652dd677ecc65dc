"""`goodput eval` on the shipped cases: the acceptance bar, and the gain over the baseline."""

import json
import subprocess
import sys

import pytest

from goodput_agent.evals.scorer import baseline_blame, default_cases_dir, score_suite


@pytest.fixture(scope="module")
def scores():
    return score_suite()


def test_shipped_suite_meets_the_acceptance_bar(scores) -> None:
    assert len(scores.cases) >= 40
    assert scores.category_accuracy >= 0.95, [c for c in scores.cases if not c.category_ok]
    assert scores.node_accuracy >= 0.95, [c for c in scores.cases if not c.node_ok]


def test_every_failure_class_is_covered_and_scored(scores) -> None:
    assert set(scores.per_category) == {"gpu_hardware", "gpu_oom", "host_oom",
                                        "application_error", "network_fault", "node_failure",
                                        "hang", "time_limit", "preempted"}
    assert sum(row.get(cat, 0) for cat, row in scores.confusion.items()) == len(scores.cases)


def test_baseline_is_visibly_worse_on_misleading_cases(scores) -> None:
    misleading = [c for c in scores.cases if c.misleading]
    assert len(misleading) >= 10
    ours = sum(c.node_ok for c in misleading) / len(misleading)
    theirs = sum(c.baseline_node == c.expected_node for c in misleading) / len(misleading)
    assert ours - theirs >= 0.3


def test_baseline_blames_the_loudest_node(tmp_path) -> None:
    (tmp_path / "nodes" / "a").mkdir(parents=True)
    (tmp_path / "nodes" / "b").mkdir(parents=True)
    (tmp_path / "nodes" / "a" / "x.log").write_text("NCCL error: timeout\n" * 5)
    (tmp_path / "nodes" / "b" / "x.log").write_text("Xid 79 error\n")
    assert baseline_blame(tmp_path) == ("network_fault", "a")


def test_eval_command_prints_json_scores() -> None:
    proc = subprocess.run([sys.executable, "-m", "goodput_agent.cli", "eval", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"failure", "slowdown", "latency"}
    assert all(s["category_accuracy"] >= 0.95 for s in data.values())
    assert len(data["failure"]["cases"]) == len(list(default_cases_dir().glob("*/expected.json")))
    # issue 3: straggler/throttled rank; issue 4: change point within 5 minutes
    assert data["slowdown"]["rank_accuracy"] >= 0.95 and len(data["slowdown"]["cases"]) >= 25
    assert data["latency"]["windows_within_5min"] >= 0.95 and len(data["latency"]["cases"]) >= 25
