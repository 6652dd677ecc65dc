from datetime import UTC, datetime
from pathlib import Path

from goodput_agent.accounting.fleet import fleet_report
from goodput_agent.accounting.fleet_drain import propose_drains
from goodput_agent.approval.gate import action_status, preview_action
from goodput_agent.approval.policy import load_policy
from goodput_agent.ledger import Ledger
from tests.accounting.fleet_fixtures import record_failure, sacct_row, write_sacct

LATER = datetime(2027, 6, 1, tzinfo=UTC)


def _offender_fleet(tmp_path: Path) -> tuple[Ledger, Path]:
    ledger = Ledger(tmp_path / "l.duckdb")
    rows = [sacct_row(str(100 + i), f"gpu{i:02d}", 8, i, 100) for i in range(30)]
    record_failure(ledger, "100", "node_failure", "gpu00")
    for k in range(4):
        rows.append(sacct_row(str(500 + k), "gpu99", 8, k, 5))
        record_failure(ledger, str(500 + k), "gpu_hardware", "gpu99")
    return ledger, write_sacct(tmp_path / "s.txt", rows)


def test_a_named_node_gets_a_proposed_drain_and_nothing_runs(tmp_path: Path) -> None:
    ledger, sacct = _offender_fleet(tmp_path)
    with ledger:
        report = fleet_report(ledger, sacct=sacct, until=LATER)
        assert report.offenders == ["gpu99"]
        proposals = propose_drains(ledger, report)
        assert [(p.node, p.status) for p in proposals] == [("gpu99", "proposed")]
        p = proposals[0]
        action = ledger.rows("SELECT * FROM actions WHERE id = ?", [p.action_id])[0]
        assert action["tool"] == "slurm_drain_node" and action["mutating"]
        assert '"node": "gpu99"' in action["args_json"]
        claim = ledger.rows("SELECT * FROM claims WHERE id = ?", [p.claim_id])[0]
        assert claim["node"] == "gpu99" and claim["investigation_id"] == p.investigation_id
        evidence = ledger.rows("SELECT excerpt FROM evidence WHERE investigation_id = ?",
                               [p.investigation_id])
        assert "Poisson" in evidence[0]["excerpt"] and "adjusted p" in evidence[0]["excerpt"]
        # the gate previews it; the shipped policy has drains disabled, so it is not allowed
        preview = preview_action(ledger, p.action_id, load_policy(None))
        assert not preview.allowed and preview.claims[0].node == "gpu99"
        assert ledger.rows("SELECT count(*) AS n FROM action_events")[0]["n"] == 0
        assert action_status(ledger, p.action_id) == "proposed"
        # asked again: the open proposal, not a second one; the fleet's own investigation is
        # not a failure of the node
        again = propose_drains(ledger, fleet_report(ledger, sacct=sacct, until=LATER))
        assert [a.action_id for a in again] == [p.action_id]
        assert ledger.rows("SELECT count(*) AS n FROM actions")[0]["n"] == 1
        after = fleet_report(ledger, sacct=sacct, until=LATER)
        assert next(n for n in after.nodes if n.node == "gpu99").failures == 4
        assert after.investigations == report.investigations
