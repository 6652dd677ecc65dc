"""A training log's own per-iteration times: Megatron's `iteration N/ M | ... elapsed time per
iteration (ms): X |`, tqdm's `N/M [elapsed<left, X s/it]` (or `it/s`), and `step N ... time:
X s|ms` lines. Read as facts (the analysis weighs them only when nothing failed)."""

from __future__ import annotations

import re

_MEGATRON = re.compile(r"iteration\s+(?P<step>\d+)/\s*\d+ \|.*?elapsed time per iteration "
                       r"\(ms\): (?P<ms>[\d.]+)")
_TQDM = re.compile(r"(?P<step>\d+)/\d+ \[[\d:]+<[\d:?]+,\s+(?P<rate>[\d.]+)(?P<unit>s/it|it/s)")
_STEP = re.compile(r"\bstep[ :=#]+(?P<step>\d+)\b.*?\b(?:step[_ ]time|iter[_ ]time|time)"
                   r"[ :=]+(?P<t>[\d.]+) ?(?P<unit>ms|s)\b", re.I)
MAX_POINTS = 20_000
MARKERS = (b"per iteration", b"s/it", b"it/s", b"time")


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
