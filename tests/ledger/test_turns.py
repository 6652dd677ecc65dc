"""How a process lets go of the ledger file (files.py), each state made to happen: another
process waiting is a shared lock on the `.wait` sidecar held here; a page thread inside its
read is held there by an event."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from goodput_agent.ledger import Ledger, files
from goodput_agent.ledger.reader import read_ledger


@contextmanager
def someone_waiting(ledger: Path) -> Iterator[None]:
    """What a process waiting for its turn holds (files.py _Turns.take)."""
    fd = os.open(f"{ledger}.wait", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        yield
    finally:
        os.close(fd)


def free_for_another_process(ledger: Path) -> bool:
    fd = os.open(f"{ledger}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _one(lg: Ledger, target: str) -> str:
    inv = lg.start_investigation("why?", "failure", target, "offline", "test")
    lg.record_conclusion(inv, "unknown", 0.3, 0, "{}")
    return inv


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(files, "HOLD_S", 0.0)  # any hold is long: let go whenever one waits
    ledger = tmp_path / "ledger.duckdb"
    Ledger(ledger).release()
    return ledger


def test_a_command_keeps_its_turn_across_its_sessions_then_lets_go(path: Path) -> None:
    with someone_waiting(path):
        with Ledger(path, one_turn=True) as lg:
            instance = lg.file.db
            assert instance is not None and lg.file.writable  # taken once, for writing
            _one(lg, "a")
            _one(lg, "b")
            assert len(lg.investigations()) == 2
            assert lg.file.db is instance  # never let go between the steps
            assert not free_for_another_process(path)
        assert lg.file.db is None  # the command done: let go at once to the one waiting
        assert free_for_another_process(path)


def test_a_kept_turn_ends_after_keep_max_s_whatever_the_command(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "KEEP_MAX_S", 0.0)  # the bound already passed
    with someone_waiting(path), Ledger(path, one_turn=True) as lg:
        _one(lg, "a")
        assert lg.file.db is None and free_for_another_process(path)
        _one(lg, "b")  # its next step takes a turn of its own
        assert len(lg.investigations()) == 2


def test_the_watch_never_closes_its_instance_under_a_page_reading_it(path: Path) -> None:
    """A page thread of `goodput watch --serve` reads through the watch's instance, in one
    state of the ledger however the watch writes meanwhile; the watch lets go (someone waits,
    or it released the file) only once the page is done."""
    watch = Ledger(path)
    _one(watch, "before")
    running = watch.start_investigation("why?", "failure", "meanwhile", "offline", "test")
    inside, finish = threading.Event(), threading.Event()
    seen: list[object] = []

    def page() -> None:
        def statuses(led: Ledger) -> dict[str, str]:
            return {r["target"]: r["status"] for r in led.investigations()}
        try:
            with read_ledger(path) as (led, _):
                seen.append(statuses(led))
                inside.set()
                finish.wait(60)
                seen.append(statuses(led))
        except BaseException as exc:  # noqa: BLE001 - the assertion below shows it
            seen.append(exc)

    reader = threading.Thread(target=page)
    reader.start()
    assert inside.wait(60)
    instance = watch.file.db
    with someone_waiting(path):
        watch.record_conclusion(running, "unknown", 0.3, 0, "{}")  # would let go at its end
        watch.release()  # and asked outright
        assert watch.file.db is instance and watch.file.draining
        finish.set()
        reader.join(60)
        assert watch.file.db is None and free_for_another_process(path)
    before = {"before": "concluded", "meanwhile": "interrupted"}
    assert seen == [before, before], seen  # the page's one state, from its first query on
    assert {r["target"]: r["status"] for r in watch.investigations()} == {
        "before": "concluded", "meanwhile": "concluded"}
    watch.release()
