"""Megatron-LM's timers, printed every log interval with `--timing-log-level` (megatron/core/
timers.py, `Timers.log`): a header `(min, max) time across ranks (ms):` (log option minmax,
the default) or `max time across ranks (ms):` (max), then one line per timer,
`    forward-backward ....: (1490.12, 1512.40)` or `    optimizer ....: 35.21`, the times
averaged over the interval's iterations. Read as facts `timers`: one block per print,
{"line": the header's line, "times": {name: the max across ranks}, "lines": {name: its line},
and with minmax "mins": {name: the min across ranks}} (the slowest rank's time is what every
rank waits for; a collective's min beside its max tells a transfer that slowed on every rank
from ranks waiting for a late one)."""

from __future__ import annotations

import re
from typing import Any

_HEADER = re.compile(r"(?:\(min, max\)|\bmax) time across ranks \(ms\):\s*$")
_TIMER = re.compile(r"^\s*(?P<name>[\w.-]+(?: [\w.-]+)*) \.*: "
                    r"(?:\((?P<min>[\d.]+), (?P<max>[\d.]+)\)|(?P<only>[\d.]+))\s*$")
MAX_BLOCKS = 5_000


class TimerBlocks:
    """Collects the timer blocks of one file, line by line (a block ends at the first line
    that is not a timer)."""

    def __init__(self) -> None:
        self.blocks: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None

    def feed(self, content: str, lineno: int) -> None:
        if self._open is not None:
            if m := _TIMER.match(content):
                self._open["times"][m["name"]] = float(m["max"] or m["only"])
                self._open["lines"][m["name"]] = lineno
                if m["min"] is not None:
                    self._open.setdefault("mins", {})[m["name"]] = float(m["min"])
                return
            self._open = None
        if "time across ranks" in content and _HEADER.search(content) \
                and len(self.blocks) < MAX_BLOCKS:
            self._open = {"line": lineno, "times": {}, "lines": {}}
            self.blocks.append(self._open)

    def facts(self) -> list[dict[str, Any]]:
        return [b for b in self.blocks if b["times"]]
