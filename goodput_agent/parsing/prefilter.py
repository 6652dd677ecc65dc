"""Which lines of a buffer hold one of a parser's literal markers: one pass over the raw bytes.

The log parsers decode and match only these candidate lines, so on a multi-gigabyte bundle the
scan's pace is this pass's. Hyperscan matches every marker at once at close to memory speed
(measured on benchmarks/scan_scale.py's bundle: ~2.7 GB/s with the file reads, against ~0.1 GB/s
for one `bytes.find` pass per marker, 0.55 GB/s for an RE2 alternation and 0.27 GB/s for
Aho-Corasick); where it cannot be imported (a platform without its wheel) the same lines are
found with one `bytes.find` pass per marker.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cache

import numpy as np

try:
    import hyperscan
except ImportError:  # pragma: no cover - exercised by forcing the fallback in the tests
    hyperscan = None


NUMPY_COUNT_BYTES = 64 * 1024  # below this, bytes.count is as quick as building the array


def count_newlines(buf: bytes, lo: int = 0, hi: int | None = None) -> int:
    """How many b"\n" are in buf[lo:hi]: numpy compares 16+ bytes a step (~8 GB/s measured),
    where bytes.count goes one byte at a time (~1.7 GB/s); a line number costs this count."""
    hi = len(buf) if hi is None else hi
    if hi - lo < NUMPY_COUNT_BYTES:
        return buf.count(b"\n", lo, hi)
    return int(np.count_nonzero(np.frombuffer(buf, np.uint8, hi - lo, lo) == 10))


class Prefilter:
    """The start offsets of the lines of a buffer that contain any of `markers` (literal,
    case-sensitive bytes without a newline), in order, each line once."""

    def __init__(self, markers: Sequence[bytes], *, engine: str = "auto") -> None:
        if not markers or any(not m or b"\n" in m for m in markers):
            raise ValueError("markers must be non-empty byte strings without a newline")
        self.markers = tuple(markers)
        use_hs = engine == "hyperscan" or (engine == "auto" and hyperscan is not None)
        self.engine = "hyperscan" if use_hs else "find"
        self._db = _compile(self.markers) if use_hs else None
        self._local = threading.local()  # a Hyperscan scratch space is one thread's at a time

    def line_starts(self, buf: bytes) -> list[int]:
        if self._db is None:
            return _find_each(buf, self.markers)
        return [start for start, _ in self._scan(buf, None)]

    def tagged_line_starts(self, buf: bytes, groups: Sequence[int]) -> list[tuple[int, int]]:
        """(line start, the OR of the `groups` bits of the markers it holds), in order: one
        pass for several readers of the same lines (groups[i] is marker i's bit)."""
        if self._db is None:
            return _find_each_tagged(buf, self.markers, groups)
        return self._scan(buf, groups)

    def _scan(self, raw: bytes, groups: Sequence[int] | None) -> list[tuple[int, int]]:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._db)
        starts: list[list[int]] = []
        line_end = -1  # end of the last line reported: later matches in it add only their bit

        def on_match(marker: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            nonlocal line_end
            bit = groups[marker] if groups is not None else 0
            if end <= line_end:
                starts[-1][1] |= bit
                return
            starts.append([raw.rfind(b"\n", 0, end - 1) + 1, bit])
            nl = raw.find(b"\n", end - 1)
            line_end = nl if nl != -1 else len(raw)

        self._db.scan(raw, match_event_handler=on_match, scratch=scratch)
        # Hyperscan reports literal matches by end offset; should one ever come out of order,
        # the result is still each line once, in order
        if any(a[0] >= b[0] for a, b in zip(starts, starts[1:], strict=False)):
            merged: dict[int, int] = {}
            for start, bit in starts:
                merged[start] = merged.get(start, 0) | bit
            return sorted(merged.items())
        return [(start, bit) for start, bit in starts]


def _compile(markers: tuple[bytes, ...]):  # noqa: ANN202 - hyperscan.Database
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=list(markers), ids=list(range(len(markers))),
               elements=len(markers), flags=0, literal=True)
    return db


def _find_each(raw: bytes, markers: tuple[bytes, ...]) -> list[int]:
    return [start for start, _ in _find_each_tagged(raw, markers, [0] * len(markers))]


def _find_each_tagged(raw: bytes, markers: tuple[bytes, ...], groups: Sequence[int]
                      ) -> list[tuple[int, int]]:
    starts: dict[int, int] = {}
    for marker, bit in zip(markers, groups, strict=True):
        pos = raw.find(marker)
        while pos != -1:
            start = raw.rfind(b"\n", 0, pos) + 1
            starts[start] = starts.get(start, 0) | bit
            end = raw.find(b"\n", pos)
            pos = raw.find(marker, end) if end != -1 else -1
    return sorted(starts.items())


@cache
def prefilter_for(markers: tuple[bytes, ...]) -> Prefilter:
    """One compiled prefilter per marker set, for the life of the process (and its forks)."""
    return Prefilter(markers)
