"""The account page: reached from the investigation of one attempt (it names the job's bundle),
read-only (causes from the ledger, nothing investigated, the ledger file unchanged)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from starlette.testclient import TestClient

from goodput_agent.accounting.account import account_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.web.app import ServeConfig, create_app
from tests.conftest import REPO
from tests.web.conftest import BASE


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_account_page_from_an_attempts_investigation(tmp_path: Path) -> None:
    bundle = tmp_path / "case"
    shutil.copytree(REPO / "evals" / "cases" / "c09-preempted-slurm-preemption", bundle)
    ledger_path = tmp_path / "l.duckdb"
    with Ledger(ledger_path) as ledger:
        acct = account_bundle(bundle, ledger)  # investigates the failed run
    inv_id = acct.attempts[0].failure.investigation_id
    before = _sha(ledger_path)
    app = create_app(ServeConfig(ledger=ledger_path, policy_path=tmp_path / "none.yaml"))
    client = TestClient(base_url=BASE, app=app, follow_redirects=False)

    inv_page = client.get(f"/inv/{inv_id}")
    assert inv_page.status_code == 200
    assert f'href="/inv/{inv_id}/account"' in inv_page.text
    page = client.get(f"/inv/{inv_id}/account")
    assert page.status_code == 200
    # the cause links back to the attempt's investigation; the numbers are the account's
    assert f'<a href="/inv/{inv_id}">{inv_id}</a>' in page.text
    assert f"{acct.allocated_gpu_hours:.2f} GPU-h held" in page.text
    svg = client.get(f"/inv/{inv_id}/account.svg")
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert 'aria-label="attempt 0"' in svg.text
    assert _sha(ledger_path) == before

    shutil.rmtree(bundle)  # the job's bundle gone: a page that says so, not a traceback
    gone = client.get(f"/inv/{inv_id}/account")
    assert gone.status_code == 404 and "nothing to account" in gone.text
