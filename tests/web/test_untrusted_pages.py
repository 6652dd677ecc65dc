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
from tests.test_terminal_escapes import SHOWN, hostile_copy
from tests.web.conftest import BASE


def test_pages_show_planted_escapes_visibly(tmp_path: Path, demo_bundle: Path) -> None:
    bundle = hostile_copy(demo_bundle, tmp_path / "bundle")
    ledger = tmp_path / "ledger.duckdb"
    with Ledger(ledger) as lg:
        inv = investigate_bundle(bundle, lg).investigation_id
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=ledger)),
                        follow_redirects=False)
    page = client.get(f"/inv/{inv}").text
    evidence = sorted(set(re.findall(rf"/inv/{inv}/evidence/(\d+)", page)))
    assert evidence
    pages = {"/": client.get("/").text, f"/inv/{inv}": page}
    pages |= {f"/inv/{inv}/evidence/{e}": client.get(f"/inv/{inv}/evidence/{e}").text
              for e in evidence}
    for url, html in pages.items():
        assert not raw_controls(html), f"raw control characters in {url}"
    assert SHOWN in page and all(SHOWN in pages[f"/inv/{inv}/evidence/{e}"] for e in evidence)
