"""A ledger filled by a real investigation of the demo bundle (copied, so the test can take
it away), a config change proposed on it (the one action that needs no cluster), a policy that
lets `alice` approve draining the culprit node and `alice` or `bob` approve the change, and
personal tokens for the people the tests sign in as."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.tokens import create_token
from goodput_agent.report import Report

BASE = "http://127.0.0.1"  # the test client's Host: loopback, as the server only answers those


def served_slowdown_case(tmp_path: Path, name: str) -> tuple[Path, Report, TestClient]:
    """A copy of a shipped slowdown case, investigated into a fresh ledger, and a client of the
    pages on that ledger: (the copy, its report, the client)."""
    from goodput_agent.web.app import ServeConfig, create_app
    from tests.conftest import REPO

    case = tmp_path / "case"
    shutil.copytree(REPO / "evals" / "slowdown_cases" / name, case)
    ledger = tmp_path / "l.duckdb"
    with Ledger(ledger) as led:
        report = investigate_bundle(case, led)
    client = TestClient(create_app(ServeConfig(ledger=ledger)), base_url=BASE)
    return case, report, client

POLICY = """\
version: 1
approval: {{required: true, expires_after: 30m}}
groups: {{sre: [dave]}}
tools:
  slurm_drain_node:
    enabled: true
    approvers: [alice, "group:sre"]
    scope: {{nodes: ["gpu-node-*"]}}
  config_change:
    enabled: true
    approvers: [alice, bob, "group:sre"]
    scope: {{paths: ["{jobs}/*"]}}
    preconditions: {{claim_names_target: false}}
"""


@dataclass
class Reviewed:
    ledger: Path
    bundle: Path
    policy: Path
    inv_id: str
    drain_action: int
    config_action: int
    script: Path


def make_reviewed(root: Path, demo_bundle: Path) -> Reviewed:
    bundle = root / "bundle"
    shutil.copytree(demo_bundle, bundle)
    jobs = root / "jobs"
    jobs.mkdir()
    script = jobs / "train.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --mem=64G\nsrun python train.py\n")
    ledger_path = root / "ledger.duckdb"
    with Ledger(ledger_path) as ledger:
        report = investigate_bundle(bundle, ledger)
        claim = ledger.rows("SELECT id FROM claims WHERE investigation_id = ? ORDER BY id",
                            [report.investigation_id])[0]["id"]
        change = ledger.record_action(
            report.investigation_id or "", "config_change",
            {"path": str(script), "edits": [{"old": "--mem=64G", "new": "--mem=128G"}]},
            True, "more host memory", [claim])
    drain = next(a.id for a in report.actions if a.tool == "slurm_drain_node")
    policy = root / "policy.yaml"
    policy.write_text(POLICY.format(jobs=jobs))
    assert report.investigation_id and drain is not None
    return Reviewed(ledger_path, bundle, policy, report.investigation_id, drain, change, script)


def token_for(r: Reviewed, person: str, ttl: timedelta = timedelta(hours=1)) -> str:
    """A personal token, as `goodput token create --person PERSON` makes it."""
    with Ledger(r.ledger) as lg:
        return create_token(lg, person, ttl, "test admin")[1]


@pytest.fixture
def reviewed(tmp_path: Path, demo_bundle: Path) -> Reviewed:
    return make_reviewed(tmp_path, demo_bundle)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """A headless chromium for a module's tests; skipped where none can be installed."""
    from tests.servers.chromium import ChromiumUnavailable, launched_browser

    try:
        with launched_browser() as b:
            yield b
    except ChromiumUnavailable as exc:
        pytest.skip(str(exc))
