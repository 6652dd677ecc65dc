"""Two events of one failure with no time of their own: of equal strength, the one that names
the node locates the failure. Real text: chrisknewman/tusas#149, where slurmstepd's oom_kill
line names no node and the srun line right after it names nid001277."""

from __future__ import annotations

import shutil
from pathlib import Path

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

LOG = (Path(__file__).resolve().parents[2] / "evals" / "realworld" / "incidents"
       / "tusas149_step_oom_kill_nid001277_and_free_on_node" / "logs" / "tusas.err")


def test_the_untimed_oom_kill_is_placed_on_the_node_srun_names(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    shutil.copy(LOG, bundle / LOG.name)
    with Ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(bundle, ledger)
    assert report.root_cause.category == "host_oom"
    assert report.root_cause.node == "nid001277"


def test_the_order_of_the_two_lines_does_not_move_the_node(tmp_path: Path) -> None:
    lines = LOG.read_text().splitlines(keepends=True)
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / LOG.name).write_text("".join([lines[1], lines[0], *lines[2:]]))
    with Ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(bundle, ledger)
    assert report.root_cause.node == "nid001277"
