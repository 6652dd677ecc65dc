"""What the pages print as text: picture captions name the picture, not the server's path;
a trace's step is drawn once on its evidence page (not again among the pictures); arguments
read as JSON a person writes (a quote is a quote, not \\u0027)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.web.conftest import served_slowdown_case


def test_a_straggler_step_is_drawn_once_and_captions_name_pictures(tmp_path: Path) -> None:
    _, report, client = served_slowdown_case(tmp_path, "s03-straggler")
    inv = report.investigation_id
    step_pictures = [Path(p).name for p in report.pictures if Path(p).name.startswith("step-")]
    assert step_pictures  # the culprit's step, drawn with the report
    page = client.get(f"/inv/{inv}").text
    captions = re.findall(r'<figcaption class="muted">([^<]*)</figcaption>', page)
    assert captions and all("/" not in c for c in captions), captions
    drawn_twice = 0
    for ev_id in dict.fromkeys(re.findall(rf"/inv/{inv}/evidence/(\d+)", page)):
        ev = client.get(f"/inv/{inv}/evidence/{ev_id}").text
        step = re.search(r"<h2>Step (\d+) of", ev)
        if step is None:
            continue
        shown = re.findall(r'class="picture"[^>]*alt="([^"]+)"', ev)
        drawn_twice += any(n.startswith(f"step-{step.group(1)}-") for n in shown)
    assert drawn_twice == 0


def test_arguments_read_as_json(tmp_path: Path) -> None:
    from goodput_agent.web.site import _json

    assert _json({"reason": "goodput: node's GPU <lost>"}) == \
        '{"reason": "goodput: node\'s GPU <lost>"}'
