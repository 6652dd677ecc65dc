"""The /watch page over a ledger a watch ran on: sources' health, queue, groups, incidents
linked to their investigations; untrusted text escaped; a ledger without a watch says so."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from starlette.testclient import TestClient

from goodput_agent.ledger import Ledger
from goodput_agent.watch.grouping import GroupRule
from goodput_agent.watch.runner import Watch, WatchOptions
from goodput_agent.web.app import ServeConfig, create_app
from tests.watch.fakes import T0, ListSource, RecordingInvestigation, job_trigger
from tests.web.conftest import BASE


def _ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.duckdb"
    storm = [job_trigger(i, nodes=[f"n{i}"], at=T0 + timedelta(seconds=i), switch="leaf-3")
             for i in range(5)]
    odd = job_trigger(99, nodes=["x"], at=T0 + timedelta(hours=1))
    odd.subject = "<script>alert(1)</script>"
    down = ListSource([], name="kubernetes")
    down.down = True
    with Ledger(path) as led:
        Watch(led, [ListSource([*storm, odd]), down], RecordingInvestigation(),
              WatchOptions(tick_s=0.01, group=GroupRule(window_s=60, min_size=3))).run(once=True)
    return path


def test_watch_page(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    with Ledger(path, read_only=True) as led:
        invs = {r["key"]: r["investigation_id"] for r in led.rows(
            "SELECT key, investigation_id FROM watch_triggers WHERE investigation_id IS NOT NULL")}
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=path)))
    page = client.get("/watch")
    assert page.status_code == 200
    html = page.text
    assert "grouped 4" in html and "done 2" in html
    assert "SourceDown: controller not answering" in html and ">down<" in html
    for inv in invs.values():
        assert f'href="/inv/{inv}"' in html
    assert "switch:leaf-3" in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html


def test_no_watch_yet(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    Ledger(path).close()
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=path)))
    assert "No watch has run on this ledger" in client.get("/watch").text


def test_every_page_links_the_watch(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=path)))
    for page in ("/", "/fleet", "/watch"):
        html = client.get(page).text
        assert 'href="/watch"' in html and 'href="/fleet"' in html, page
    assert "watch: ran once, finished at" in client.get("/watch").text
