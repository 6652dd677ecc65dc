"""An investigation whose remedies are all advice (a config regression's exact revert, done by
a person) proposes no action; verifying it still leaves a ledger row, on the investigation
itself, and `goodput ledger show` shows it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from evals.verify_generator import latency_pairs
from goodput_agent.approval import store
from goodput_agent.cli import cli
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger


def test_verifying_advice_records_the_verdict_on_the_investigation(tmp_path: Path) -> None:
    pairs = {p.pair_id: p for p in latency_pairs(tmp_path / "pairs", seed=7)}
    p = pairs["latency-queueing-recovered"]
    ledger = tmp_path / "l.duckdb"
    with Ledger(ledger) as lg:
        report = investigate_bundle(tmp_path / "pairs" / p.before, lg)
    inv = report.investigation_id or ""
    assert report.actions == [] and report.advice  # nothing for a tool to run
    base = ["--ledger", str(ledger)]
    r = CliRunner().invoke(cli, ["verify", inv, "--after", str(tmp_path / "pairs" / p.after),
                                 "--json", *base])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["verdict"] == p.verdict == "recovered"
    with Ledger(ledger, read_only=True) as lg:
        rows = store.investigation_events(lg, inv)
    assert [(e.id, e.action_id, e.kind, e.reason) for e in rows] == [
        (out["ledger_rows"][0], None, "verification", "recovered")]
    shown = CliRunner().invoke(cli, ["ledger", "show", inv, *base], env={"COLUMNS": "200"})
    assert shown.exit_code == 0
    assert "the investigation itself (advice carried out by a person)" in shown.output
    assert "by goodput verify: recovered" in shown.output
