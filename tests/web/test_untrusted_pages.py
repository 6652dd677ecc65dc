"""Pages over a bundle whose logs carry escape sequences: every page shows them as visible
escapes (`\\x1b`), never as the raw characters a browser would hide or reorder text by."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.testclient import TestClient

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.web.app import ServeConfig, create_app
from tests.terminal_text import raw_controls
from tests.test_terminal_escapes import PAYLOAD, SHOWN, hostile_copy
from tests.web.conftest import BASE


def test_pages_show_planted_escapes_visibly(tmp_path: Path, demo_bundle: Path) -> None:
    bundle = hostile_copy(demo_bundle, tmp_path / "bundle")
    ledger = tmp_path / "ledger.duckdb"
    with Ledger(ledger) as lg:
        inv = investigate_bundle(bundle, lg).investigation_id or ""
        claim = lg.rows("SELECT id FROM claims WHERE investigation_id = ?", [inv])[0]["id"]
        # a proposal quoting a log line, as a remedy may: its rationale and its arguments
        script = tmp_path / "job.sbatch"
        script.write_text("#SBATCH --comment=x\n")
        planted = lg.record_action(inv, "config_change", {"path": str(script), "edits": [
            {"old": "x", "new": PAYLOAD}]}, True, f"the log says {PAYLOAD}", [claim])
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=ledger)),
                        follow_redirects=False)
    page = client.get(f"/inv/{inv}").text
    evidence = sorted(set(re.findall(rf"/inv/{inv}/evidence/(\d+)", page)))
    assert evidence
    pages = {"/": client.get("/").text, f"/inv/{inv}": page}
    pages |= {f"/inv/{inv}/evidence/{e}": client.get(f"/inv/{inv}/evidence/{e}").text
              for e in evidence}
    queue = client.get("/actions").text  # the queue and each action it lists
    actions = sorted(set(re.findall(r'href="/actions/(\d+)"', queue)))
    assert str(planted) in actions
    pages |= {"/actions": queue, "/api/actions": client.get("/api/actions").text}
    pages |= {f"/actions/{a}": client.get(f"/actions/{a}").text for a in actions}
    assert SHOWN in pages[f"/actions/{planted}"]
    for url, html in pages.items():
        assert not raw_controls(html), f"raw control characters in {url}"
    assert SHOWN in page and all(SHOWN in pages[f"/inv/{inv}/evidence/{e}"] for e in evidence)
