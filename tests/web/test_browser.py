"""The review pages in a real browser: Debian's chromium driven by Playwright against
`goodput serve` started here on a free loopback port, over a ledger filled by a real
investigation of the demo bundle. One browser for the module; a screenshot of each page goes
under the test's tmp dir."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from goodput_agent.core.redact import redact
from goodput_agent.ledger import Ledger
from goodput_agent.parsing.lines import iter_lines
from tests.servers.chromium import running_goodput_serve
from tests.web.conftest import Reviewed, make_reviewed, token_for


@pytest.fixture
def served(tmp_path: Path, demo_bundle: Path) -> Iterator[tuple[Reviewed, str]]:
    r = make_reviewed(tmp_path, demo_bundle)
    with running_goodput_serve(r.ledger, tmp_path, ["--policy", str(r.policy)]) as url:
        yield r, url


def _line(path: Path, number: int) -> str:
    return next(redact(t) for n, t in iter_lines(path) if n == number)


def test_review_an_investigation_and_approve_from_the_page(browser, served, tmp_path) -> None:
    r, url = served
    shots = tmp_path / "screenshots"
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    started = time.monotonic()
    try:
        page.goto(url + "/")
        row = page.locator(f'tr[data-id="{r.inv_id}"]')
        assert row.locator("td.verdict").inner_text() == "gpu_hardware"
        page.screenshot(path=str(shots / "1-list.png"), full_page=True)

        row.locator("a").click()
        page.wait_for_url(f"**/inv/{r.inv_id}")
        assert "gpu_hardware" in page.locator("#verdict").inner_text()
        timeline = page.locator("#failure-timeline")
        assert timeline.evaluate("img => img.complete && img.naturalWidth") > 0  # SVG drew
        page.screenshot(path=str(shots / "2-investigation.png"), full_page=True)

        first = page.locator("a.ev").first
        locator = first.inner_text()
        first.click()
        page.wait_for_url("**/evidence/*")
        hit = page.locator("pre.source .line.hit").first
        number = int(hit.get_attribute("data-line"))
        shown = hit.inner_text().rstrip("\n")
        shown = shown[len(hit.locator(".ln").inner_text()):]  # without the line number
        rel = locator.rsplit(":", 1)[0]
        assert shown == _line(r.bundle / rel, number)
        assert number == int(locator.rsplit(":", 1)[1].split("-")[0])
        assert page.locator("#origin").inner_text().startswith("read from ")
        page.screenshot(path=str(shots / "3-evidence.png"), full_page=True)

        page.goto(f"{url}/actions/{r.drain_action}")
        assert "scontrol update NodeName=gpu-node-03" in page.locator("#command").inner_text()
        assert page.locator("#decision").inner_text().startswith("allowed")
        assert page.locator("#sign-in-first").is_visible()  # no person: no Approve button
        page.locator("#sign-in-first a").click()
        page.locator("form.login input[name=token]").fill(token_for(r, "alice"))
        page.locator("#sign-in").click()
        page.wait_for_url(f"**/actions/{r.drain_action}")
        assert "You act as alice (token" in page.locator("#as").inner_text()
        page.goto(f"{url}/actions")  # the queue: alice may approve the change; open it
        row = page.locator(f'#queue tr[data-id="{r.config_action}"]')
        assert "you may approve" in row.locator("td.decision").inner_text()
        row.locator("a").first.click()
        page.wait_for_url(f"**/actions/{r.config_action}")
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.accept()))
        page.locator("#approve").click()
        page.wait_for_url("**?done=executed")
        assert page.locator("#status").inner_text() == "executed"
        diff = page.locator("#diff").inner_text()  # what ran: the diff of the file it wrote
        assert "-#SBATCH --mem=64G" in diff and "+#SBATCH --mem=128G" in diff
        assert page.locator("#approve").count() == 0
        assert dialogs and "config_change" in dialogs[0]  # asked once more, with the command
        page.screenshot(path=str(shots / "4-executed.png"), full_page=True)
    finally:
        page.close()
    with Ledger(r.ledger, read_only=True) as lg:
        rows = [tuple(x.values()) for x in lg.rows(
            "SELECT kind, actor, tool FROM action_events WHERE action_id = ? ORDER BY id",
            [r.config_action])]
    assert rows == [("approval", "alice", "config_change"),
                    ("execution_started", "alice", "config_change"),
                    ("execution", "alice", "config_change")]
    assert "--mem=128G" in r.script.read_text()
    assert sorted(p.name for p in shots.iterdir()) == [
        "1-list.png", "2-investigation.png", "3-evidence.png", "4-executed.png"]
    assert time.monotonic() - started < 30
