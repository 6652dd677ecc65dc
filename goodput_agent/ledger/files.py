"""Short sessions on the ledger file, so that many processes share it all day.

DuckDB lets one process open a file for writing and then refuses every other process, readers
included, for as long as it stays open. So no goodput process keeps the file open: each reads
or writes in a session of one transaction, and closes it. Sessions of one process share one
DuckDB instance (threads get their own cursor); processes take turns through a lock on a
sidecar file (`ledger.duckdb.lock`): shared for readers, exclusive for a writer. Waiting is
in the kernel's lock, not in failed opens (a refused DuckDB open costs ~20 ms of CPU), up to
a deadline, then a one-line BadInput. A process that held the file for long lets go and
pauses briefly before taking it again, so that a busy watch cannot starve a person's command.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from goodput_agent.errors import BadInput

WAIT_S = 30.0  # how long a session waits for the other processes' turns
HOLD_S = 0.25  # past this, new sessions of this process wait for the file to be let go
COURTESY_S = 0.004  # the pause after letting go of a long hold, before taking it again
_POLL_S = (0.001, 0.004)  # between tries of the sidecar lock (each is a system call)


LedgerError = duckdb.Error  # what a query on a ledger file that is not one raises


class LedgerBusy(BadInput):
    """The ledger stayed in use by other processes past the wait."""


class LedgerFile:
    """The ledger file of one path, in this process: `session(write)` yields a DuckDB cursor
    for one transaction (a write session commits at its end, or rolls back on an error)."""

    _files: dict[Path, LedgerFile] = {}
    _files_lock = threading.Lock()

    @classmethod
    def of(cls, path: Path) -> LedgerFile:
        key = Path(os.path.abspath(path))
        with cls._files_lock:
            found = cls._files.get(key)
            if found is None:
                found = cls._files[key] = cls(key)
            return found

    def __init__(self, path: Path):
        self.path = path
        self.cond = threading.Condition()
        self.db: duckdb.DuckDBPyConnection | None = None
        self.writable = False
        self.users = 0  # sessions open now
        self.writing = False  # a write session is open (one at a time in this process)
        self.opened_at = 0.0
        self.released_at = 0.0
        self.draining = False  # held too long: new sessions wait until it is let go
        self._lockfd: int | None = None
        self.local = threading.local()  # this thread's open session (nested sessions join it)
        self.schema_ready = False

    def ensure_schema(self, ensure: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
        """The tables, created (or brought up to date) once per process."""
        if not self.schema_ready:
            with self.session(write=True) as con:
                ensure(con)
            self.schema_ready = True

    # --- sessions -----------------------------------------------------------------------

    @contextmanager
    def session(self, write: bool, wait_s: float = WAIT_S) -> Iterator[duckdb.DuckDBPyConnection]:
        outer = getattr(self.local, "cursor", None)
        if outer is not None:  # nested: the thread's open session (a write needs a write one)
            if write and not self.local.write:
                raise RuntimeError("a write session inside a read session of the same thread")
            yield outer
            return
        cur = self._enter(write, time.monotonic() + wait_s)
        self.local.cursor, self.local.write = cur, write
        ok = False
        try:
            if write:
                cur.execute("BEGIN TRANSACTION")
            yield cur
            ok = True
        finally:
            self.local.cursor = None
            self._finish(cur, write, ok)

    def _enter(self, write: bool, deadline: float) -> duckdb.DuckDBPyConnection:
        with self.cond:
            while not self._may_join(write):
                self._wait(deadline)
            if self.db is None or (write and not self.writable):
                self._open(write, deadline)
            self.users += 1
            self.writing = self.writing or write
            return self.db.cursor()  # type: ignore[union-attr]

    def _may_join(self, write: bool) -> bool:
        if self.draining and self.db is not None:
            return False
        if self.db is None:
            return True
        if write:  # one writer; a read-only instance must be let go first
            return not self.writing and (self.writable or self.users == 0)
        return True

    def _wait(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise LedgerBusy(f"{self.path}: the ledger stayed busy in this process for "
                             f"{WAIT_S:g} s")
        self.cond.wait(min(left, 0.05))

    def _finish(self, cur: duckdb.DuckDBPyConnection, write: bool, ok: bool) -> None:
        try:
            if write:
                cur.execute("COMMIT" if ok else "ROLLBACK")
        finally:
            cur.close()
            with self.cond:
                self.users -= 1
                if write:
                    self.writing = False
                if self.db is not None and time.monotonic() - self.opened_at > HOLD_S:
                    self.draining = True
                if self.users == 0:
                    self._close()
                self.cond.notify_all()

    # --- the file and the other processes -------------------------------------------------

    def _open(self, write: bool, deadline: float) -> None:
        if self.db is not None:  # a read-only instance, no session on it: let it go
            self._close()
        if time.monotonic() - self.released_at < COURTESY_S:
            time.sleep(COURTESY_S)
        self._lock(write, deadline)
        try:
            self.db = self._connect(write, deadline)
        except BaseException:
            self._unlock()
            raise
        self.writable, self.opened_at = write, time.monotonic()

    def _connect(self, write: bool, deadline: float) -> duckdb.DuckDBPyConnection:
        """DuckDB's own lock is free unless a process that does not take turns holds it (an
        older goodput, the duckdb shell): then try again until the deadline."""
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=not write)
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise LedgerBusy(f"{self.path}: cannot open the ledger: "
                                     f"{str(exc).splitlines()[0]}") from None
                time.sleep(random.uniform(0.02, 0.1))

    def _close(self) -> None:
        db, self.db = self.db, None
        try:
            if db is not None:
                db.close()  # a write instance checkpoints here
        finally:
            self._unlock()
            self.writable = self.draining = False
            self.released_at = time.monotonic()

    def _lock(self, write: bool, deadline: float) -> None:
        """The sidecar lock (shared or exclusive); DuckDB's own lock is then free, but for a
        process that does not take turns (another tool): that open is retried below."""
        if self._lockfd is None:
            self._lockfd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                                   0o600)
        mode = (fcntl.LOCK_EX if write else fcntl.LOCK_SH) | fcntl.LOCK_NB
        while True:
            try:
                fcntl.flock(self._lockfd, mode)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LedgerBusy(f"{self.path}: the ledger is in use by other goodput "
                                     f"processes and stayed so for {WAIT_S:g} s; try again"
                                     ) from None
                time.sleep(random.uniform(*_POLL_S))

    def _unlock(self) -> None:
        if self._lockfd is not None:
            fcntl.flock(self._lockfd, fcntl.LOCK_UN)

    def fork_reset(self) -> None:
        """In a child process after fork: nothing of the parent's instance is usable."""
        self.db, self.users, self.writing, self._lockfd = None, 0, False, None
        self.cond = threading.Condition()
        self.local = threading.local()


def _after_fork() -> None:
    for f in LedgerFile._files.values():
        f.fork_reset()


os.register_at_fork(after_in_child=_after_fork)
