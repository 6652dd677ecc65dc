"""The shared numbers of verification: a bootstrap interval that covers the true difference,
and the grading of how much of an excess went away."""

from __future__ import annotations

import random

from goodput_agent.verify.stats import bootstrap_diff, grade


def test_bootstrap_interval_covers_a_known_shift_and_excludes_zero() -> None:
    rng = random.Random(3)
    before = [10 + rng.gauss(0, 0.3) for _ in range(12)]
    after = [8 + rng.gauss(0, 0.3) for _ in range(12)]
    point, lo, hi = bootstrap_diff(before, after)
    assert 1.0 < lo <= point <= hi < 3.0  # around the planted 2.0, away from 0
    _, lo0, hi0 = bootstrap_diff(before, [b + rng.gauss(0, 0.01) for b in before])
    assert lo0 <= 0 <= hi0


def test_grade_by_share_of_the_excess() -> None:
    assert grade(10, 5.2, 5.0, True) == ("recovered", 0.96)
    assert grade(10, 7.5, 5.0, True)[0] == "partly"
    assert grade(10, 9.5, 5.0, True)[0] == "not_recovered"
    assert grade(10, 5.0, 5.0, False)[0] == "not_recovered"  # not significant
    assert grade(10, 6.0, None, True) == ("partly", None)  # no healthy reference

