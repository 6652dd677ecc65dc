"""The column forms of the interval arithmetic give what the list forms give."""

import random

import numpy as np

from goodput_agent.analysis.intervals import total, union, union_columns, union_totals


def _random_spans(rng: random.Random, n: int) -> list[tuple[float, float]]:
    out = []
    for _ in range(n):
        s = rng.choice([rng.randint(0, 50), rng.random() * 50])
        out.append((s, s + rng.choice([-1, 0, rng.randint(0, 10), rng.random() * 10])))
    return out  # empty and reversed spans too: union drops them


def test_union_columns_is_union() -> None:
    rng = random.Random(1)
    for _ in range(300):
        spans = _random_spans(rng, rng.randint(0, 40))
        s, e = union_columns(np.array([a for a, _ in spans], float),
                             np.array([b for _, b in spans], float))
        assert list(zip(s.tolist(), e.tolist(), strict=True)) == union(spans)


def test_union_totals_restart_in_every_group() -> None:
    rng = random.Random(2)
    for _ in range(300):
        spans = _random_spans(rng, rng.randint(0, 40))
        groups = [rng.randrange(4) for _ in spans]
        got = union_totals(np.array([a for a, _ in spans], float),
                           np.array([b for _, b in spans], float),
                           np.array(groups, np.int64), 4)
        for g in range(4):
            want = total(union([sp for sp, k in zip(spans, groups, strict=True) if k == g]))
            assert abs(got[g] - want) <= 1e-9 * max(1.0, abs(want))


def test_overlapping_groups_do_not_merge_across_groups() -> None:
    # group 0 reaches past group 1's start: each group still counts only its own spans
    got = union_totals(np.array([0.0, 5.0]), np.array([100.0, 6.0]), np.array([0, 1]), 2)
    assert got.tolist() == [100.0, 1.0]
