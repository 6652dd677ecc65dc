"""Interval arithmetic on one clock: the mechanics every timeline analysis shares.

An interval list is a list of (start, end) pairs; `union` returns it sorted and disjoint, and
every other function expects disjoint sorted input and returns the same.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

Intervals = list[tuple[float, float]]


def union(spans: Iterable[tuple[float, float]]) -> Intervals:
    out: Intervals = []
    for s, e in sorted(spans):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def total(spans: Intervals) -> float:
    return sum(e - s for s, e in spans)


def clip(spans: Intervals, lo: float, hi: float) -> Intervals:
    return [(max(s, lo), min(e, hi)) for s, e in spans if e > lo and s < hi]


def intersect(a: Intervals, b: Intervals) -> Intervals:
    out: Intervals = []
    i = j = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """The parts of `a` not covered by `b`."""
    out: Intervals = []
    j = 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            if cur >= e:
                break
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def gaps(spans: Intervals, lo: float, hi: float) -> Intervals:
    """The parts of [lo, hi) that `spans` leaves uncovered."""
    return subtract([(lo, hi)], clip(spans, lo, hi)) if hi > lo else []


# ---------------------------------------------------------------------------------------------
# the same arithmetic on columns (numpy arrays of starts and ends), for timelines of 10^5+ spans


def union_columns(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`union` of the spans (starts[i], ends[i]): sorted disjoint starts and ends."""
    s, e, _ = _merged(starts, ends, np.zeros(len(starts), np.int64))
    return s, e


def union_totals(starts: np.ndarray, ends: np.ndarray, groups: np.ndarray,
                 n_groups: int) -> np.ndarray:
    """total(union(spans of group g)) for every g in range(n_groups), in one pass."""
    s, e, g = _merged(starts, ends, groups)
    return np.bincount(g, weights=e - s, minlength=n_groups)


def _merged(starts: np.ndarray, ends: np.ndarray, groups: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group, the spans merged as `union` merges them (empty spans dropped; a span that
    starts at or before the reach of the spans before it joins them)."""
    keep = ends > starts
    s, e, g = starts[keep], ends[keep], groups[keep]
    if not len(s):
        return s, e, g
    order = np.lexsort((e, s, g))
    s, e, g = s[order], e[order], g[order]
    # the running reach must restart in every group: on value ranks (exact, integers), each
    # group lifted above the one before it, so one running maximum serves all groups
    values = np.unique(np.concatenate((s, e)))
    lift = g.astype(np.int64) * (len(values) + 1)
    s_rank = np.searchsorted(values, s) + lift
    reach = np.maximum.accumulate(np.searchsorted(values, e) + lift)
    new = np.empty(len(s), bool)
    new[0] = True
    new[1:] = s_rank[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], values[reach[last] - lift[last]], g[first]
