"""`goodput fleet`: the ledger's failure verdicts over a period, turned into fleet accounting —
GPU-hours lost by cause, nodes ranked by the failures attributed to them across different
jobs, causes recurring per partition or account, and repeat offenders named only when a node
fails significantly more often per GPU-hour than the rest of the fleet.

Every aggregation is one DuckDB query over the ledger's tables and the sacct history loaded
beside them (goodput_agent/ledger/fleet.py); Python only computes each node's Poisson tail and
the correction over the per-node rows the SQL returns.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from goodput_agent.accounting.fleet_exposure import sacct_history
from goodput_agent.accounting.fleet_models import (
    CauseLoss,
    FleetReport,
    GroupCause,
    NodeFinding,
    OffenderTest,
)
from goodput_agent.accounting.fleet_stats import benjamini_hochberg, bonferroni, poisson_sf
from goodput_agent.core import failure_classes
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.fleet import fleet_rows
from goodput_agent.parsing.slurm import nodes_of
from goodput_agent.report import CATEGORIES

FAILURE_CAUSES = CATEGORIES["failure"]
# the verdicts a node can be to blame for (goodput_agent.core.failure_classes); an OOM, an
# application error, a time limit or a preemption can name the node a rank ran on without it being
# at fault. Listed most decisive first (the table's strength), as the report shows them.
_STRENGTH = {c.name: c.strength or 0.0 for c in failure_classes.FAILURE_CLASSES}
NODE_CAUSES = tuple(sorted(failure_classes.node_at_fault(), key=lambda n: -_STRENGTH[n]))
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class OffenderRule(BaseModel):
    alpha: float = 0.01
    min_failures: int = 3
    min_jobs: int = 2
    correction: Literal["benjamini-hochberg", "bonferroni"] = "benjamini-hochberg"


def _window(since: datetime | None, until: datetime | None) -> tuple[datetime, datetime]:
    return since or EPOCH, until or datetime.now(UTC)


def _finding(row: dict[str, Any]) -> NodeFinding:
    gpu_h, rest = row["gpu_h"], row["rest_rate"]
    return NodeFinding(
        node=row["node"], failures=row["failures"], jobs=row["jobs"],
        categories=row["categories"] or [],
        xids={x["xid"]: x["failures"] for x in row["xids"] or []},
        investigations=row["investigations"] or [], evidence_ids=row["evidence_ids"] or [],
        exposure_gpu_h=gpu_h,
        rate_per_1k_gpu_h=1000 * row["failures"] / gpu_h if gpu_h else None,
        fleet_rate_per_1k_gpu_h=1000 * rest if rest is not None else None,
        expected=rest * gpu_h if rest is not None and gpu_h else None)


def _test(findings: list[NodeFinding], rule: OffenderRule) -> list[NodeFinding]:
    """Exact one-sided Poisson test per exposed node, corrected over all of them."""
    tested = [f for f in findings if f.expected is not None]
    for f in tested:
        f.p_value = poisson_sf(f.failures, f.expected or 0.0)
    ps = [f.p_value or 1.0 for f in tested]
    adjusted = bonferroni(ps) if rule.correction == "bonferroni" else benjamini_hochberg(ps)
    for f, q in zip(tested, adjusted, strict=True):
        f.adjusted_p = q
        f.named, f.why_not = _verdict(f, rule)
    for f in findings:
        if f.expected is None and f.failures:
            f.why_not = "no exposure in the sacct history" if f.exposure_gpu_h is None else \
                "no GPU-hours of exposure in the period"
    return tested


def _verdict(f: NodeFinding, rule: OffenderRule) -> tuple[bool, str | None]:
    if f.failures < rule.min_failures or f.jobs < rule.min_jobs:
        return False, "below the minimum count" if f.failures else None
    if (f.adjusted_p or 1.0) >= rule.alpha:
        return False, f"not significant at {rule.alpha:g}"
    return True, None


def _summary(rows: list[dict[str, Any]], rule: OffenderRule, tested: int) -> OffenderTest:
    f_all = rows[0]["f_all"] or 0 if rows else 0
    e_all = rows[0]["e_all"] or 0.0 if rows else 0.0
    return OffenderTest(
        method="one-sided exact Poisson test of the node's attributed failures against "
               "expected = (rest of the fleet's failures per GPU-hour) x node's GPU-hours",
        alpha=rule.alpha, correction=rule.correction, min_failures=rule.min_failures,
        min_jobs=rule.min_jobs, nodes_tested=tested, fleet_failures=int(f_all),
        fleet_exposure_gpu_h=float(e_all),
        fleet_rate_per_1k_gpu_h=1000 * f_all / e_all if e_all else None,
        node_causes=list(NODE_CAUSES))


def fleet_report(ledger: Ledger, since: datetime | None = None, until: datetime | None = None,
                 sacct: Path | None = None, rule: OffenderRule | None = None) -> FleetReport:
    rule = rule or OffenderRule()
    lo, hi = _window(since, until)
    got = fleet_rows(ledger, lo, hi, sacct_history(sacct) if sacct else None, nodes_of,
                     list(FAILURE_CAUSES), list(NODE_CAUSES))
    rows = got.nodes
    findings = [_finding(r) for r in rows]
    tested = _test(findings, rule) if sacct else []
    shown = sorted((f for f in findings if f.failures), key=lambda f: (
        not f.named, -f.jobs, -f.failures, f.adjusted_p if f.adjusted_p is not None else 2.0,
        f.node))
    test = _summary(rows, rule, len(tested)) if sacct else None
    notes = [] if sacct else [
        "no sacct history (--sacct FILE or --slurm): GPU-hours and exposure are unknown, so "
        "no node is named a repeat offender; nodes are ranked by attributed failures only"]
    return FleetReport(
        since=since, until=hi, ledger=str(ledger.path), exposure_source=str(sacct) if sacct
        else None, sacct_jobs=got.sacct_jobs, investigations=got.investigations,
        causes=[CauseLoss(**r) for r in got.causes], nodes=shown,
        groups=[GroupCause(**r) for r in got.groups], test=test,
        offenders=[f.node for f in shown if f.named], notes=notes)
