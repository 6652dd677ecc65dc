"""Exposure: the GPU-hours each node ran jobs for, from Slurm's accounting (a saved
`sacct -a -X -P` history, or sacct asked live). The ledger knows failures, not exposure; a
failure rate per node needs both.

The pipe-separated history is read by DuckDB itself (one row per job or attempt, in the
ledger's read session: ledger/fleet.py); Python only checks its columns here and expands each
distinct node list (`gpu[001-004]`) with the parser's own hostlist expansion; SQL does the
rest: GPUs per node from AllocTRES, hours from Start/End clipped to the period.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path

from goodput_agent.core.errors import BadInput
from goodput_agent.ledger.fleet import SacctHistory

SACCT_HISTORY_FIELDS = "JobID,NodeList,AllocTRES,Elapsed,Start,End,Partition,Account,State"
NEEDED = ("jobid", "nodelist", "alloctres", "start", "end")
def _columns(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            header = f.readline()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the sacct history: {exc.strerror}") from None
    return [c.strip() for c in header.rstrip("\n").split("|")]


def sacct_history(path: Path) -> SacctHistory:
    """The history file and its columns, checked (the ledger loads it: ledger/fleet.py)."""
    if not path.is_file():
        raise BadInput(f"{path}: no such sacct history file")
    by_lower = {c.lower(): c for c in _columns(path)}
    missing = [c for c in NEEDED if c not in by_lower]
    if missing:
        raise BadInput(f"{path}: not a sacct history with {SACCT_HISTORY_FIELDS} "
                       f"(missing {', '.join(missing)})")
    return SacctHistory(path=path, columns=by_lower)


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
