"""Two events of one failure with no time of their own: of equal strength, the one that names
the node locates the failure. Format as printed in https://github.com/chrisknewman/tusas/issues/149
(node, step and time changed): slurmstepd's oom_kill line names no node and the srun line right
after it names the node."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

LINES = [
    "slurmstepd: error: Detected 1 oom_kill event in StepId=781204.0. Some of the step tasks "
    "have been OOM Killed.\n",
    "srun: error: nid004512: tasks 2-5: Out Of Memory\n",
    "srun: Terminating StepId=781204.0\n",
    "slurmstepd: error: *** STEP 781204.0 ON nid004512 CANCELLED AT 2024-02-11T19:40:27 ***\n",
]
NAME = "run.err"


def test_the_untimed_oom_kill_is_placed_on_the_node_srun_names(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / NAME).write_text("".join(LINES))
    with Ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(bundle, ledger)
    assert report.root_cause.category == "host_oom"
    assert report.root_cause.node == "nid004512"


def test_the_order_of_the_two_lines_does_not_move_the_node(tmp_path: Path) -> None:
    lines = LINES
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / NAME).write_text("".join([lines[1], lines[0], *lines[2:]]))
    with Ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(bundle, ledger)
    assert report.root_cause.node == "nid004512"


NODE_FAILURE = [
    "srun: error: Node failure on gpu-a012\n",
    "slurmstepd: error: *** STEP 881234.0 ON gpu-a011 CANCELLED AT 2025-03-02T10:14:55 DUE TO "
    "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n",
]


def test_a_node_failure_is_placed_where_srun_says_not_where_slurmstepd_reported_it(
        tmp_path: Path) -> None:
    # the ON node of a cancel line is the reporting slurmstepd's (often the batch host): a
    # failed node cannot report its own failure
    for order, lines in enumerate((NODE_FAILURE, NODE_FAILURE[::-1])):
        bundle = tmp_path / f"b{order}"
        bundle.mkdir()
        (bundle / NAME).write_text("".join(lines))
        with Ledger(tmp_path / f"l{order}.duckdb") as ledger:
            report = investigate_bundle(bundle, ledger)
        assert (report.root_cause.category, report.root_cause.node) == (
            "node_failure", "gpu-a012")
