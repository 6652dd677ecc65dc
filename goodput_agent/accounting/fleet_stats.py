"""The repeat-offender test: a one-sided exact Poisson test per node and a Benjamini–Hochberg
correction over every node tested. Plain `math` (scipy is not a dependency and a Poisson tail
needs nothing more than log-gamma)."""

from __future__ import annotations

import math

_RELATIVE_EPS = 1e-17  # a term this small beside the running sum no longer changes a double


def _log_pmf(j: int, mu: float) -> float:
    return -mu + j * math.log(mu) - math.lgamma(j + 1)


def poisson_sf(k: int, mu: float) -> float:
    """P(X >= k) for X ~ Poisson(mu): the chance of at least k events when mu are expected.

    Above the mean the upper tail is summed directly (term by term, each from the previous), so
    a p-value of 1e-30 keeps its digits; at or below the mean, 1 minus the lower sum is exact
    enough (the answer is not small there)."""
    if k < 0 or mu < 0 or math.isnan(mu):
        raise ValueError(f"poisson_sf needs k >= 0 and mu >= 0, got k={k}, mu={mu}")
    if k == 0:
        return 1.0
    if mu == 0.0:
        return 0.0
    if k <= mu:
        term = math.exp(-mu)
        lower = term
        for j in range(1, k):
            term *= mu / j
            lower += term
        return min(1.0, max(0.0, 1.0 - lower))
    term = math.exp(_log_pmf(k, mu))
    total, j = term, k
    while term > total * _RELATIVE_EPS:
        j += 1
        term *= mu / j
        total += term
    return min(1.0, total)


def benjamini_hochberg(pvalues: list[float]) -> list[float]:
    """BH-adjusted p-values (q-values) in the input's order: p_(i) * m / i, made monotone from
    the largest down and capped at 1. Controls the false-discovery rate over all m tests."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        adjusted[i] = min(1.0, running)
    return adjusted


def bonferroni(pvalues: list[float]) -> list[float]:
    """Family-wise correction: each p-value times the number of tests, capped at 1."""
    return [min(1.0, p * len(pvalues)) for p in pvalues]
