"""An investigation's rows while it runs: kept in memory, with ids from a block the ledger
reserved for it, and inserted into the file in one transaction at its end. Readers never see
half an investigation, and an investigation holds the file only for its first and last
moments. Its own rows are read back from here (a planner cites what it recorded)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from goodput_agent.ledger.schema import STAGED, columns

IdBlock = Callable[[int], tuple[int, int]]  # how many -> (first, last) reserved in the file
FIRST_BLOCK = 64


class Staging:
    def __init__(self, inv_id: str, reserve: IdBlock):
        self.inv_id = inv_id
        self._reserve = reserve
        self._next, self._last = 0, -1
        self._size = FIRST_BLOCK
        self.tables: dict[str, list[tuple[Any, ...]]] = {t: [] for t in STAGED}

    def next_id(self) -> int:
        if self._next > self._last:
            self._next, self._last = self._reserve(self._size)
            self._size = min(self._size * 4, 4096)  # a big investigation asks less often
        self._next += 1
        return self._next - 1

    def add(self, table: str, row: tuple[Any, ...]) -> None:
        self.tables[table].append(row)

    def rows(self, table: str, where: Callable[[dict[str, Any]], bool] | None = None
             ) -> list[dict[str, Any]]:
        cols = columns(table)
        out = [dict(zip(cols, r, strict=True)) for r in self.tables[table]]
        return [r for r in out if where is None or where(r)]

    def ids(self, table: str) -> set[int]:
        return {r[0] for r in self.tables[table]}

    def clear(self) -> None:
        """Inserted: what comes next is new (the ids go on from the same block)."""
        self.tables = {t: [] for t in STAGED}

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.tables.values())
