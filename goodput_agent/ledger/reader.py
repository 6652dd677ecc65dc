"""Reading the ledger for one request (a page, `watch status`): a read-only handle inside one
read session, so that a page's queries see one state of the file and take one turn at it,
however many other processes use it (files.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from goodput_agent.ledger.core import Ledger
from goodput_agent.ledger.files import LedgerBusy


@dataclass(slots=True)
class ReadInfo:
    open_ms: float = 0.0  # waiting for the file and opening it


@contextmanager
def read_ledger(path: Path) -> Iterator[tuple[Ledger, ReadInfo]]:
    """A read-only Ledger whose queries share one read session; BadInput when there is no
    ledger, LedgerBusy when other processes kept it past the wait."""
    ledger = Ledger(path, read_only=True)
    started = time.perf_counter()
    with ledger.reading():
        yield ledger, ReadInfo(open_ms=(time.perf_counter() - started) * 1000)


__all__ = ["LedgerBusy", "ReadInfo", "read_ledger"]
