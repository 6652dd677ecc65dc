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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
        _reached(marker, proc, f"{args[0]}'s insert")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _reached(marker: Path, proc: subprocess.Popen[Any], where: str) -> None:
    """Until the process says (the marker) it is where it was made to stop."""
    for _ in range(6000):  # 10 minutes at most: the command's own work, however slow
        if marker.exists():
            return
        try:
            proc.wait(timeout=0.1)
            raise AssertionError(f"the process ended ({proc.returncode}) before {where}")
        except subprocess.TimeoutExpired:
            continue
    raise AssertionError(f"the process never reached {where}")


# the CLI, held (alive, nothing open) just before its N-th investigation's conclusion is
# inserted, until the test writes to a FIFO; the marker holds that investigation's id, written
# once the pages the process serves (if any) answer
HELD_AT_CONCLUSION = """
import os, sys, time, urllib.request
from goodput_agent.ledger import core
marker, fifo, nth, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
real, calls = core.Ledger.record_conclusion, [0]
def held(self, inv_id, *args):
    calls[0] += 1
    if calls[0] == nth:
        for _ in range(600 if ready else 0):
            try:
                urllib.request.urlopen(ready, timeout=10).read()
                break
            except OSError:
                time.sleep(0.1)
        with open(marker + ".part", "w") as f:
            f.write(inv_id)
        os.rename(marker + ".part", marker)
        with open(fifo) as f:
            f.read()
    return real(self, inv_id, *args)
core.Ledger.record_conclusion = held
from goodput_agent.cli.main import cli
cli(sys.argv[5:], prog_name="goodput")
"""


@contextmanager
def held_at_conclusion(workdir: Path, nth: int, *args: str, env: dict[str, str],
                       ready: str = "") -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Run the CLI until it is about to insert its nth conclusion (and `ready`, a URL it
    serves, answers); yield the process and that investigation's id; on leaving, let it go
    on (the caller waits for it). Its stderr is in workdir/held.stderr."""
    marker, fifo = workdir / "held.marker", workdir / "held.fifo"
    os.mkfifo(fifo)
    with (workdir / "held.stderr").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", HELD_AT_CONCLUSION, str(marker),
                                 str(fifo), str(nth), ready, *args], env=env, text=True,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        _reached(marker, proc, f"conclusion {nth}")
        yield proc, marker.read_text()
        with fifo.open("w") as go:
            go.write("go")
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
