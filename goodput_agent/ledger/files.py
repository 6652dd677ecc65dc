"""Short sessions on the ledger file, so that many processes share it all day.

DuckDB lets one process open a file for writing and then refuses every other process, readers
included, for as long as it stays open. So no goodput process keeps the file while another
wants it: each reads or writes in a session of one transaction. Sessions of one process share
one DuckDB instance (threads get their own cursor). Processes take turns through two sidecar
files beside the ledger:

- `ledger.duckdb.lock`: held shared by a process reading, exclusive by one writing (the kernel
  drops it when a process dies, `kill -9` included);
- `ledger.duckdb.wait`: held shared by every process waiting for its turn. A process that has
  the file keeps its instance open a moment after its last session (the next session then
  costs nothing: opening and closing the file is most of a short session's cost), and lets go
  at once when someone waits, or after LINGER_S.

Waiting is a poll of the lock (a system call, not a failed DuckDB open, which costs ~20 ms of
CPU), up to a deadline, then a one-line LedgerBusy. A process whose sessions keep it busy past
HOLD_S lets go as soon as someone waits, so a busy watch cannot starve a person's command;
a command whose steps are several sessions (`approve`) keeps its turn across them
(`kept`, at most KEEP_MAX_S), so that it takes the file once, not once a step.
"""

from __future__ import annotations

import atexit
import ctypes
import fcntl
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from goodput_agent.core.errors import BadInput

WAIT_S = 30.0  # how long a session waits for the other processes' turns
HOLD_S = 0.1  # busy this long, a process lets go when someone waits
LINGER_S = 1.0  # idle this long, a process lets go even when nobody waits
IDLE_GAP_S = 0.02  # idle this long while someone waits: it is between commands, not steps
# open this long, an instance is let go at its next idle moment whoever waits: DuckDB's memory
# grows with what a long-lived instance has touched (the watch's RSS climbed ~20 KB an
# investigation with one instance; a new one every ten seconds keeps it flat)
MAX_OPEN_S = 10.0
# a command's steps keep their turn this long at most (`kept`): handing the file to a waiting
# watch between `approve`'s steps and taking it back cost both a close and an open each time
KEEP_MAX_S = 1.0
_REAP_S = 0.003  # how often a lingering process looks for someone waiting
_POLL_S = (0.0005, 0.002)  # between tries of the lock (each is a system call)
_YIELD_S = 0.01  # after letting go to someone waiting, stay back this long: their turn

LedgerError = duckdb.Error  # what a query on a ledger file that is not one raises
# an instance per turn: DuckDB's default starts a thread per core at every open (64 on a big
# node), for queries that are small; two keep fleet's aggregations parallel
_CONFIG = {"threads": 2}


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
        self.opened_at = self.idle_since = 0.0
        self.draining = False  # held too long while someone waits: let go before more
        self.turns = _Turns(path)
        self.local = threading.local()  # this thread's open session (nested sessions join it)
        self.schema_ready = False
        self._reaper: threading.Thread | None = None
        self.forked_busy = False  # forked while the parent had a session open
        self.kept_until = 0.0  # a command keeps its turn between its sessions until then

    def ensure_schema(self, current: Callable[[duckdb.DuckDBPyConnection], bool],
                      ensure: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
        """The tables, created or brought up to date once per process (a read first: most
        processes find them current and never take the file for writing)."""
        if self.schema_ready:
            return
        if self.path.is_file() and self.path.stat().st_size:
            try:
                with self.session(write=False) as con:
                    self.schema_ready = current(con)
            except duckdb.CatalogException:  # a file from before the meta table
                self.schema_ready = False
        if not self.schema_ready:
            with self.session(write=True) as con:
                ensure(con)
            self.schema_ready = True

    # --- sessions -----------------------------------------------------------------------

    @contextmanager
    def session(self, write: bool,
                wait_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """`wait_s`: how long to wait for the turn (WAIT_S, read when called)."""
        outer = getattr(self.local, "cursor", None)
        if outer is not None:  # nested: the thread's open session (a write needs a write one)
            if write and not self.local.write:
                raise RuntimeError("a write session inside a read session of the same thread")
            yield outer
            return
        cur = self._enter(write, time.monotonic() + (WAIT_S if wait_s is None else wait_s))
        self.local.cursor, self.local.write = cur, write
        ok = False
        try:  # a reader too: one state of the file while a writer of this process commits
            cur.execute("BEGIN TRANSACTION")
            yield cur
            ok = True
        finally:
            self.local.cursor = None
            self._finish(cur, write, ok)

    @contextmanager
    def kept(self, write: bool, wait_s: float | None = None) -> Iterator[None]:
        """One turn for a command's steps: the instance (writable when `write`) is taken now
        and stays open between the sessions inside, up to KEEP_MAX_S, whoever waits; then
        the usual rules (let go when someone waits) apply again."""
        with self.cond:
            self._instance(write, time.monotonic() + (WAIT_S if wait_s is None else wait_s))
            self.kept_until = time.monotonic() + KEEP_MAX_S
        try:
            yield
        finally:
            with self.cond:
                self.kept_until = 0.0
                if self.users == 0 and self.db is not None:
                    self._after_last_session()
                self.cond.notify_all()

    def _keeping(self) -> bool:
        return time.monotonic() < self.kept_until

    def _instance(self, write: bool, deadline: float) -> None:
        """Wait until this thread may join, and open the file if it must (under cond)."""
        while not self._may_join(write):
            self._wait(deadline)
        if self.db is None or (write and not self.writable):
            self._open(write, deadline)

    def _enter(self, write: bool, deadline: float) -> duckdb.DuckDBPyConnection:
        with self.cond:
            self._instance(write, deadline)
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
            cur.execute("COMMIT" if ok else "ROLLBACK")
        finally:
            cur.close()
            with self.cond:
                self.users -= 1
                if write:
                    self.writing = False
                if self.users == 0:
                    self._after_last_session()
                elif self.db is not None and self._held_too_long():
                    self.draining = True
                self.cond.notify_all()

    def _held_too_long(self) -> bool:
        if self._keeping():
            return False
        held = time.monotonic() - self.opened_at
        return held > MAX_OPEN_S or (held > HOLD_S and self.turns.someone_waits())

    def _after_last_session(self) -> None:
        if self.draining or self._held_too_long():
            self._close()
        else:
            self.idle_since = time.monotonic()
            self._start_reaper()

    # --- letting go -----------------------------------------------------------------------

    def _start_reaper(self) -> None:
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(target=self._reap, name="ledger-linger",
                                            daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        """While the instance lingers idle: let go once someone waits (after a short gap, so a
    command's steps keep their turn), or after LINGER_S."""
        while True:
            time.sleep(_REAP_S)
            with self.cond:
                if self.db is None:
                    return
                if self.users or self._keeping():
                    continue
                now = time.monotonic()
                idle, held = now - self.idle_since, now - self.opened_at
                if idle > LINGER_S or ((idle > IDLE_GAP_S or held > HOLD_S)
                                       and self.turns.someone_waits()):
                    self._close()
                    self.cond.notify_all()
                    return

    def _open(self, write: bool, deadline: float) -> None:
        if self.forked_busy:
            raise RuntimeError(f"{self.path}: this process was forked while its parent used "
                              "the ledger; open it from the parent or a fresh process")
        if self.db is not None:  # a read-only instance, no session on it: let it go
            self._close()
        self.turns.take(write, deadline)
        try:
            self.db = self._connect(write, deadline)
        except BaseException:
            self.turns.give_back()
            raise
        self.writable, self.opened_at = write, time.monotonic()

    def _connect(self, write: bool, deadline: float) -> duckdb.DuckDBPyConnection:
        """DuckDB's own lock is free unless a process that does not take turns holds it (an
        older goodput, the duckdb shell): then try again until the deadline."""
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=not write, config=_CONFIG)
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise
                if time.monotonic() > deadline:
                    raise LedgerBusy(f"{self.path}: cannot open the ledger: "
                                     f"{str(exc).splitlines()[0]}") from None
                time.sleep(random.uniform(0.02, 0.1))

    def _close(self) -> None:
        db, self.db = self.db, None
        try:
            if db is not None:
                db.close()  # a write instance checkpoints here
        finally:
            self.turns.give_back()
            self.writable = self.draining = False

    def close(self) -> None:
        with self.cond:
            if self.users == 0 and self.db is not None:
                self._close()

    def before_fork(self) -> None:
        """An instance no session uses is let go before a fork (a process pool starting): the
        child could neither use nor destroy it."""
        with self.cond:
            if self.users == 0 and self.db is not None:
                self._close()

    def fork_reset(self) -> None:
        """In a child process after fork: an instance the parent was using is unusable here,
        and must never be destroyed either (its destructor joins worker threads that exist only
        in the parent); DuckDB's cache of instances would hand it out again, so this child
        does not open the file at all."""
        if self.db is not None:
            _never_freed(self.db, self.local)
            self.forked_busy = True
        self.db, self.users, self.writing, self._reaper = None, 0, False, None
        self.cond = threading.Condition()
        self.local = threading.local()
        self.turns = _Turns(self.path)


class _Turns:
    """The two sidecar locks: whose turn it is, and whether anyone is waiting for one."""

    def __init__(self, path: Path):
        self.path = path
        self._lock: int | None = None
        self._wait: int | None = None
        self.yield_until = 0.0

    def _fd(self, suffix: str) -> int:
        return os.open(f"{self.path}{suffix}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def take(self, write: bool, deadline: float) -> None:
        if self._lock is None:
            self._lock, self._wait = self._fd(".lock"), self._fd(".wait")
        back = self.yield_until - time.monotonic()
        if back > 0:  # we just let go to someone waiting: they go first
            time.sleep(back)
        mode = (fcntl.LOCK_EX if write else fcntl.LOCK_SH) | fcntl.LOCK_NB
        if not self.someone_waits():  # else: join those waiting, not jump ahead of them
            try:
                fcntl.flock(self._lock, mode)
                return
            except BlockingIOError:
                pass
        fcntl.flock(self._wait, fcntl.LOCK_SH)  # say so: a holder lets go
        try:
            while True:
                try:
                    fcntl.flock(self._lock, mode)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LedgerBusy(f"{self.path}: the ledger is in use by other goodput "
                                         f"processes and stayed so for {WAIT_S:g} s; try "
                                         "again") from None
                    time.sleep(random.uniform(*_POLL_S))
        finally:
            fcntl.flock(self._wait, fcntl.LOCK_UN)

    def someone_waits(self) -> bool:
        if self._wait is None:
            return False
        try:
            fcntl.flock(self._wait, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self._wait, fcntl.LOCK_UN)
        return False

    def give_back(self) -> None:
        if self._lock is not None:
            waiting = self.someone_waits()
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            if waiting:
                self.yield_until = time.monotonic() + _YIELD_S


def _never_freed(*objects: object) -> None:
    for obj in objects:
        if obj is not None:  # one reference no one holds: not even shutdown frees it
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _before_fork() -> None:
    for f in list(LedgerFile._files.values()):
        f.before_fork()


def _after_fork() -> None:
    for f in LedgerFile._files.values():
        f.fork_reset()


def _at_exit() -> None:
    for f in list(LedgerFile._files.values()):
        f.close()


os.register_at_fork(before=_before_fork, after_in_child=_after_fork)
atexit.register(_at_exit)
