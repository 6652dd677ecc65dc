"""Exposure: the GPU-hours each node ran jobs for, from Slurm's accounting (a saved
`sacct -a -X -P` history, or sacct asked live). The ledger knows failures, not exposure; a
failure rate per node needs both.

The pipe-separated history is read by DuckDB itself (one row per job or attempt); Python only
expands each distinct node list (`gpu[001-004]`) with the parser's own hostlist expansion, and
SQL does the rest: GPUs per node from AllocTRES, hours from Start/End clipped to the period.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path

import duckdb

from goodput_agent.errors import BadInput
from goodput_agent.parsing.slurm import nodes_of

SACCT_HISTORY_FIELDS = "JobID,NodeList,AllocTRES,Elapsed,Start,End,Partition,Account,State"
NEEDED = ("jobid", "nodelist", "alloctres", "start", "end")
# sacct prints Start/End in its process's local time without a zone; they are read as UTC,
# which is what `goodput fleet --slurm` asks sacct for (TZ=UTC) — a saved history should be
# written the same way (TZ=UTC sacct ...)
_TIME = "TRY_CAST(nullif(nullif(\"{col}\", 'Unknown'), 'None') AS TIMESTAMP)"


def _columns(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            header = f.readline()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the sacct history: {exc.strerror}") from None
    return [c.strip() for c in header.rstrip("\n").split("|")]


def load_sacct_history(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """Tables `fleet_jobs` (one row per sacct row) and `fleet_nodelists` (each node list's
    hosts, with the share of the job's GPUs on each) on this connection; returns the number
    of sacct rows."""
    if not path.is_file():
        raise BadInput(f"{path}: no such sacct history file")
    columns = _columns(path)
    by_lower = {c.lower(): c for c in columns}
    missing = [c for c in NEEDED if c not in by_lower]
    if missing:
        raise BadInput(f"{path}: not a sacct history with {SACCT_HISTORY_FIELDS} "
                       f"(missing {', '.join(missing)})")

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
        con.execute(sql, [str(path)])
    except duckdb.Error as exc:
        raise BadInput(f"{path}: not a sacct -P history: {str(exc).splitlines()[0]}") from None
    lists = [r[0] for r in con.execute(
        "SELECT DISTINCT nodelist FROM fleet_jobs WHERE nodelist IS NOT NULL").fetchall()]
    pairs = [(text, node) for text in lists for node in nodes_of(text)]
    con.execute("CREATE OR REPLACE TEMP TABLE fleet_nodelists AS SELECT nodelist, node, "
                "1.0 / count(*) OVER (PARTITION BY nodelist) AS share FROM (SELECT "
                "unnest(?::VARCHAR[]) AS nodelist, unnest(?::VARCHAR[]) AS node)",
                [[p[0] for p in pairs], [p[1] for p in pairs]])
    return int(con.execute("SELECT count(*) FROM fleet_jobs").fetchone()[0])


def empty_history(con: duckdb.DuckDBPyConnection) -> None:
    """The same tables, empty: without sacct the report says what it cannot know."""
    con.execute("CREATE OR REPLACE TEMP TABLE fleet_jobs (job_id VARCHAR, nodelist VARCHAR, "
                "gpus INTEGER, start_at TIMESTAMPTZ, end_at TIMESTAMPTZ, partition VARCHAR, "
                "account VARCHAR, state VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE fleet_nodelists (nodelist VARCHAR, node VARCHAR, "
                "share DOUBLE)")


def sacct_live(since: datetime | None, until: datetime | None, timeout_s: float = 120.0
               ) -> Path:
    """`sacct -a -X -P` of the period, asked now, saved to a temporary file (kept: the
    caller may show where it is)."""
    from goodput_agent.sources.errors import SourceError
    from goodput_agent.sources.slurm import SlurmCLI

    argv = ["sacct", "-a", "-X", "-P", f"--format={SACCT_HISTORY_FIELDS}"]
    if since:
        argv += ["-S", since.strftime("%Y-%m-%dT%H:%M:%S")]
    if until:
        argv += ["-E", until.strftime("%Y-%m-%dT%H:%M:%S")]
    try:
        # TZ=UTC: sacct reads -S/-E and prints Start/End in UTC, as the history is read
        text, _ = SlurmCLI(env={**os.environ, "TZ": "UTC"}, timeout_s=timeout_s).call(argv)
    except SourceError as exc:
        raise BadInput(f"sacct: {exc.message}") from None
    with tempfile.NamedTemporaryFile("w", suffix=".sacct.txt", delete=False) as f:
        f.write(text)
    return Path(f.name)
