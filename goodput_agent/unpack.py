"""Unpacking a bundle archive (.tar, .tar.gz) under limits: member by member, each member's
declared size counted before its bytes are written, so that a decompression bomb or an
archive of a million files is refused in one line within seconds, with bounded disk and
memory (the limits are goodput_agent.core.limits')."""

from __future__ import annotations

import tarfile
from pathlib import Path

from goodput_agent.core.errors import BadInput
from goodput_agent.core.limits import Limits, human

FLOOR_BYTES = 64 * 1024**2  # the ratio never limits an archive below this


def byte_budget(archive: Path, lim: Limits) -> int:
    return min(lim.archive_bytes, max(FLOOR_BYTES, lim.archive_ratio * archive.stat().st_size))


def unpack(archive: Path, dest: Path, lim: Limits) -> None:
    """Every member of `archive` under `dest` (tarfile's `data` filter: no absolute paths, no
    links out of `dest`, no devices); BadInput naming the archive past a limit."""
    budget, total, count = byte_budget(archive, lim), 0, 0
    with tarfile.open(archive) as tar:
        for member in tar:
            count += 1
            total += max(member.size, 0)
            if count > lim.bundle_files:
                raise BadInput(f"{archive}: more than {lim.bundle_files:,} files (the limit: "
                               "set GOODPUT_MAX_BUNDLE_FILES to raise it)")
            if total > budget:
                raise BadInput(
                    f"{archive}: unpacks to more than {human(budget)} ({human(total)} by the "
                    f"first {count:,} members, from {human(archive.stat().st_size)}): refused as "
                    "a possible decompression bomb (set GOODPUT_MAX_ARCHIVE_BYTES or "
                    "GOODPUT_MAX_ARCHIVE_RATIO to raise the limit)")
            tar.extract(member, dest, filter="data")
