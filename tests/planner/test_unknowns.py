"""The manifest's missing-evidence lines join a report's unknowns once, after what the planner
said, and in the manifest's order."""

from __future__ import annotations

from goodput_agent.bundle import Inventory
from goodput_agent.planner.unknowns import with_missing_evidence

GONE = "missing evidence: kernel log of gpu-node-01 (kernel_log, forbidden: not permitted)"
LATE = "missing evidence: sacct of job 7 (slurm, timed out: 30 s)"


def test_missing_evidence_follows_what_the_planner_said_once() -> None:
    inv = Inventory(root="/b", missing=[GONE, LATE])
    assert with_missing_evidence(["a tool failed"], inv) == ["a tool failed", GONE, LATE]
    # a line the planner already copied word for word is not said twice
    assert with_missing_evidence([LATE, "x"], inv) == [LATE, "x", GONE]
    assert with_missing_evidence(["x"], None) == ["x"]
    assert with_missing_evidence([], Inventory(root="/b")) == []
