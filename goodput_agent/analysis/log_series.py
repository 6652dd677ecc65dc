"""A training log's own series, measured the same way for every question that reads it: the
iteration times (and parts of the step, and Megatron's timers) the job-log parser keeps as
facts; a rise (the last quarter's median against the first's, from which step) and one rank
singled out by its median (a straggler). analysis/slowdown/from_logs.py answers a slowdown from
them; analysis/failure/progress_series.py says them beside an `unknown` failure verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

SLOWER = 1.5
STEADY = 1.1  # a last quarter within this of the first: no change to explain
STRAGGLER = 1.3
MIN_POINTS = 8


@dataclass
class LogPoint:
    step: int
    ms: float
    rank: int | None
    path: str
    line: int


@dataclass
class TimerBlock:
    path: str
    line: int
    times: dict[str, float] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # each timer's own line
    mins: dict[str, float] = field(default_factory=dict)  # min across ranks (minmax option)


@dataclass
class LogSeries:
    points: list[LogPoint] = field(default_factory=list)
    timers: list[TimerBlock] = field(default_factory=list)
    parts: dict[str, list[LogPoint]] = field(default_factory=dict)  # fwd_bwd -> its points
    rank_hosts: dict[int, str] = field(default_factory=dict)
    unread_files: int = 0
    # every line of the bundle read, and none reads as a fault (analysis/read_whole.py)
    quiet: bool = False


def series_of(facts: dict[str, dict], rank_hosts: dict[int, str],
              unread_files: int = 0) -> LogSeries:
    """The series the job-log parser's facts hold, per file (`iterations`: step, ms, rank,
    line; `iteration_parts`: step, name, ms, rank, line; `timers`: Megatron's blocks)."""
    s = LogSeries(rank_hosts=dict(rank_hosts), unread_files=unread_files)
    for path, f in facts.items():
        for step, ms, rank, *line in f.get("iterations") or []:
            s.points.append(LogPoint(int(step), float(ms), rank, path,
                                     int(line[0]) if line else 0))
        for step, name, ms, rank, line in f.get("iteration_parts") or []:
            s.parts.setdefault(name, []).append(LogPoint(int(step), float(ms), rank, path,
                                                         int(line)))
        s.timers += [TimerBlock(path, b["line"], b["times"], b.get("lines", {}),
                                b.get("mins", {}))
                     for b in f.get("timers") or []]
    return s


def quarters(values: list[float]) -> tuple[float, float]:
    q = max(2, len(values) // 4)
    return median(values[:q]), median(values[-q:])


def main_series(points: list[LogPoint]) -> list[LogPoint]:
    """The longest one rank's series (every rank prints the same step times in a synchronous
    job; a log without rank prefixes is one series)."""
    by_rank: dict[int | None, list[LogPoint]] = {}
    for p in points:
        by_rank.setdefault(p.rank, []).append(p)
    return sorted(max(by_rank.values(), key=len, default=[]), key=lambda p: p.step)


@dataclass
class Rise:
    first_ms: float
    last_ms: float
    start: LogPoint  # the first point of the slow regime
    base: LogPoint  # a point of the good regime

    @property
    def ratio(self) -> float:
        return self.last_ms / self.first_ms if self.first_ms > 0 else 1.0

    def text(self) -> str:
        return (f"the training log's own iteration time rose from {self.first_ms:.0f} to "
                f"{self.last_ms:.0f} ms ({self.ratio:.2f}x) from about step {self.start.step} "
                f"({self.start.path} line {self.start.line})")


def measure_rise(points: list[LogPoint]) -> Rise | None:
    series = main_series(points)
    if len(series) < MIN_POINTS:
        return None
    first, last = quarters([p.ms for p in series])
    middle = (first + last) / 2
    k = max(3, len(series) // 16)
    start = next((series[i] for i in range(len(series) - k + 1)
                  if series[i].ms >= middle
                  and median(p.ms for p in series[i:i + k]) >= middle), series[-1])
    return Rise(first, last, start, series[0])


def single_out(points: list[LogPoint]) -> tuple[int, float, float] | None:
    """(rank, its median, the other ranks' median) when one rank's median is `STRAGGLER` x
    the others' (at least four ranks with `MIN_POINTS` / 2 points each)."""
    by_rank: dict[int, list[float]] = {}
    for p in points:
        if p.rank is not None:
            by_rank.setdefault(p.rank, []).append(p.ms)
    ranked = {r: median(v) for r, v in by_rank.items() if len(v) >= MIN_POINTS // 2}
    if len(ranked) < 4:
        return None
    slow_rank, slow = max(ranked.items(), key=lambda kv: kv[1])
    others = median(v for r, v in ranked.items() if r != slow_rank)
    if others <= 0 or slow < STRAGGLER * others:
        return None
    return slow_rank, slow, others
