import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger


def test_claim_must_cite_evidence_the_ledger_holds(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.duckdb") as lg:
        inv = lg.start_investigation("q", "failure", "b", "offline", "0")
        ev = lg.record_evidence(inv, None, "logs/rank0.log", "logs/rank0.log:3", "boom", None)
        cid = lg.record_claim(inv, "s", "gpu_oom", 0.9, "supported", [ev], [])
        with pytest.raises(ValueError, match="does not hold"):
            lg.record_claim(inv, "s", "gpu_oom", 0.9, "supported", [ev + 1000], [])
        rec = lg.investigation(inv)
    assert rec is not None
    assert [c["id"] for c in rec.claims] == [cid]
    assert json.loads(rec.claims[0]["supporting"]) == [ev]


def test_rerun_is_a_new_investigation_and_nothing_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    with Ledger(path) as lg:
        a = lg.start_investigation("q", "failure", "b", "offline", "0")
        lg.record_conclusion(a, "gpu_oom", 0.9, 0, "{}")
    with Ledger(path) as lg:
        b = lg.start_investigation("q", "failure", "b", "offline", "0")
        lg.record_conclusion(b, "host_oom", 0.8, 0, "{}")
        rows = lg.investigations()
        first = lg.investigation(a)
    assert {r["id"] for r in rows} == {a, b}
    assert first is not None and first.conclusion is not None
    assert first.conclusion["category"] == "gpu_oom"


def test_kill_minus_9_mid_investigation_leaves_whole_investigations_only(tmp_path: Path) -> None:
    """An investigation's rows are inserted with its conclusion, in one transaction: killed
    midway, it lists as interrupted with none of its rows (never half of them), and what
    concluded before is whole."""
    path = tmp_path / "crash.duckdb"
    child = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from goodput_agent.ledger import Ledger
        lg = Ledger(Path({str(path)!r}))
        done = lg.start_investigation("q", "failure", "a", "offline", "0")
        for i in range(30):
            lg.record_evidence(done, None, "f", f"f:{{i}}", "x" * 50, None)
        lg.record_conclusion(done, "gpu_oom", 0.9, 0, "{{}}")
        inv = lg.start_investigation("q", "failure", "b", "offline", "0")
        print(done, inv, flush=True)
        for i in range(100000):
            ev = lg.record_evidence(inv, None, "f", f"f:{{i}}", "x" * 50, None)
            print(ev, flush=True)
            if i >= 40:
                time.sleep(0.01)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    done, inv_id = proc.stdout.readline().split()
    for _ in range(60):  # it is recording: 60 rows staged
        proc.stdout.readline()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with Ledger(path, read_only=True) as lg:
        cut, whole = lg.investigation(inv_id), lg.investigation(done)
        listed = {r["id"]: r["status"] for r in lg.investigations()}
    assert cut is not None and cut.status == "interrupted" and cut.evidence == []
    assert whole is not None and whole.status == "concluded" and len(whole.evidence) == 30
    assert listed == {done: "concluded", inv_id: "interrupted"}


def test_unopenable_ledger_is_a_one_line_bad_input(tmp_path: Path) -> None:
    bogus = tmp_path / "not-a-db.duckdb"
    bogus.write_bytes(b"this is not duckdb" * 100)
    with pytest.raises(BadInput) as err:
        Ledger(bogus)
    assert str(bogus) in str(err.value)
    assert "\n" not in str(err.value)
