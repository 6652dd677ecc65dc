"""What a trace says about itself: the host and process its file name or metadata give, when
it started on the wall clock, and the distributed layout (rank, world size). Moved from
load.py."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from goodput_agent.parsing.kineto.model import TraceMeta

# ---------------------------------------------------------------------------------------------
# metadata

_HANDLER_NAME = re.compile(r"^(?P<host>.+)_(?P<pid>\d+)\.(?P<ms>\d{10,})"
                           r"\.pt\.trace\.json(?:\.gz)?$")


def host_from_filename(name: str) -> str | None:
    """The host in a torch.profiler.tensorboard_trace_handler file name,
    `<hostname>_<pid>.<time ms>.pt.trace.json[.gz]`; None for other names (a user-given
    worker name has no `_<pid>` and is not taken for a host)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    m = _HANDLER_NAME.match(base)
    if m is None or m["host"].isdigit():
        return None
    return m["host"]


_EPOCH_US = 1e15  # event times at or above this are microseconds since the epoch (2001 on)
_EPOCH_NS = 1e18  # ...and a baseTimeNanoseconds at or above this, nanoseconds since it


def started_at(top: dict[str, Any], first_ts: float | None, name: str
               ) -> tuple[float | None, str | None]:
    """When the trace began (epoch seconds) and from what: Kineto 2.4+ writes event times
    relative to `baseTimeNanoseconds`, older Kineto writes epoch microseconds; else the
    millisecond stamp tensorboard_trace_handler puts in the file name."""
    base = top.get("baseTimeNanoseconds")
    if first_ts is not None and first_ts >= _EPOCH_US:
        return first_ts / 1e6, "event time"
    if first_ts is not None and isinstance(base, int | float) and base >= _EPOCH_NS:
        return base / 1e9 + first_ts / 1e6, "baseTimeNanoseconds"
    m = _HANDLER_NAME.match(name.replace("\\", "/").rsplit("/", 1)[-1])
    if m is not None and len(m["ms"]) == 13:
        return int(m["ms"]) / 1e3, "file name"
    return None, None


def _text(v: Any, limit: int = 255) -> str | None:
    return v.strip()[:limit] if isinstance(v, str) and v.strip() else None


def _strict_int(v: Any) -> int | None:
    if type(v) is int:
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return None


def trace_meta(top: dict[str, Any], path: str, node_hint: str | None = None) -> TraceMeta:
    """What the top-level keys and the file name say about the trace's rank, host and devices."""
    dist = top.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    rank = _strict_int(dist.get("rank"))
    if rank is None:
        # imported here: the log parsers cost a trace-only process ~0.1 s to import
        from goodput_agent.parsing.job_log import rank_from_filename

        rank = rank_from_filename(PurePosixPath(path.replace("\\", "/")).name)
    devices_raw = top.get("deviceProperties") or top.get("computeProperties") or []
    devices = [d["name"] for d in devices_raw if isinstance(d, dict) and _text(d.get("name"))] \
        if isinstance(devices_raw, list) else []
    host, source = _text(top.get("host_name")) or _text(top.get("hostname")), "trace metadata"
    if host is None:
        host, source = host_from_filename(path), "file name"
    if host is None:
        host, source = node_hint, "folder"
    return TraceMeta(path=path, rank=rank, world_size=_strict_int(dist.get("world_size")),
                     host=host, host_source=source if host else None,
                     devices=devices, trace_name=_text(top.get("traceName"), 1024),
                     backend=_text(dist.get("backend")))
