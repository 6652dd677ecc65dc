"""Pages while another process writes the ledger: DuckDB refuses every other process's
connection while one holds the file for writing, so the reader falls back to a snapshot copy;
a real `goodput investigate` running meanwhile is not held up by the server."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from starlette.testclient import TestClient

from goodput_agent.ledger_reader import read_ledger
from goodput_agent.web.app import ServeConfig, create_app
from tests.web.conftest import BASE, Reviewed

HOLD = """
import sys, time
from goodput_agent.ledger import Ledger
led = Ledger(__import__('pathlib').Path(sys.argv[1]))
led.start_investigation('held open by a writer', 'failure', 'x', 'test', '0')
print('holding', flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_held_ledger_is_read_from_a_snapshot(reviewed: Reviewed) -> None:
    with read_ledger(reviewed.ledger) as (_, info):
        assert info.snapshot_at is None  # nobody writes: the file itself
    writer = subprocess.Popen([sys.executable, "-c", HOLD, str(reviewed.ledger), "20"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "holding"
        with read_ledger(reviewed.ledger) as (led, info):
            assert info.snapshot_at is not None
            # the writer's newest row, committed but not yet checkpointed, is in the snapshot
            questions = {r["question"] for r in led.investigations()}
            assert "held open by a writer" in questions
        client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=reviewed.ledger,
                                                   policy_path=reviewed.policy)))
        for path in ("/", f"/inv/{reviewed.inv_id}", f"/actions/{reviewed.drain_action}"):
            res = client.get(path)
            assert res.status_code == 200, path
            assert 'id="snapshot"' in res.text
    finally:
        writer.kill()
        writer.wait()


def test_goodput_investigate_writes_while_the_pages_are_read(reviewed: Reviewed,
                                                             tmp_path: Path) -> None:
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=reviewed.ledger,
                                               policy_path=reviewed.policy)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "goodput_agent.cli", "investigate", str(reviewed.bundle),
         "--ledger", str(reviewed.ledger), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    statuses, snapshots = [], 0
    while proc.poll() is None or not statuses:
        res = client.get(f"/inv/{reviewed.inv_id}")
        statuses.append(res.status_code)
        snapshots += 'id="snapshot"' in res.text
        time.sleep(0.01)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err  # the writer was never locked out for good
    assert set(statuses) == {200}
    res = client.get("/")
    assert res.status_code == 200 and res.text.count('<tr data-id="') == 2
    assert 'id="snapshot"' not in res.text


def test_an_approval_while_another_process_writes_says_busy(
        reviewed: Reviewed, monkeypatch) -> None:
    import re

    import goodput_agent.ledger as ledger_mod

    monkeypatch.setattr(ledger_mod, "LOCK_WAIT_S", 0.3)
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=reviewed.ledger,
                                               policy_path=reviewed.policy)))
    html = client.get(f"/actions/{reviewed.drain_action}").text
    form = {k: re.search(rf'name="{k}" value="([^"]+)"', html).group(1)
            for k in ("csrf", "shown")}
    writer = subprocess.Popen([sys.executable, "-c", HOLD, str(reviewed.ledger), "20"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "holding"
        res = client.post(f"/actions/{reviewed.drain_action}/approve",
                          data={**form, "approver": "alice"}, follow_redirects=False)
        assert res.status_code == 503 and "in use by another goodput process" in res.text
    finally:
        writer.kill()
        writer.wait()
    res = client.post(f"/actions/{reviewed.drain_action}/approve",
                      data={**form, "approver": "alice"}, follow_redirects=False)
    assert res.status_code == 303  # once the writer is gone, the same form goes through


_ROWS = "SELECT count(*) AS n FROM meta WHERE key LIKE 'row%'"
BUSY_WRITER = """
import sys, time
from pathlib import Path
from goodput_agent.ledger import Ledger
led = Ledger(Path(sys.argv[1]))
print('go', flush=True)
end, n = time.time() + float(sys.argv[2]), 0
while time.time() < end:
    led.con.execute("INSERT INTO meta VALUES (?, 'x')", ['row%d' % n])
    n += 1
    if n % 300 == 0:
        led.con.execute('CHECKPOINT')
print(n, flush=True)
"""


def test_snapshots_under_a_busy_writer_are_consistent(tmp_path: Path) -> None:
    """A writer far busier than an investigation (hundreds of rows a second, checkpoints):
    every snapshot opens whole or is retaken, and no read goes back in time."""
    from goodput_agent.ledger import Ledger
    from goodput_agent.ledger_reader import LedgerBusy

    path = tmp_path / "l.duckdb"
    Ledger(path).close()
    writer = subprocess.Popen([sys.executable, "-c", BUSY_WRITER, str(path), "2"],
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "go"
    counts, busy, snapshots = [], 0, 0
    while writer.poll() is None:
        try:
            with read_ledger(path) as (led, info):
                counts.append(led.rows(_ROWS)[0]["n"])
                snapshots += info.snapshot_at is not None
        except LedgerBusy:
            busy += 1
    written = int(writer.stdout.read().strip())
    assert snapshots >= 1  # busy answers are allowed: the page says so
    assert counts == sorted(counts) and counts[-1] <= written
    with read_ledger(path) as (led, info):
        assert info.snapshot_at is None
        assert led.rows(_ROWS)[0]["n"] == written
