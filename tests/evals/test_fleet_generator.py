from pathlib import Path

from goodput_agent.evals.fleet_generator import FleetPlan, generate_fleet
from goodput_agent.evals.fleet_scorer import score_fleet
from goodput_agent.ledger import Ledger

SMALL = FleetPlan(nodes=80, jobs=1500, offender_multipliers=(25, 25, 25), busy_nodes=6)


def test_the_history_is_deterministic(tmp_path: Path) -> None:
    a = generate_fleet(tmp_path / "a", SMALL)
    b = generate_fleet(tmp_path / "b", SMALL)
    assert a.offenders == b.offenders and a.badput_gpu_h == b.badput_gpu_h
    assert Path(a.sacct).read_text() == Path(b.sacct).read_text()
    assert len(Path(a.sacct).read_text().splitlines()) == SMALL.jobs + 1


def test_every_failed_job_is_an_investigation_with_a_verdict(tmp_path: Path) -> None:
    truth = generate_fleet(tmp_path, SMALL)
    with Ledger(Path(truth.ledger), read_only=True) as ledger:
        bundles = ledger.rows("SELECT count(DISTINCT target) AS n FROM investigations")[0]["n"]
        concluded = ledger.rows("SELECT count(*) AS n FROM conclusions")[0]["n"]
        invs = ledger.rows("SELECT count(*) AS n FROM investigations")[0]["n"]
    assert bundles == sum(truth.failures.values())
    assert concluded == invs >= bundles  # some bundles investigated twice


def test_strong_offenders_are_found_and_busy_nodes_are_not(tmp_path: Path) -> None:
    s = score_fleet(SMALL, tmp_path)
    assert s.precision == 1.0 and s.busy_named == []
    assert s.recall >= 2 / 3
    assert s.max_cause_error < 0.01  # GPU-hours by cause from the same sacct history
