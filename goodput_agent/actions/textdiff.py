"""The one unified-diff helper: a file edit (config_change) and an API object before/after a
server-side dry run (Kubernetes tools) are both shown as text diffs."""

from __future__ import annotations

import difflib


def unified(before: str, after: str, fromfile: str, tofile: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                        after.splitlines(keepends=True),
                                        fromfile=fromfile, tofile=tofile))
