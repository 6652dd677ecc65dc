"""Fleet accounting's queries (goodput_agent/accounting/fleet.py builds the report): the
ledger's failure verdicts over a period, joined with a sacct history loaded beside them as
temporary tables of the read session, aggregated in DuckDB: GPU-hours lost by cause, causes
recurring per partition or account, and per node its attributed failures, evidence, recurring
Xids and exposure."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
from pydantic import BaseModel

from goodput_agent.core.errors import BadInput
from goodput_agent.ledger.core import Ledger, fetch

# the job an investigated folder is about. Live collection names it
# reports/slurm-job-<id>-<stamp>/bundle or reports/k8s-<label>-<stamp>/bundle, and `goodput
# account` accounts/<job key>-attempt-<n>/: the job is the folder without that suffix
_SLURM_KEY = r"slurm-job-([0-9]+(?:_[0-9]+)?)"
_FOLDER = r"/(?:reports|accounts)/([^/]+)"
_SUFFIX = r"-(?:[0-9]{8}T[0-9]{6,12}Z|attempt-[0-9]+)$"
# sacct prints Start/End in its process's local time without a zone; they are read as UTC,
# which is what `goodput fleet --slurm` asks sacct for (TZ=UTC) — a saved history should be
# written the same way (TZ=UTC sacct ...)
_TIME = "TRY_CAST(nullif(nullif(\"{col}\", 'Unknown'), 'None') AS TIMESTAMP)"


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




class SacctHistory(BaseModel):
    """A saved `sacct -a -X -P` history and its columns (lower-case name -> as written)."""

    path: Path
    columns: dict[str, str]


class FleetRows(BaseModel):
    causes: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    investigations: int
    sacct_jobs: int


def _load_history(con: duckdb.DuckDBPyConnection, history: SacctHistory,
                  expand: Callable[[str], list[str]]) -> int:
    """Tables `fleet_jobs` (one row per sacct row) and `fleet_nodelists` (each node list's
    hosts, with the share of the job's GPUs on each); returns the number of sacct rows."""
    by_lower = history.columns

    def col(name: str) -> str:
        real = by_lower.get(name)
        return f'"{real}"' if real else "NULL"

    sql = f"""
        CREATE OR REPLACE TEMP TABLE fleet_jobs AS
        SELECT trim({col('jobid')}) AS job_id,
               trim({col('nodelist')}) AS nodelist,
               coalesce(TRY_CAST(split_part(split_part({col('alloctres')}, 'gres/gpu=', 2),
                                            ',', 1) AS INTEGER), 0) AS gpus,
               timezone('UTC', {_TIME.format(col=by_lower['start'])}) AS start_at,
               timezone('UTC', {_TIME.format(col=by_lower['end'])}) AS end_at,
               nullif(trim({col('partition')}), '') AS partition,
               nullif(trim({col('account')}), '') AS account,
               trim({col('state')}) AS state
        FROM read_csv(?, delim='|', header=true, all_varchar=true, quote='', escape='',
                      null_padding=true)
        WHERE {col('jobid')} IS NOT NULL AND NOT contains({col('jobid')}, '.')
    """
    try:
        con.execute(sql, [str(history.path)])
    except duckdb.Error as exc:
        raise BadInput(f"{history.path}: not a sacct -P history: "
                       f"{str(exc).splitlines()[0]}") from None
    lists = [r[0] for r in con.execute(
        "SELECT DISTINCT nodelist FROM fleet_jobs WHERE nodelist IS NOT NULL").fetchall()]
    pairs = [(text, node) for text in lists for node in expand(text)]
    con.execute("CREATE OR REPLACE TEMP TABLE fleet_nodelists AS SELECT nodelist, node, "
                "1.0 / count(*) OVER (PARTITION BY nodelist) AS share FROM (SELECT "
                "unnest(?::VARCHAR[]) AS nodelist, unnest(?::VARCHAR[]) AS node)",
                [[p[0] for p in pairs], [p[1] for p in pairs]])
    return int(con.execute("SELECT count(*) FROM fleet_jobs").fetchone()[0])


def _empty_history(con: duckdb.DuckDBPyConnection) -> None:
    """The same tables, empty: without sacct the report says what it cannot know."""
    con.execute("CREATE OR REPLACE TEMP TABLE fleet_jobs (job_id VARCHAR, nodelist VARCHAR, "
                "gpus INTEGER, start_at TIMESTAMPTZ, end_at TIMESTAMPTZ, partition VARCHAR, "
                "account VARCHAR, state VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE fleet_nodelists (nodelist VARCHAR, node VARCHAR, "
                "share DOUBLE)")


def fleet_rows(ledger: Ledger, lo: datetime, hi: datetime, history: SacctHistory | None,
               expand: Callable[[str], list[str]], causes: list[str],
               node_causes: list[str]) -> FleetRows:
    """Every aggregation in one read session (its temporary tables go with it)."""
    with ledger.reading() as con:
        jobs = _load_history(con, history, expand) if history else 0
        if history is None:
            _empty_history(con)
        con.execute(_HOURS, {"lo": lo, "hi": hi})
        con.execute(_FAILURES, {"lo": lo, "hi": hi, "causes": causes})
        out = FleetRows(causes=fetch(con, _CAUSES), groups=fetch(con, _GROUPS),
                        nodes=fetch(con, _NODES, {"node_causes": node_causes}),
                        investigations=int(con.execute(
                            "SELECT count(*) FROM fleet_failures").fetchone()[0]),
                        sacct_jobs=jobs)
        for table in ("fleet_hours", "fleet_failures", "fleet_jobs", "fleet_nodelists"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    return out
