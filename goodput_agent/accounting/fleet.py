"""`goodput fleet`: the ledger's failure verdicts over a period, turned into fleet accounting —
GPU-hours lost by cause, nodes ranked by the failures attributed to them across different
jobs, causes recurring per partition or account, and repeat offenders named only when a node
fails significantly more often per GPU-hour than the rest of the fleet.

Every aggregation is one DuckDB query over the ledger's tables (and the sacct history loaded
beside them as temporary tables); Python only computes each node's Poisson tail and the
correction over the per-node rows the SQL returns.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from goodput_agent.accounting.fleet_exposure import empty_history, load_sacct_history
from goodput_agent.accounting.fleet_models import (
    CauseLoss,
    FleetReport,
    GroupCause,
    NodeFinding,
    OffenderTest,
)
from goodput_agent.accounting.fleet_stats import benjamini_hochberg, bonferroni, poisson_sf
from goodput_agent.ledger import Ledger
from goodput_agent.report import CATEGORIES

FAILURE_CAUSES = CATEGORIES["failure"]
# the verdicts a node can be to blame for; an OOM, an application error, a time limit or a
# preemption can name the node a rank ran on without the node being at fault
NODE_CAUSES = ("gpu_hardware", "node_failure", "network_fault")
# the job an investigated folder is about. Live collection names it
# reports/slurm-job-<id>-<stamp>/bundle or reports/k8s-<label>-<stamp>/bundle, and `goodput
# account` accounts/<job key>-attempt-<n>/: the job is the folder without that suffix
_SLURM_KEY = r"slurm-job-([0-9]+(?:_[0-9]+)?)"
_FOLDER = r"/(?:reports|accounts)/([^/]+)"
_SUFFIX = r"-(?:[0-9]{8}T[0-9]{6,12}Z|attempt-[0-9]+)$"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class OffenderRule(BaseModel):
    alpha: float = 0.01
    min_failures: int = 3
    min_jobs: int = 2
    correction: Literal["benjamini-hochberg", "bonferroni"] = "benjamini-hochberg"


# each sacct row's GPU-hours within the period
_HOURS = """
CREATE OR REPLACE TEMP TABLE fleet_hours AS
SELECT job_id, nodelist, partition, account, end_at,
       gpus * greatest(0, epoch(least(coalesce(end_at, $hi), $hi))
                          - epoch(greatest(start_at, $lo))) / 3600.0 AS gpu_h
FROM fleet_jobs
"""

# one verdict per bundle (the latest investigation of it), keyed by the job it is about; a
# literal-prefixed pattern, which DuckDB matches many times faster than an alternation
_FAILURES = f"""
CREATE OR REPLACE TEMP TABLE fleet_failures AS
WITH latest AS (
    SELECT i.target, arg_max(i.id, (i.created_at, i.id)) AS id,
           max(i.created_at) AS created_at, arg_max(c.category, (i.created_at, i.id)) AS category
    FROM investigations i JOIN conclusions c ON c.investigation_id = i.id
    WHERE i.planner <> 'fleet' GROUP BY i.target),
inv AS (
    SELECT *, nullif(regexp_extract(target, '{_SLURM_KEY}', 1), '') AS slurm_id,
           coalesce(nullif(regexp_extract(target, '{_SLURM_KEY}', 0), ''),
                    CASE WHEN contains(target, '/reports/') OR contains(target, '/accounts/')
                         THEN nullif(regexp_replace(regexp_extract(target, '{_FOLDER}', 1),
                                                    '{_SUFFIX}', ''), '') END,
                    target) AS job
    FROM latest WHERE category IN (SELECT unnest($causes::VARCHAR[]))),
jobs AS (  -- only the failed jobs' sacct rows
    SELECT job_id AS slurm_id, max(end_at) AS end_at, any_value(partition) AS partition,
           any_value(account) AS account, sum(gpu_h) AS gpu_hours
    FROM fleet_hours WHERE job_id IN (SELECT slurm_id FROM inv) GROUP BY job_id),
per_job AS (SELECT job, count(*) AS n FROM inv GROUP BY job)  -- a job failing twice
SELECT inv.id, inv.target, inv.job, inv.category, jobs.partition, jobs.account,
       jobs.gpu_hours / per_job.n AS gpu_hours
FROM inv JOIN per_job USING (job) LEFT JOIN jobs USING (slurm_id)
WHERE coalesce(jobs.end_at, inv.created_at) >= $lo
  AND coalesce(jobs.end_at, inv.created_at) < $hi
"""

_CAUSES = """
SELECT category, count(*) AS failures, count(DISTINCT job) AS jobs,
       CASE WHEN count(gpu_hours) > 0 THEN sum(gpu_hours) END AS gpu_hours
FROM fleet_failures GROUP BY category ORDER BY gpu_hours DESC NULLS LAST, failures DESC
"""

_GROUPS = """
SELECT dimension, value, category, count(*) AS failures, count(DISTINCT job) AS jobs,
       sum(gpu_hours) AS gpu_hours
FROM (SELECT 'partition' AS dimension, partition AS value, * FROM fleet_failures
      UNION ALL BY NAME
      SELECT 'account' AS dimension, account AS value, * FROM fleet_failures)
WHERE value IS NOT NULL
GROUP BY dimension, value, category HAVING count(DISTINCT job) >= 2
ORDER BY failures DESC, dimension, value, category
"""

# per node: failures whose verdict claim names it, with the evidence, and its exposure; the
# fleet rate for each node is the rest of the fleet's (the node under test left out)
_NODES = """
WITH attributed AS (
    SELECT DISTINCT f.id AS inv, f.job, f.category, cl.node, cl.supporting
    FROM fleet_failures f JOIN claims cl ON cl.investigation_id = f.id
    WHERE cl.node IS NOT NULL AND cl.category = f.category AND cl.status = 'supported'
      AND f.category IN (SELECT unnest($node_causes::VARCHAR[]))),
per_node AS (
    SELECT node, count(DISTINCT inv) AS failures, count(DISTINCT job) AS jobs,
           list(DISTINCT category ORDER BY category) AS categories,
           list(DISTINCT inv ORDER BY inv) AS investigations
    FROM attributed GROUP BY node),
cited_ids AS (  -- unnest in the select list: a lateral unnest is many times slower
    SELECT node, inv, unnest(CAST(supporting AS BIGINT[])) AS eid FROM attributed),
cited AS (
    SELECT c.node, c.inv, e.id, e.excerpt FROM cited_ids c JOIN evidence e ON e.id = c.eid),
per_node_xid AS (  -- an Xid recurring on a node: in how many of its failures' evidence
    SELECT node, xid, count(DISTINCT inv) AS failures
    FROM (SELECT node, inv, regexp_extract(excerpt, 'Xid \\(.*?\\): ([0-9]+)', 1) AS xid
          FROM cited WHERE excerpt LIKE '%Xid%')
    WHERE xid <> '' GROUP BY node, xid),
per_node_evidence AS (
    SELECT node, list(DISTINCT id ORDER BY id) AS evidence_ids FROM cited GROUP BY node),
xid_lists AS (
    SELECT node, list(struct_pack(xid := xid, failures := failures)
                      ORDER BY failures DESC, xid) AS xids
    FROM per_node_xid GROUP BY node),
exposure AS (
    SELECT n.node, sum(h.gpu_h * n.share) AS gpu_h
    FROM fleet_hours h JOIN fleet_nodelists n USING (nodelist) GROUP BY n.node),
joined AS (
    SELECT coalesce(p.node, x.node) AS node, coalesce(p.failures, 0) AS failures,
           coalesce(p.jobs, 0) AS jobs, p.categories, p.investigations, x.gpu_h
    FROM per_node p FULL OUTER JOIN exposure x ON x.node = p.node),
fleet AS (
    SELECT sum(failures) FILTER (WHERE gpu_h > 0) AS f_all, sum(gpu_h) FILTER (WHERE gpu_h > 0)
           AS e_all
    FROM joined)
SELECT j.*, ev.evidence_ids, xl.xids, fleet.f_all, fleet.e_all,
       CASE WHEN j.gpu_h > 0 AND fleet.e_all - j.gpu_h > 0
            THEN (fleet.f_all - j.failures) / (fleet.e_all - j.gpu_h) END AS rest_rate
FROM joined j CROSS JOIN fleet LEFT JOIN per_node_evidence ev ON ev.node = j.node
     LEFT JOIN xid_lists xl ON xl.node = j.node
"""


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
    con = ledger.con
    sacct_jobs = 0
    if sacct:
        sacct_jobs = load_sacct_history(con, sacct)
    else:
        empty_history(con)
    con.execute(_HOURS, {"lo": lo, "hi": hi})
    con.execute(_FAILURES, {"lo": lo, "hi": hi, "causes": list(FAILURE_CAUSES)})
    causes = [CauseLoss(**r) for r in ledger.rows(_CAUSES)]
    groups = [GroupCause(**r) for r in ledger.rows(_GROUPS)]
    rows = _rows(ledger, _NODES, {"node_causes": list(NODE_CAUSES)})
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
        else None, sacct_jobs=sacct_jobs,
        investigations=int(con.execute("SELECT count(*) FROM fleet_failures").fetchone()[0]),
        causes=causes, nodes=shown, groups=groups, test=test,
        offenders=[f.node for f in shown if f.named], notes=notes)


def _rows(ledger: Ledger, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    cur = ledger.con.execute(sql, params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
