"""A ledger filled by a real investigation of the demo bundle (copied, so the test can take
it away), and a policy that lets `alice` approve draining the culprit node."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

BASE = "http://127.0.0.1"  # the test client's Host: loopback, as the server only answers those

POLICY = """\
version: 1
approval: {required: true, expires_after: 30m}
tools:
  slurm_drain_node:
    enabled: true
    approvers: [alice]
    scope: {nodes: ["gpu-node-*"]}
"""


@dataclass
class Reviewed:
    ledger: Path
    bundle: Path
    policy: Path
    inv_id: str
    drain_action: int


def make_reviewed(root: Path, demo_bundle: Path) -> Reviewed:
    bundle = root / "bundle"
    shutil.copytree(demo_bundle, bundle)
    ledger_path = root / "ledger.duckdb"
    with Ledger(ledger_path) as ledger:
        report = investigate_bundle(bundle, ledger)
    drain = next(a.id for a in report.actions if a.tool == "slurm_drain_node")
    policy = root / "policy.yaml"
    policy.write_text(POLICY)
    assert report.investigation_id and drain is not None
    return Reviewed(ledger_path, bundle, policy, report.investigation_id, drain)


@pytest.fixture
def reviewed(tmp_path: Path, demo_bundle: Path) -> Reviewed:
    return make_reviewed(tmp_path, demo_bundle)
