"""A goodput command killed (SIGKILL) inside one of its ledger writes, made to happen rather than
caught: the command runs with the ledger's row insertion wrapped to stop for good inside its
N-th insert (into one table, or any), a marker file says it is there, then the process group is
killed. The test knows exactly what was written before: no polling for a moment, no load
dependence."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

# the CLI, with the ledger's bulk insert stopping inside its N-th call (mid-transaction)
STOPPED_MID_WRITE = """
import sys, time
from goodput_agent.ledger import core
marker, nth, only = sys.argv[1], int(sys.argv[2]), sys.argv[3]
real, calls = core.insert_rows, [0]
def stopped(con, table, rows):
    real(con, table, rows)
    if not rows or (only and table != only):
        return
    calls[0] += 1
    if calls[0] == nth:
        open(marker, "w").close()
        time.sleep(600)
core.insert_rows = stopped
from goodput_agent.cli.main import cli
cli(sys.argv[4:], prog_name="goodput")
"""


def stopped_mid_write(marker: Path, nth: int, *args: str, env: dict[str, str],
                      table: str = "") -> None:
    """Run the CLI until it is inside its nth insert (into `table`, or any table), then kill
    it there (SIGKILL to its process group)."""
    proc = subprocess.Popen([sys.executable, "-c", STOPPED_MID_WRITE, str(marker), str(nth),
                             table, *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(6000):  # 10 minutes at most: the command's own work, however slow
            if marker.exists():
                break
            try:
                proc.wait(timeout=0.1)
                raise AssertionError(f"{args[0]} ended ({proc.returncode}) before its insert")
            except subprocess.TimeoutExpired:
                continue
        assert marker.exists(), f"{args[0]} never reached its insert"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
