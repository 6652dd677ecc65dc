"""The measures every question takes of a training log's own series: a rise and from which
step, and one rank singled out by its median."""

from __future__ import annotations

from goodput_agent.analysis.log_series import LogPoint, measure_rise, series_of, single_out


def _points(times: list[float], rank: int | None = None) -> list[LogPoint]:
    return [LogPoint(step, ms, rank, "train.log", step) for step, ms in enumerate(times, 1)]


def test_a_rise_is_measured_from_the_step_it_starts() -> None:
    rise = measure_rise(_points([900.0] * 20 + [2100.0] * 20))
    assert rise is not None and (rise.first_ms, rise.last_ms) == (900.0, 2100.0)
    assert rise.start.step == 21 and round(rise.ratio, 2) == 2.33
    assert measure_rise(_points([900.0] * 7)) is None  # too few points to measure a change


def test_one_rank_is_singled_out_only_among_four_or_more() -> None:
    ranks = [p for r in range(4) for p in _points([100.0 if r else 150.0] * 8, r)]
    assert single_out(ranks) == (0, 150.0, 100.0)
    assert single_out([p for p in ranks if p.rank != 3]) is None  # three ranks: no majority


def test_the_parsers_facts_become_points_per_file() -> None:
    s = series_of({"a.log": {"iterations": [[1, 900.0, 0, 4], [2, 910.0, 0]]}}, {0: "gpu-1"})
    assert [(p.step, p.ms, p.rank, p.path, p.line) for p in s.points] == \
        [(1, 900.0, 0, "a.log", 4), (2, 910.0, 0, "a.log", 0)]
    assert s.rank_hosts == {0: "gpu-1"}
