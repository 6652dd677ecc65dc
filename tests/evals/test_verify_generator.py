"""`goodput verify` on generated before/after pairs (evals/verify_generator.py): each before
bundle is investigated into a ledger, then every after bundle is verified against it; every
verdict must be right, including not recovered, partly, regressed elsewhere, and incomparable
conditions (which must say so, not give a verdict)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.approval import store
from goodput_agent.cli import cli
from goodput_agent.evals.verify_generator import Pair, generate_pairs
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.verify.run import verify_investigation


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Pair]]:
    out = tmp_path_factory.mktemp("verify-pairs")
    return out, generate_pairs(out, seed=7)


def test_the_pairs_cover_every_kind_and_verdict(pairs) -> None:  # noqa: ANN001
    _, ps = pairs
    assert len(ps) >= 20
    assert {p.kind for p in ps} == {"failure", "slowdown", "latency"}
    for kind in ("failure", "slowdown", "latency"):
        got = {p.verdict for p in ps if p.kind == kind}
        assert {"recovered", "not_recovered", "incomparable"} <= got, kind
    assert {p.verdict for p in ps} == {"recovered", "partly", "not_recovered",
                                       "regressed_elsewhere", "incomparable"}


def test_verify_gets_every_pair_right(pairs, tmp_path: Path) -> None:  # noqa: ANN001
    root, ps = pairs
    wrong = []
    with Ledger(tmp_path / "l.duckdb") as lg:
        inv: dict[str, str] = {}
        for p in ps:
            if p.before not in inv:
                inv[p.before] = investigate_bundle(root / p.before, lg).investigation_id or ""
            result, rows = verify_investigation(lg, inv[p.before], root / p.after)
            if result.verdict != p.verdict:
                wrong.append((p.pair_id, result.verdict, p.verdict, result.summary))
            if p.verdict == "incomparable":
                assert not result.comparable and "not comparable" in result.summary \
                    or "no record" in result.summary, result.summary
            else:
                assert result.comparable and result.conditions
            # every verdict is a ledger row on the investigation's actions, or on the
            # investigation itself where it proposed none (advice only)
            actions = lg.rows("SELECT id FROM actions WHERE investigation_id = ?",
                              [inv[p.before]])
            evs = store.investigation_events(lg, inv[p.before])
            mine = {e.id for e in evs if e.kind == "verification" and (
                e.action_id in {a["id"] for a in actions} if actions else e.action_id is None)}
            assert mine >= set(rows) and rows
    assert wrong == []


def test_slowdown_verdict_carries_ci_and_phases(pairs, tmp_path: Path) -> None:  # noqa: ANN001
    root, ps = pairs
    p = next(x for x in ps if x.pair_id == "slowdown-input-stall-regressed")
    with Ledger(tmp_path / "l.duckdb") as lg:
        inv = investigate_bundle(root / p.before, lg).investigation_id or ""
        result, _ = verify_investigation(lg, inv, root / p.after)
    lo, hi = result.numbers["ci95_ms"]
    assert lo <= result.numbers["improvement_ms"] <= hi
    phases = {ph.phase: ph for ph in result.phases}
    assert phases["comm"].after > phases["comm"].before  # where the time went
    assert phases["idle input"].after < phases["idle input"].before


def test_cli_verify_json_and_incomparable_exit_code(pairs, tmp_path: Path) -> None:  # noqa: ANN001
    root, ps = pairs
    p = next(x for x in ps if x.pair_id == "latency-queueing-incomparable")
    ledger = tmp_path / "l.duckdb"
    with Ledger(ledger) as lg:
        inv = investigate_bundle(root / p.before, lg).investigation_id or ""
    r = CliRunner().invoke(cli, ["verify", inv, "--after", str(root / p.after), "--json",
                                 "--ledger", str(ledger)])
    assert r.exit_code == 3, r.output
    out = json.loads(r.output)
    assert out["verdict"] == "incomparable" and "arrival rate" in out["summary"]
    r = CliRunner().invoke(cli, ["verify", inv, "--after", str(tmp_path / "nope"),
                                 "--ledger", str(ledger)])
    assert r.exit_code == 2 and "no such file" in r.output
