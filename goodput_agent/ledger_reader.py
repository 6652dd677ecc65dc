"""Reading the ledger from the web server without ever writing it, while another process may.

DuckDB lets one process hold a database file for writing and refuses every other process's
connection, read-only ones included, while it does. So each request opens its own short-lived
read-only connection (nothing stays open between requests, so `goodput investigate` can take
the file at any time), and when the file is held by a writer, the request reads a snapshot:
the database file and its write-ahead log copied to a temporary folder and opened read-only
there (DuckDB replays the copied log in memory). A copy during which either file changed
(a write or a checkpoint) is taken again, as is one that fails to open, a few times before
the page says the ledger is busy.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import structlog

from goodput_agent.errors import BadInput
from goodput_agent.ledger import Ledger

log = structlog.get_logger(__name__)
SNAPSHOT_TRIES = 8


class LedgerBusy(Exception):
    """The ledger could not be read, even from a snapshot."""


class _Opened(Ledger):
    """A Ledger over a connection opened here (read-only); never runs the DDL."""

    def __init__(self, path: Path, con: duckdb.DuckDBPyConnection):  # noqa: D107
        self.path = path
        self.con = con


@dataclass(slots=True)
class ReadInfo:
    snapshot_at: datetime | None = None  # set when the page reads a copy
    open_ms: float = 0.0


def _locked(exc: duckdb.Error) -> bool:
    return "lock" in str(exc).lower()


def _stamp(*files: Path) -> tuple[tuple[int, int] | None, ...]:
    """Size and modification time of each file (None when absent)."""
    out = []
    for f in files:
        try:
            st = f.stat()
            out.append((st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def _snapshot(path: Path, folder: Path) -> duckdb.DuckDBPyConnection:
    copy = folder / "ledger.duckdb"
    last: Exception | None = None
    for attempt in range(SNAPSHOT_TRIES):
        for f in folder.iterdir():
            f.unlink()
        wal = path.with_name(path.name + ".wal")
        try:
            before = _stamp(path, wal)
            shutil.copyfile(path, copy)
            if wal.exists():
                shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
            if _stamp(path, wal) != before:  # written (or checkpointed) while copied
                raise OSError("the ledger changed while it was copied")
            return duckdb.connect(str(copy), read_only=True)
        except (duckdb.Error, OSError) as exc:  # a torn copy: take it again
            last = exc
            time.sleep(0.05 * (attempt + 1))
    raise LedgerBusy(f"{path}: in use by another process and no consistent snapshot could be "
                     f"read ({str(last).splitlines()[0] if last else 'unknown'})")


@contextmanager
def read_ledger(path: Path, snapshot: bool = False) -> Iterator[tuple[Ledger, ReadInfo]]:
    """A read-only Ledger for one request, and whether it is a snapshot (always one with
    `snapshot`: this process itself holds the file for writing)."""
    if not path.is_file():
        raise BadInput(f"{path}: no ledger here (run `goodput investigate` first, or --ledger)")
    info = ReadInfo()
    started = time.perf_counter()
    folder: Path | None = None
    try:
        if snapshot:
            raise duckdb.IOException("held for writing by this process (lock)")
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        if not _locked(exc):
            raise BadInput(f"{path}: cannot open the ledger: {str(exc).splitlines()[0]}") \
                from None
        folder = Path(tempfile.mkdtemp(prefix="goodput-web-"))
        try:
            con = _snapshot(path, folder)
        except LedgerBusy:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        info.snapshot_at = datetime.now(UTC)
    info.open_ms = (time.perf_counter() - started) * 1000
    log.debug("ledger_read", snapshot=info.snapshot_at is not None, open_ms=info.open_ms)
    try:
        yield _Opened(path, con), info
    finally:
        con.close()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
