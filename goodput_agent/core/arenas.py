"""Long-running goodput processes (the watch, the pages) cap glibc's malloc arenas.

glibc gives threads their own arenas (up to 8 per core); a process whose threads come and go
(DuckDB's per-instance workers, the watch's pool) then spreads freed memory over many arenas,
and its RSS climbs with fragmentation though nothing leaks: the watch grew ~20-28 MiB over
1,000 investigations, and stayed within ~1-3 MiB with one or two arenas
(benchmarks/watch_memory.py). Equivalent to MALLOC_ARENA_MAX=1, set before threads start:
the watch's work is Python under the GIL and DuckDB, so one arena costs it nothing measurable."""

from __future__ import annotations

import ctypes
import ctypes.util

M_ARENA_MAX = -8  # glibc's mallopt parameter
ARENAS = 1


def cap_malloc_arenas(arenas: int = ARENAS) -> bool:
    """True when glibc took the cap (elsewhere: nothing to do, False)."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False
