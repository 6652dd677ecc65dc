"""A training log's own per-iteration times: Megatron's `iteration N/ M | ... elapsed time per
iteration (ms): X |`, tqdm's `N/M [elapsed<left, X s/it]` (or `it/s`), and `step N ... time:
X s|ms` lines (and the other times such a line states, per rank: `fwd_bwd 811 ms`). Read as
facts `iterations` and `iteration_parts`."""

from __future__ import annotations

import re
from pathlib import Path

from goodput_agent.parsing.lines import scan_lines

_MEGATRON = re.compile(r"iteration\s+(?P<step>\d+)/\s*\d+ \|.*?elapsed time per iteration "
                       r"\(ms\): (?P<ms>[\d.]+)")
_TQDM = re.compile(r"(?P<step>\d+)/\d+ \[[\d:]+<[\d:?]+,\s+(?P<rate>[\d.]+)(?P<unit>s/it|it/s)")
_STEP = re.compile(r"\bstep[ :=#]+(?P<step>\d+)\b.*?\b(?:step[_ ]time|iter[_ ]time|time)"
                   r"[ :=]+(?P<t>[\d.]+) ?(?P<unit>ms|s)\b", re.I)
MAX_POINTS = 20_000
# the literals a line must hold to be read for its iteration time (the job-log scan decodes
# only lines with a marker: scan.MARKERS includes these, so both read the same lines)
MARKERS = (b"per iteration", b"s/it", b"it/s", b"step_time", b"step time", b"iter_time",
           b"iter time", b"| time")


_PART = re.compile(r"(?<![\w.])(?P<name>[A-Za-z][\w/-]*)[ :=]+(?P<v>[\d.]+) ?(?P<unit>ms|s)\b")
_ITERATION_NAMES = re.compile(r"(?i)^(?:step[_ ]?time|iter(?:ation)?[_ ]?time|time)$")


def iteration_parts(text: str) -> list[tuple[str, float]]:
    """The other times a `step N ... time X` line states (`fwd_bwd 811 ms | allreduce_wait
    19 ms`), in ms: the parts of the step each rank prints."""
    if not _STEP.search(text):
        return []
    return [(m["name"], float(m["v"]) * (1 if m["unit"] == "ms" else 1000))
            for m in _PART.finditer(text) if not _ITERATION_NAMES.match(m["name"])]


def iteration_point(text: str) -> tuple[int, float] | None:
    """(step, milliseconds per iteration) the line states, else None."""
    if "per iteration" in text and (m := _MEGATRON.search(text)):
        return int(m["step"]), float(m["ms"])
    if ("s/it" in text or "it/s" in text) and (m := _TQDM.search(text)):
        rate = float(m["rate"])
        if rate <= 0:
            return None
        return int(m["step"]), 1000 * (rate if m["unit"] == "s/it" else 1 / rate)
    if "time" in text and (m := _STEP.search(text)):
        return int(m["step"]), float(m["t"]) * (1 if m["unit"] == "ms" else 1000)
    return None


def has_series(path: Path, enough: int = 8) -> bool:
    """Whether the file states at least `enough` iteration times (read until it has)."""
    seen = 0
    try:
        for _, text in scan_lines(path, MARKERS):
            if iteration_point(text) is not None:
                seen += 1
                if seen >= enough:
                    return True
    except (OSError, EOFError):
        return False
    return False
