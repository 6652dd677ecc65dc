import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.pictures.failure_timeline import (
    draw_failure_timeline,
    failure_rows,
    first_failure,
)
from goodput_agent.report import Report

NS = "{http://www.w3.org/2000/svg}"


def _report(tmp_path: Path, bundle: Path) -> Report:
    with Ledger(tmp_path / "l.duckdb") as led:
        return investigate_bundle(bundle, led)


def _groups(path: Path) -> dict[str, ET.Element]:
    return {g.get("aria-label"): g for g in ET.parse(path).getroot().iter(f"{NS}g")}


def test_every_rank_on_one_clock_with_the_first_failure_marked(tmp_path: Path,
                                                               demo_bundle: Path) -> None:
    report = _report(tmp_path, demo_bundle)
    first = first_failure(report)
    # the verdict's own event: the Xid on gpu-node-03, before every rank's symptom
    assert first is not None and first.kind == "xid" and first.node == report.root_cause.node
    assert first.locator == report.root_cause.evidence[0].locator
    out = draw_failure_timeline(report, tmp_path / "f.svg")
    assert out is not None
    groups = _groups(out)
    keys = {(e.node, e.rank) for e in report.timeline if e.time}
    rows = [k for k in groups if k.startswith("row ")]
    assert len(rows) == len(keys) > 30  # one row per node and rank (the demo has 32 ranks)
    line = groups["first failure"].find(f"{NS}line")
    assert line is not None
    x_first = float(line.get("x1"))
    marked = [r for g in groups.values() for r in g.iter(f"{NS}rect") if r.get("stroke")]
    assert len(marked) == 1  # the first failure's own mark is outlined
    assert abs(float(marked[0].get("x")) + 4.5 - x_first) < 0.01
    # the symptoms come after it: ranks timing out once one rank failed
    for g in groups.values():
        for r in g.iter(f"{NS}rect"):
            title = r.find(f"{NS}title")
            if title is not None and " symptom " in title.text:
                assert float(r.get("x")) + 4.5 >= x_first


def test_untimed_events_are_counted_and_text_is_escaped(tmp_path: Path,
                                                         demo_bundle: Path) -> None:
    report = _report(tmp_path, demo_bundle)
    report.timeline[-1].time = None
    report.timeline[1].summary = "</text><script>alert(1)</script>"
    rows, _, untimed = failure_rows(report)
    assert untimed == 1
    out = draw_failure_timeline(report, tmp_path / "f.svg")
    assert out is not None
    text = out.read_text()
    assert "<script>" not in text and "1 event(s) without a time are not drawn" in text
    ET.parse(out)  # still well-formed


def test_nothing_to_draw_without_times(tmp_path: Path, demo_bundle: Path) -> None:
    report = _report(tmp_path, demo_bundle)
    for e in report.timeline:
        e.time = None
    assert draw_failure_timeline(report, tmp_path / "f.svg") is None


def test_the_cli_draws_it_from_the_ledger(tmp_path: Path, demo_bundle: Path) -> None:
    _report(tmp_path, demo_bundle)
    out = tmp_path / "t.svg"
    res = CliRunner().invoke(cli, ["failure-timeline", "--ledger", str(tmp_path / "l.duckdb"),
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "first failure" in _groups(out)
    res = CliRunner().invoke(cli, ["failure-timeline", "nope", "--ledger",
                                   str(tmp_path / "l.duckdb"), "-o", str(out)])
    assert res.exit_code == 2 and "no investigation nope" in res.output


def test_the_cli_says_what_it_drew_as_json(tmp_path: Path, demo_bundle: Path) -> None:
    import json

    report = _report(tmp_path, demo_bundle)
    out = tmp_path / "t.svg"
    res = CliRunner().invoke(cli, ["failure-timeline", "--ledger", str(tmp_path / "l.duckdb"),
                                   "--output", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["svg"] == str(out.resolve()) and out.is_file()
    assert [e["locator"] for e in doc["entries"]] == [e.locator for e in report.timeline]
