"""A ledger file's instance across fork (a process pool started while the ledger is open): the
child must neither crash nor use the parent's instance."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from goodput_agent.ledger import Ledger

FORK = multiprocessing.get_context("fork")


def _count(path: str) -> int:
    with Ledger(Path(path), read_only=True) as ledger:
        return len(ledger.investigations())


def _count_or_error(path: str) -> str:
    try:
        return str(_count(path))
    except RuntimeError as exc:
        return str(exc)


def _ledger_with_one(path: Path) -> Ledger:
    ledger = Ledger(path)
    inv = ledger.start_investigation("why?", "failure", "job-1", "offline", "test")
    ledger.record_conclusion(inv, "unknown", 0.3, 0, "{}")
    return ledger


def test_a_child_forked_while_the_instance_lingers_opens_the_ledger_itself(tmp_path):
    ledger = _ledger_with_one(tmp_path / "ledger.duckdb")
    assert len(ledger.investigations()) == 1  # the instance lingers now, no session on it
    with FORK.Pool(1) as pool:
        assert pool.apply(_count, (str(ledger.path),)) == 1
    child = FORK.Process(target=_count, args=(str(ledger.path),))
    child.start()
    child.join(60)
    assert child.exitcode == 0  # a segfault in the child shows here as -11
    assert len(ledger.investigations()) == 1
    ledger.close()


def test_a_child_forked_inside_a_session_exits_cleanly_and_says_why_it_cannot_open(tmp_path):
    ledger = _ledger_with_one(tmp_path / "ledger.duckdb")
    with ledger.reading() as con, FORK.Pool(1) as pool:
        said = pool.apply(_count_or_error, (str(ledger.path),))
        assert con.execute("SELECT count(*) FROM investigations").fetchone() == (1,)
    assert "forked while its parent used the ledger" in said
    assert str(ledger.path) in said
    with ledger.reading() as con:
        child = FORK.Process(target=lambda: None)
        child.start()
        child.join(60)
    assert child.exitcode == 0
    assert len(ledger.investigations()) == 1
    ledger.close()
