"""The review pages on a phone (390 CSS pixels wide) in a real browser: no page scrolls
sideways, and every link that acts (review an action, open an investigation) lies within the
screen's width. Measured from the layout the browser computed, not from the CSS text."""

from __future__ import annotations

from pathlib import Path

from tests.servers.chromium import running_goodput_serve
from tests.web.conftest import make_reviewed

PHONE = {"width": 390, "height": 844}

# the widest element's right edge, and the links that act, with where they end
MEASURE = """() => {
  const width = document.documentElement.clientWidth;
  const links = [...document.querySelectorAll('a[href^="/actions/"], a[href^="/inv/"]')]
    .filter(a => a.offsetParent !== null)
    .map(a => ({href: a.getAttribute('href'), right: a.getBoundingClientRect().right}));
  return {width, scroll: document.documentElement.scrollWidth, links};
}"""


def test_no_page_scrolls_sideways_on_a_phone(browser, tmp_path: Path,  # noqa: ANN001
                                             demo_bundle: Path) -> None:
    r = make_reviewed(tmp_path, demo_bundle)
    with running_goodput_serve(r.ledger, tmp_path, ["--policy", str(r.policy)]) as url:
        page = browser.new_page(viewport=PHONE)
        seen = {}
        for path in ("/", f"/inv/{r.inv_id}", f"/actions/{r.drain_action}", "/fleet",
                     "/watch"):
            page.goto(url + path)
            m = page.evaluate(MEASURE)
            seen[path] = m
            page.screenshot(path=str(tmp_path / f"phone{path.replace('/', '_')}.png"),
                            full_page=True)
        page.close()
    for path, m in seen.items():
        assert m["scroll"] <= m["width"], f"{path} scrolls sideways: {m['scroll']} px"
        off = [a["href"] for a in m["links"] if a["right"] > m["width"] + 1]
        assert not off, f"{path}: links off-screen: {off}"
    assert any(a["href"].startswith("/actions/") for a in seen[f"/inv/{r.inv_id}"]["links"])
