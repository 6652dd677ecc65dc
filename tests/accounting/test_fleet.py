from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.accounting.fleet import OffenderRule, fleet_report
from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger
from tests.accounting.fleet_fixtures import record_failure, sacct_row, write_sacct

LATER = datetime(2027, 6, 1, tzinfo=UTC)  # after every generated job
XID = "gpu07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."


@pytest.fixture
def small(tmp_path: Path) -> tuple[Ledger, Path]:
    ledger = Ledger(tmp_path / "l.duckdb")
    record_failure(ledger, "11", "gpu_hardware", "gpu07", XID)
    record_failure(ledger, "11", "gpu_hardware", "gpu07", XID)  # the same bundle again
    record_failure(ledger, "12", "gpu_hardware", "gpu07", XID, stamp="20261102T000000Z")
    record_failure(ledger, "13", "application_error", "gpu08")  # names a node, not its fault
    record_failure(ledger, "14", "gpu_oom", None)
    record_failure(ledger, "15", "unknown", None)  # no verdict: not a failure by cause
    sacct = write_sacct(tmp_path / "sacct.txt", [
        sacct_row("11", "gpu[07-08]", 8, 0, 2, state="FAILED"),  # 16 GPU-h
        sacct_row("12", "gpu07", 4, 10, 1.5, state="FAILED", account="a2"),  # 6 GPU-h
        sacct_row("13", "gpu08", 8, 20, 1, state="FAILED"),
        sacct_row("14", "gpu09", 2, 30, 3, state="FAILED", partition="debug"),
        sacct_row("16", "gpu09", 8, 40, 10)])
    yield ledger, sacct
    ledger.close()


def test_gpu_hours_by_cause_come_from_the_failed_jobs(small: tuple[Ledger, Path]) -> None:
    ledger, sacct = small
    r = fleet_report(ledger, sacct=sacct)
    by = {c.category: c for c in r.causes}
    assert set(by) == {"gpu_hardware", "application_error", "gpu_oom"}
    assert (by["gpu_hardware"].failures, by["gpu_hardware"].jobs) == (2, 2)  # re-run counted once
    assert by["gpu_hardware"].gpu_hours == pytest.approx(16 + 6)
    assert by["application_error"].gpu_hours == pytest.approx(8)
    assert by["gpu_oom"].gpu_hours == pytest.approx(6)
    assert r.investigations == 4 and r.sacct_jobs == 5


def test_nodes_carry_their_evidence_and_only_node_causes(small: tuple[Ledger, Path]) -> None:
    ledger, sacct = small
    r = fleet_report(ledger, sacct=sacct)
    assert [n.node for n in r.nodes] == ["gpu07"]  # gpu08's application error is not its fault
    n = r.nodes[0]
    assert (n.failures, n.jobs, n.xids, n.categories) == (2, 2, {"79": 2}, ["gpu_hardware"])
    assert len(n.investigations) == 2 and len(n.evidence_ids) == 2
    assert n.exposure_gpu_h == pytest.approx(8 + 6)  # half of job 11's GPUs, all of job 12's
    assert r.test is not None and r.test.nodes_tested == 3  # gpu07, gpu08, gpu09 ran jobs
    assert r.test.fleet_failures == 2
    assert r.test.fleet_exposure_gpu_h == pytest.approx(16 + 6 + 8 + 6 + 80)


def test_recurring_causes_per_partition_and_account(small: tuple[Ledger, Path]) -> None:
    ledger, sacct = small
    report = fleet_report(ledger, sacct=sacct)
    groups = {(g.dimension, g.value, g.category): g for g in report.groups}
    assert ("partition", "gpu", "gpu_hardware") in groups  # jobs 11 and 12
    assert ("account", "a1", "gpu_hardware") not in groups  # one job only in a1
    assert all(g.jobs >= 2 for g in groups.values())


def test_the_period_is_the_jobs_end(small: tuple[Ledger, Path]) -> None:
    ledger, sacct = small
    r = fleet_report(ledger, since=datetime(2026, 11, 1, 5, tzinfo=UTC),
                     until=datetime(2026, 11, 2, 1, tzinfo=UTC), sacct=sacct)
    assert {c.category for c in r.causes} == {"gpu_hardware", "application_error"}
    assert r.nodes[0].failures == 1  # job 11 ended before the period


def test_without_sacct_nothing_is_named(small: tuple[Ledger, Path]) -> None:
    ledger, _ = small
    r = fleet_report(ledger)
    assert r.test is None and r.offenders == [] and r.notes
    assert r.nodes[0].exposure_gpu_h is None and r.causes[0].gpu_hours is None


def test_a_file_that_is_not_sacct_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.txt"
    bad.write_text("a|b\n1|2\n")
    with Ledger(tmp_path / "l.duckdb") as ledger, pytest.raises(BadInput, match="x.txt"):
        fleet_report(ledger, sacct=bad)


def _fleet(tmp_path: Path, bad_failures: int, bad_jobs: int, bad_hours: float
           ) -> tuple[Ledger, Path]:
    """40 healthy nodes of 800 GPU-h each, one failure on every tenth, and gpu99."""
    ledger = Ledger(tmp_path / "f.duckdb")
    rows = [sacct_row(str(100 + i), f"gpu{i:02d}", 8, i, 100) for i in range(40)]
    for i in range(0, 40, 10):
        record_failure(ledger, str(100 + i), "node_failure", f"gpu{i:02d}")
    for k in range(bad_jobs):
        rows.append(sacct_row(str(500 + k), "gpu99", 8, k, bad_hours / bad_jobs))
    for k in range(bad_failures):
        record_failure(ledger, str(500 + k % bad_jobs), "gpu_hardware", "gpu99",
                       stamp=f"20261101T0000{k:02d}Z")
    return ledger, write_sacct(tmp_path / "s.txt", rows)


def test_a_node_failing_far_above_the_fleet_rate_is_named(tmp_path: Path) -> None:
    ledger, sacct = _fleet(tmp_path, bad_failures=4, bad_jobs=4, bad_hours=40)
    with ledger:
        r = fleet_report(ledger, sacct=sacct, until=LATER)
    bad = next(n for n in r.nodes if n.node == "gpu99")
    assert r.offenders == ["gpu99"] and bad.named
    # rest of the fleet: 4 failures in 32,000 GPU-h; gpu99: 320 GPU-h -> 0.04 expected
    assert bad.expected == pytest.approx(4 / 32000 * 320)
    assert bad.p_value is not None and bad.adjusted_p is not None
    assert bad.adjusted_p < 0.01 and bad.adjusted_p >= bad.p_value
    assert all(not n.named for n in r.nodes if n.node != "gpu99")


def test_many_failures_from_much_exposure_are_not_named(tmp_path: Path) -> None:
    # 4 failures in 32,000 GPU-h is the fleet's own rate (4 in 32,000)
    ledger, sacct = _fleet(tmp_path, bad_failures=4, bad_jobs=4, bad_hours=4000)
    with ledger:
        r = fleet_report(ledger, sacct=sacct, until=LATER)
    bad = next(n for n in r.nodes if n.node == "gpu99")
    assert not bad.named and r.offenders == [] and bad.why_not == "not significant at 0.01"


def test_failures_of_one_job_are_below_the_minimum(tmp_path: Path) -> None:
    # a job requeued and failing three times on the node: one job, not a recurrence
    ledger, sacct = _fleet(tmp_path, bad_failures=3, bad_jobs=1, bad_hours=40)
    with ledger:
        r = fleet_report(ledger, sacct=sacct, until=LATER)
        strict = fleet_report(ledger, sacct=sacct, until=LATER, rule=OffenderRule(min_jobs=1))
    bad = next(n for n in r.nodes if n.node == "gpu99")
    assert (bad.failures, bad.jobs, bad.named) == (3, 1, False)
    assert bad.why_not == "below the minimum count"
    assert strict.offenders == ["gpu99"]  # the same numbers pass when one job is enough


def test_attempts_and_reinvestigations_of_one_job_are_one_job(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for target in ("/l/accounts/slurm-job-77-attempt-1", "/l/accounts/slurm-job-77-attempt-2",
                       "/l/reports/k8s-train-llama-20261101T000000123456Z/bundle",
                       "/l/accounts/k8s-train-llama-attempt-1", "/l/accounts/job-9-attempt-1",
                       "/l/accounts/job-9-attempt-2", "/elsewhere/bundle-a"):
            inv = ledger.start_investigation("q", "failure", target, "offline", "t")
            ev = ledger.record_evidence(inv, None, "kern.log", "kern.log:1", "x", None)
            ledger.record_claim(inv, "s", "node_failure", 0.9, "supported", [ev], [],
                                node="gpu01")
            ledger.record_conclusion(inv, "node_failure", 0.9, 0, "{}")
        r = fleet_report(ledger)
    assert (r.nodes[0].failures, r.nodes[0].jobs) == (7, 4)  # slurm 77, k8s llama, job-9, a
