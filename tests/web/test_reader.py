"""Pages while other processes write the ledger: every process takes short turns at the file
(goodput_agent/ledger/files.py), so pages read the file itself, a real `goodput investigate`
running meanwhile is not held up by the server, and only a process that keeps the file past
the wait makes a page say busy."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from starlette.testclient import TestClient

from goodput_agent.ledger import Ledger, LedgerBusy
from goodput_agent.ledger.reader import read_ledger
from goodput_agent.web.app import ServeConfig, create_app
from tests.web.conftest import BASE, Reviewed, token_for

HOLD = """
import sys, time
from pathlib import Path
from goodput_agent.ledger import Ledger
led = Ledger(Path(sys.argv[1]))
with led.writing():  # a process that keeps the file (what no goodput command does)
    print('holding', flush=True)
    sys.stdin.readline()
"""


def _client(r: Reviewed) -> TestClient:
    return TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=r.ledger,
                                                                policy_path=r.policy)),
                      follow_redirects=False)


def test_goodput_investigate_writes_while_the_pages_are_read(reviewed: Reviewed) -> None:
    client = _client(reviewed)
    proc = subprocess.Popen(
        [sys.executable, "-m", "goodput_agent.cli", "investigate", str(reviewed.bundle),
         "--ledger", str(reviewed.ledger), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    statuses = []
    while proc.poll() is None or not statuses:
        statuses.append(client.get(f"/inv/{reviewed.inv_id}").status_code)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err  # the writer was never locked out
    assert set(statuses) == {200}
    assert client.get("/").text.count('<tr data-id="') == 2


def test_a_process_that_keeps_the_file_makes_a_page_say_busy(reviewed: Reviewed,
                                                             monkeypatch) -> None:  # noqa: ANN001
    from goodput_agent.ledger import files

    monkeypatch.setattr(files, "WAIT_S", 0.3)
    client = _client(reviewed)
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'alice')}"
    html = client.get(f"/actions/{reviewed.drain_action}").text
    form = {k: re.search(rf'name="{k}" value="([^"]+)"', html).group(1)  # type: ignore[union-attr]
            for k in ("csrf", "shown")}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(reviewed.ledger)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        res = client.post(f"/actions/{reviewed.drain_action}/approve",
                          data=form)
        assert res.status_code == 503 and "in use by other goodput processes" in res.text
        assert client.get("/").status_code == 503
    finally:
        holder.communicate("\n", timeout=30)
    res = client.post(f"/actions/{reviewed.drain_action}/approve",
                      data=form)
    assert res.status_code == 303  # once it lets go, the same form goes through (and the
    # gate, with no Slurm here, records its refusal to run the drain: nothing was lost)


BUSY_WRITER = """
import sys, time
from pathlib import Path
from goodput_agent.ledger import Ledger
led = Ledger(Path(sys.argv[1]))
print('go', flush=True)
end, n = time.time() + float(sys.argv[2]), 0
while time.time() < end:
    inv = led.start_investigation('q', 'failure', 't', 'test', '0')
    for i in range(20):
        led.record_evidence(inv, None, 'f', f'f:{i}', 'x', None)
    led.record_conclusion(inv, 'gpu_oom', 0.9, 0, '{}')
    n += 1
print(n, flush=True)
"""


def test_reads_under_a_busy_writer_see_whole_investigations_in_order(tmp_path: Path) -> None:
    """A writer far busier than a watch: every read sees only whole investigations (20
    evidence rows with each conclusion, none without) and never goes back in time."""
    path = tmp_path / "l.duckdb"
    Ledger(path).close()
    writer = subprocess.Popen([sys.executable, "-c", BUSY_WRITER, str(path), "3"],
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "go"
    counts = []
    while writer.poll() is None:
        try:
            with read_ledger(path) as (led, _):
                row = led.rows("SELECT (SELECT count(*) FROM conclusions) AS done, "
                               "(SELECT count(*) FROM evidence) AS evidence")[0]
        except LedgerBusy:
            continue
        assert row["evidence"] == 20 * row["done"]  # never half an investigation
        counts.append(row["done"])
    written = int(writer.stdout.read().strip())
    assert len(counts) >= 10 and counts == sorted(counts) and counts[-1] <= written
    with read_ledger(path) as (led, _):
        assert led.rows("SELECT count(*) AS n FROM conclusions")[0]["n"] == written
