"""The one seam where per-file work (parse a log to events, digest a rank's trace) fans out.

`map_files(fn, jobs)` runs `fn(*job)` for every job and returns the results in job order. The
local runner is what the scan always did: worker processes on this machine, biggest job first.
`goodput_agent.core.ray_exec.RayRunner` runs the same functions as Ray tasks on a cluster. The
functions are module-level (importable where they run), take paths and small models, and
return compact results: what crosses the seam is never a file's bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol

OnDone = Callable[[int], None]  # told the index of each job as it finishes


class Runner(Protocol):
    name: str

    def map_files(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]], *,
                  where: Sequence[str | None] | None = None, sizes: Sequence[int] | None = None,
                  on_done: OnDone | None = None, here_only: bool = False,
                  label: str = "files") -> list[Any]:
        """`fn(*job)` of each job, in job order. `where`: the host that holds each job's file
        when it is node-local (None: any); `sizes`: bytes, to start the biggest first;
        `here_only`: the files are on this machine only (an unpacked archive); `label`: what
        a job is, for progress ("files", "ranks")."""
        ...


class LocalRunner:
    """This machine's cores (one process each); in this process when there is one job or core."""

    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = workers or os.cpu_count() or 1

    def map_files(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]], *,
                  where: Sequence[str | None] | None = None, sizes: Sequence[int] | None = None,
                  on_done: OnDone | None = None, here_only: bool = False,
                  label: str = "files") -> list[Any]:
        order = biggest_first(len(jobs), sizes)
        out: list[Any] = [None] * len(jobs)
        if len(jobs) < 2 or self.workers < 2:
            for i in order:
                out[i] = fn(*jobs[i])
                if on_done:
                    on_done(i)
            return out
        with ProcessPoolExecutor(max_workers=min(self.workers, len(jobs))) as pool:
            results = pool.map(fn, *zip(*(jobs[i] for i in order), strict=True), chunksize=4)
            for i, result in zip(order, results, strict=True):
                out[i] = result
                if on_done:
                    on_done(i)
        return out


def biggest_first(n: int, sizes: Sequence[int] | None) -> list[int]:
    """Job indices, biggest first: the long ones start early, the short ones fill in."""
    return sorted(range(n), key=lambda i: -sizes[i]) if sizes else list(range(n))
