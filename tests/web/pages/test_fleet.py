"""The fleet page: the fleet's numbers from the served ledger, node names from claims shown as
text (never markup), drain proposals linked to their action pages; the page never writes."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from goodput_agent.accounting.fleet import fleet_report
from goodput_agent.accounting.fleet_drain import propose_drains
from goodput_agent.ledger import Ledger
from goodput_agent.web.app import ServeConfig, create_app
from goodput_agent.web.pages.fleet import SACCT_ENV
from tests.accounting.fleet_fixtures import record_failure, sacct_row, write_sacct
from tests.web.conftest import BASE

EVIL = "gpu<script>alert(1)</script>\x1b[31m"


def _hours_ago(h: float) -> float:
    return (datetime.now(UTC) - datetime(2026, 11, 1, tzinfo=UTC)) / timedelta(hours=1) - h


def _fleet(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "l.duckdb"
    rows = [sacct_row(str(100 + i), f"gpu{i:02d}", 8, _hours_ago(200 + i), 100)
            for i in range(30)]
    with Ledger(path) as ledger:
        record_failure(ledger, "100", "node_failure", "gpu00")
        for k in range(4):
            rows.append(sacct_row(str(500 + k), "gpu99", 8, _hours_ago(50 + k), 5))
            record_failure(ledger, str(500 + k), "gpu_hardware", "gpu99")
        record_failure(ledger, "900", "gpu_hardware", EVIL)
        sacct = write_sacct(tmp_path / "s.txt", rows)
        propose_drains(ledger, fleet_report(ledger, sacct=sacct))
    return path, sacct


def test_the_fleet_page_shows_offenders_and_proposals(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path, sacct = _fleet(tmp_path)
    monkeypatch.setenv(SACCT_ENV, str(sacct))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=path)))
    page = client.get("/fleet?since=60d")
    assert page.status_code == 200
    assert "gpu99" in page.text and "Poisson" in page.text
    assert '<a href="/actions/' in page.text  # the drain proposal, to approve on its own page
    assert "<script>alert" not in page.text and "&lt;script&gt;" in page.text
    assert "\x1b" not in page.text and "\\x1b" in page.text
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_a_bad_period_is_a_page_not_a_crash(tmp_path: Path) -> None:
    path, _ = _fleet(tmp_path)
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=path)))
    page = client.get("/fleet?since=yesterday")
    assert page.status_code == 400 and "yesterday" in page.text
