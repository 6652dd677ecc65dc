"""Shared numbers of the verifications: medians with a bootstrap interval, and the grading of
how much of an excess went away."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

from goodput_agent.verify.model import Verdict

RECOVERED, PARTLY = 0.8, 0.2  # share of the excess over healthy that went away


def bootstrap_diff(before: Sequence[float], after: Sequence[float], n: int = 2000,
                   seed: int = 0) -> tuple[float, float, float]:
    """median(before) - median(after), and its 95% bootstrap interval (resampling both)."""
    rng = random.Random(seed)
    point = statistics.median(before) - statistics.median(after)
    draws = sorted(statistics.median(rng.choices(before, k=len(before)))
                   - statistics.median(rng.choices(after, k=len(after))) for _ in range(n))
    return point, draws[int(0.025 * n)], draws[int(0.975 * n) - 1]


def grade(before: float, after: float, healthy: float | None, significant: bool
          ) -> tuple[Verdict, float | None]:
    """How much of the excess over healthy went away; without a healthy reference, a
    significant improvement is at most `partly` (full recovery cannot be judged)."""
    if healthy is not None and before - healthy > 0.05 * healthy:
        share = (before - after) / (before - healthy)
        if significant and share >= RECOVERED:
            return "recovered", share
        if significant and share >= PARTLY:
            return "partly", share
        return "not_recovered", share
    return ("partly" if significant and after < before else "not_recovered"), None
