"""What a person reads first, at the widths people have: 80 columns (whenever output is piped),
120 and 200. For reports of every kind (failure, slowdown, latency) and the commands that list
what the ledger holds: no line wider than the width, every id and node name whole on one line,
every evidence row with its id and a readable excerpt, every cut saying what it cut, the
verdict never repeated as its own alternative, "primary" only on the culprit's node."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.cli.render_report import TIMELINE_ROWS
from goodput_agent.core.untrusted import visible

REPO = Path(__file__).resolve().parents[2]
WIDTHS = (80, 120, 200)
# every kind, and the failure cases with the most nodes and the longest timelines
BUNDLES = ("evals/cases/c05-network-fault-ib-link-down", "evals/cases/c16-hang-rank0-only-barrier",
           "evals/cases/c24-node-failure-mce-then-silence", "evals/cases/c33-node-failure-k8s-lost"
           "-xid45-decoy", "evals/slowdown_cases/s03-straggler",
           "evals/latency_cases/l01-queueing-arrival-surge")


def goodput(width: int, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": str(width), "NO_COLOR": "1"},
                                catch_exceptions=False)
    return result.exit_code, result.stdout


def whole(text: str, name: str) -> bool:
    return any(name in ln for ln in text.splitlines())


def fits(text: str, width: int) -> None:
    wide = [ln for ln in text.splitlines() if len(ln) > width]
    assert not wide, f"{len(wide)} lines wider than {width}: {wide[0]!r}"


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Each bundle's report as JSON, from a ledger of its own (the same evidence ids as the
    text run below, which also starts from an empty ledger)."""
    out = {}
    for bundle in BUNDLES:
        ledger = tmp_path_factory.mktemp("json") / "l.duckdb"
        code, text = goodput(200, "investigate", str(REPO / bundle), "--json", "--ledger",
                             str(ledger))
        assert code in (0, 3), text
        out[bundle] = json.loads(text)
    return out


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("bundle", BUNDLES)
def test_a_report_reads_at_every_width(bundle: str, width: int, reports: dict[str, dict],
                                       tmp_path: Path) -> None:
    report = reports[bundle]
    code, text = goodput(width, "investigate", str(REPO / bundle), "--ledger",
                         str(tmp_path / "l.duckdb"))
    assert code in (0, 3), text
    fits(text, width)
    root = report["root_cause"]
    assert re.search(r"\binv-\d{8}-\d{6}-[0-9a-f]{8}\b", text), "the investigation id is cut"
    for ev in root["evidence"]:
        assert re.search(rf"^\s*#{ev['id']} ", text, re.M), f"evidence #{ev['id']} has no id"
        first = visible(ev["excerpt"], newlines=False).split()[0][:12]  # a long one folds
        assert first and first in text, f"evidence #{ev['id']} shows no excerpt"
    timeline = report["timeline"] or []
    shown = timeline[:TIMELINE_ROWS]
    names = {root["node"], *(a["node"] for a in report["alternatives"]),
             *(e["node"] for e in shown)} - {None}
    for name in names:
        assert whole(text, name), f"{name} is broken across lines at {width} columns"
    if len(timeline) > TIMELINE_ROWS:
        assert f"{len(timeline) - TIMELINE_ROWS} more not shown" in text
    if report["timeline_left_out"]:
        assert f"{report['timeline_left_out']} later events left out" in text


@pytest.mark.parametrize("bundle", BUNDLES)
def test_the_verdict_is_not_its_own_alternative(bundle: str, reports: dict[str, dict]) -> None:
    root = reports[bundle]["root_cause"]
    for alt in reports[bundle]["alternatives"]:
        assert (alt["category"], alt["node"], alt["rank"]) != (root["category"], root["node"],
                                                               root["rank"])
        if alt["category"] == root["category"]:  # then it points somewhere else, and says so
            assert alt["node"] or alt["rank"] is not None


def test_primary_only_on_the_culprits_node(tmp_path: Path) -> None:
    """Over every shipped failure case: the timeline's "primary" (drawn red on the pages) is
    on one node at most, the culprit's where the verdict names one."""
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import open_ledger

    cases = sorted(p for p in (REPO / "evals" / "cases").iterdir() if p.is_dir())
    assert len(cases) >= 48
    with open_ledger(tmp_path / "l.duckdb") as ledger:
        for case in cases:
            report = investigate_bundle(case, ledger)
            primary = {e.node for e in report.timeline or [] if e.role == "primary"} - {None}
            allowed = {report.root_cause.node} if report.root_cause.node else primary
            assert len(primary) <= 1 and primary <= allowed, (case.name, primary)


def test_wide_cuts_nothing(reports: dict[str, dict], tmp_path: Path) -> None:
    bundle = max(BUNDLES, key=lambda b: len(reports[b]["timeline"] or []))
    assert len(reports[bundle]["timeline"]) > TIMELINE_ROWS  # a case with a cut to undo
    code, text = goodput(80, "investigate", str(REPO / bundle), "--wide", "--ledger",
                         str(tmp_path / "l.duckdb"))
    assert code in (0, 3) and "more not shown" not in text
    for e in reports[bundle]["timeline"]:
        if e["node"]:
            assert whole(text, e["node"])


@pytest.mark.parametrize("width", WIDTHS)
def test_ledger_lists_read_at_every_width(width: int, reports: dict[str, dict],
                                          tmp_path: Path) -> None:
    ledger = str(tmp_path / "l.duckdb")
    ids = []
    for bundle in BUNDLES[:3]:
        code, out = goodput(200, "investigate", str(REPO / bundle), "--json", "--ledger", ledger)
        ids.append(json.loads(out)["investigation_id"])
    for args in (("ledger", "list"), ("actions",),
                 ("fleet",), ("ledger", "show", ids[0])):
        code, text = goodput(width, *args, "--ledger", ledger)
        assert code == 0, (args, text)
        fits(text, width)
        if args[0] == "ledger" and args[1] == "list":
            for inv in ids:
                assert whole(text, inv), f"{inv} cut in `ledger list` at {width}"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_tools_list_reads_at_every_width(width: int) -> None:
    """Tool descriptions are data with their source file's line breaks: re-flowed to the width,
    every tool's name whole on its own line."""
    from goodput_agent.toolkit import registry

    code, text = goodput(width, "tools")
    assert code == 0
    fits(text, width)
    for name, tool in registry().items():
        if tool.read_only:
            assert any(ln.startswith(f"{name}  (read-only") for ln in text.splitlines()), name
