import math
from fractions import Fraction

import pytest

from goodput_agent.accounting.fleet_stats import benjamini_hochberg, bonferroni, poisson_sf


def _exact_tail(k: int, mu: int) -> float:
    """1 - sum_{j<k} e^-mu mu^j / j!, the sum in exact fractions (an independent route)."""
    lower = sum(Fraction(mu ** j, math.factorial(j)) for j in range(k))
    return 1.0 - float(lower) * math.exp(-mu)


@pytest.mark.parametrize(("k", "mu", "expected"), [
    (1, 1.0, 1 - math.exp(-1)),                     # 0.632120...
    (3, 1.0, 1 - 2.5 * math.exp(-1)),               # 1 - e^-1 (1 + 1 + 1/2)
    (2, 0.5, 1 - 1.5 * math.exp(-0.5)),             # 0.090204...
    (0, 3.0, 1.0),
    (4, 0.0, 0.0),
])
def test_poisson_tail_matches_hand_computed_values(k: int, mu: float, expected: float) -> None:
    assert poisson_sf(k, mu) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(("k", "mu"), [(5, 2), (9, 3), (12, 10), (30, 10)])
def test_poisson_tail_matches_exact_fractions(k: int, mu: int) -> None:
    assert poisson_sf(k, mu) == pytest.approx(_exact_tail(k, mu), rel=1e-9)


def test_far_tail_keeps_its_digits() -> None:
    # P(X >= 50 | mu = 2) is dominated by its first term e^-2 2^50 / 50!
    first = math.exp(-2 + 50 * math.log(2) - math.lgamma(51))
    p = poisson_sf(50, 2.0)
    assert first < p < first * 1.05
    assert p > 0.0  # 1 - (lower sum) would have lost it entirely


def test_tail_decreases_with_the_count() -> None:
    tails = [poisson_sf(k, 4.2) for k in range(0, 25)]
    assert all(a > b for a, b in zip(tails, tails[1:], strict=False))


def test_negative_inputs_are_refused() -> None:
    with pytest.raises(ValueError):
        poisson_sf(-1, 1.0)


def test_benjamini_hochberg_known_values() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> p*m/rank 0.02, 0.02, 0.04, 0.04 (already monotone)
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx(
        [0.02, 0.04, 0.04, 0.02])


def test_benjamini_hochberg_is_monotone_and_capped() -> None:
    # sorted 0.001, 0.02, 0.021, 0.9: raw 0.004, 0.04, 0.028, 0.9 -> 0.004, 0.028, 0.028, 0.9
    q = benjamini_hochberg([0.9, 0.021, 0.001, 0.02])
    assert q == pytest.approx([0.9, 0.028, 0.004, 0.028])
    assert benjamini_hochberg([0.5, 0.9]) == pytest.approx([0.9, 0.9])


def test_bonferroni() -> None:
    assert bonferroni([0.001, 0.3]) == pytest.approx([0.002, 0.6])
