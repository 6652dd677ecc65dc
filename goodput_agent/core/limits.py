"""Limits on what one investigation reads, so that no input can take the machine: bytes and
files unpacked from an archive, files in a bundle, and the bytes of one profiler trace (which
takes about 2.7 times its size in memory). Each can be raised with an environment variable;
past one, the input is refused with one line that names it and the variable."""

from __future__ import annotations

import os
import re

from pydantic import BaseModel

from goodput_agent.core.errors import BadInput

GiB = 1024**3
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": GiB, "t": 1024**4}


class Limits(BaseModel):
    archive_bytes: int = 8 * GiB  # unpacked from one .tar.gz
    archive_ratio: int = 200  # unpacked bytes per compressed byte (a decompression bomb)
    bundle_files: int = 100_000  # files in one bundle (folder or archive)
    trace_bytes: int = 1 * GiB  # one profiler trace, decompressed

    @classmethod
    def from_env(cls) -> Limits:
        base = cls()
        return cls(
            archive_bytes=_env_size("GOODPUT_MAX_ARCHIVE_BYTES", base.archive_bytes),
            archive_ratio=int(_env_size("GOODPUT_MAX_ARCHIVE_RATIO", base.archive_ratio)),
            bundle_files=int(_env_size("GOODPUT_MAX_BUNDLE_FILES", base.bundle_files)),
            trace_bytes=_env_size("GOODPUT_MAX_TRACE_BYTES", base.trace_bytes))


def _env_size(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    m = _SIZE.match(raw)
    if not m:
        raise BadInput(f"${name}: {raw!r} is not a size (a number, or 500M, 8G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def limits() -> Limits:
    return Limits.from_env()
