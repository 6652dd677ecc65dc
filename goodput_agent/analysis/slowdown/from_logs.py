"""Why did training slow down, from the training log alone (no profiler trace; issue 24 class 8).

The log's own per-iteration series (facts `iterations`: step, ms, rank, line) and Megatron's
timers (facts `timers`, parsing/job_log/megatron_timers.py) say *that* and *where* the time
went, never why; every class here is inferred from one artifact's own numbers, its confirmation
(a trace, DCGM) missing: at `MAX_CONFIDENCE` (record_levels.ONE_ARTIFACT), saying that a
profiler trace would confirm it.

- straggler: per-rank medians single out one rank (>= `STRAGGLER` x the others' median, with
  at least four ranks printed), by its iteration times or by a part of the step it prints
  (not a wait: the others wait for it), that part's excess at least `MIN_EXCESS` of the step;
  placed on its node by the NCCL rank->host map.
- a timer whose time grew (>= `SLOWER` x its own, by at least `MIN_TIMER_GROWTH` of the
  iteration, and carrying at least half of the iteration's growth when the series shows one)
  while every timer of another class held (< a quarter of its growth; compute timers may grow
  by as much as the timer they contain): batch-generator -> input_stall, gradient and parameter
  collectives -> communication. Compute timers and the optimizer step have no class the log can
  tell (GPU kernels or host work): unknown, naming the timer.
- otherwise the series itself: a rise (the last quarter's median >= `SLOWER` x the first
  quarter's) measured but not explained: unknown at NOTHING_NAMES_A_CAUSE (abstention.py)
  when every line of the bundle was read and none reads as a fault (`LogSeries.quiet`), else at
  SILENCE: a cause written in words nothing here reads looks the same (an unread file holds it
  to UNREAD); a steady series: unknown at NOTHING_TO_COMPARE (the log holds one regime; the run
  it is slower than is not in the bundle).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from statistics import median

from goodput_agent.analysis.abstention import (
    NOTHING_NAMES_A_CAUSE,
    NOTHING_TO_COMPARE,
    SILENCE,
    unknown_confidence,
)
from goodput_agent.analysis.log_series import (
    SLOWER,
    STEADY,
    LogPoint,
    LogSeries,
    Rise,
    TimerBlock,
    measure_rise,
    quarters,
    single_out,
)
from goodput_agent.analysis.record_levels import ONE_ARTIFACT
from goodput_agent.core.events import Event, EventKind, Locator, Role

from .model import SlowdownVerdict

MIN_TIMER_GROWTH = 0.05
MIN_EXCESS = 0.1  # a straggler's part must exceed its peers' by this share of the step
HELD = 0.25
MAX_CONFIDENCE = ONE_ARTIFACT
WHAT_WOULD_TELL = ("a profiler (Kineto) trace of a slow and of a good stretch, Megatron's "
                   "timers (--timing-log-level 2), or DCGM metrics of the GPUs over the run "
                   "would tell the cause")
INPUT_TIMERS = ("batch-generator",)
# parts of the step that are waiting for the others: high on every rank but the slow one
WAITS = re.compile(r"(?i)wait|idle|barrier|sync|all_?reduce|all_?gather|comm")
COMM_TIMERS = ("grads-sync", "all-gather", "all-reduce", "reduce-scatter", "grads-reduce")


LineText = Callable[[str, int], str]


def timer_class(name: str) -> str | None:
    if name in INPUT_TIMERS:
        return "input_stall"
    if any(k in name for k in COMM_TIMERS):
        return "communication"
    return None


def _event(p: LogPoint, summary: str, role: Role, line_text: LineText,
           node: str | None = None, category: str | None = None) -> Event:
    return Event(kind=EventKind.other, role=role, category=category, node=node, rank=p.rank,
                 summary=summary, locator=Locator(path=p.path, line_start=p.line,
                                                  line_end=p.line),
                 excerpt=line_text(p.path, p.line) or summary)


def straggler(s: LogSeries, rise: Rise | None, line_text: LineText) -> SlowdownVerdict | None:
    """One rank singled out by its iteration times, else by a part of the step it prints
    (a rank computing longer: its peers' waits hide it from the step time), over the slow
    stretch when the series rose."""
    since = rise.start.step if rise and rise.ratio >= STEADY else None
    series = {"iteration": s.points, **{f"'{n}'": pts for n, pts in sorted(s.parts.items())
                                        if not WAITS.search(n)}}
    step_ms = median(p.ms for p in s.points) if s.points else 0.0
    for what, pts in series.items():
        stretch = [p for p in pts if since is None or p.step >= since]
        found = single_out(stretch)
        # a part's excess must cost the step something (2 ms against 1.5 is noise)
        if found is not None and found[1] - found[2] >= MIN_EXCESS * step_ms:
            return _straggler_verdict(s, what, stretch, *found, line_text)
    return None


def _straggler_verdict(s: LogSeries, what: str, pts: list[LogPoint], rank: int, slow: float,
                       others: float, line_text: LineText) -> SlowdownVerdict:
    node = s.rank_hosts.get(rank)
    mine = [p for p in pts if p.rank == rank]
    worst = max(mine, key=lambda p: p.ms)
    peers = [p for p in pts if p.rank != rank and p.rank is not None]
    peer = next((p for p in peers if p.step == worst.step), peers[0])
    where = f"rank {rank}" + (f" on {node}" if node else "")
    summary = (f"{where} is a straggler: its median {what} time ({slow:.0f} ms, from step "
               f"{pts[0].step}) is {slow / others:.1f}x the other ranks' ({others:.0f} ms), as "
               "the training log prints it; the log says who is slow, not why (a profiler "
               "trace of that rank and DCGM metrics of its GPU would confirm it and tell why)")
    evidence = [_event(worst, f"rank {rank}: step {worst.step}, {what} {worst.ms:.0f} ms",
                       Role.primary, line_text, node, "straggler"),
                _event(peer, f"rank {peer.rank}: step {peer.step}, {what} {peer.ms:.0f} ms",
                       Role.context, line_text, s.rank_hosts.get(peer.rank or 0))]
    unknowns = ["no profiler trace: the straggler is told by the log's own times, not by its "
                "kernels (a trace would confirm it)"]
    if node is None:
        unknowns.append(f"rank {rank}'s host is named by no NCCL or launcher line")
    return SlowdownVerdict(category="straggler",
                           confidence=MAX_CONFIDENCE,
                           summary=summary, rank=rank, node=node, evidence=evidence,
                           unknowns=unknowns)


def _timer_change(blocks: list[TimerBlock]) -> dict[str, tuple[float, float]]:
    names = {n for b in blocks for n in b.times}
    out = {}
    for n in names:
        vals = [b.times[n] for b in blocks if n in b.times]
        if len(vals) >= 4:
            out[n] = quarters(vals)
    return out


def _only_the_max_grew(blocks: list[TimerBlock], name: str) -> bool:
    """Whether a collective's min across ranks held while its max grew (with minmax)."""
    mins = [b.mins[name] for b in blocks if name in b.mins]
    maxes = [b.times[name] for b in blocks if name in b.mins]
    if len(mins) < 4:
        return False
    (lo0, lo1), (hi0, hi1) = quarters(mins), quarters(maxes)
    return hi1 > hi0 and lo1 - lo0 < HELD * (hi1 - hi0)


def timer_verdict(s: LogSeries, rise: Rise | None, line_text: LineText
                  ) -> SlowdownVerdict | None:
    """The class named by the one timer that grew while the others held, else None."""
    if len(s.timers) < 4:
        return None
    change = _timer_change(s.timers)
    if not change:
        return None
    grown = {n: late - early for n, (early, late) in change.items()}
    name = max(grown, key=lambda n: grown[n])
    early, late = change[name]
    iteration = rise.first_ms if rise else max(e for e, _ in change.values())
    if late < SLOWER * early or grown[name] < MIN_TIMER_GROWTH * iteration:
        return None
    if rise and rise.last_ms > rise.first_ms and \
            grown[name] < 0.5 * (rise.last_ms - rise.first_ms):
        return None  # the timer carries less than half of the iteration's growth
    cls = timer_class(name)
    held = all(timer_class(n) == cls or timer_class(n) is None or g < HELD * grown[name]
               for n, g in grown.items() if n != name)
    # a compute timer may contain the grown one (forward-compute holds batch-generator)
    contained = all(g <= 1.1 * grown[name] + HELD * change[n][0]
                    for n, g in grown.items() if timer_class(n) is None and n != name)
    first = next(b for b in s.timers if name in b.times)
    slow = max((b for b in s.timers if name in b.times), key=lambda b: b.times[name])
    what = (f"Megatron's timer '{name}' grew from {early:.1f} to {late:.1f} ms per iteration "
            f"(max across ranks, {slow.path} line {slow.lines.get(name, slow.line)})")
    evidence = [Event(kind=EventKind.other, role=Role.primary if cls else Role.context,
                      category=cls, summary=f"timer {name}: {b.times[name]:.1f} ms",
                      locator=Locator(path=b.path, line_start=(n := b.lines.get(name, b.line)),
                                      line_end=n),
                      excerpt=line_text(b.path, n) or f"{name}: {b.times[name]:.1f} ms")
                for b in (first, slow)]
    waited = cls == "communication" and _only_the_max_grew(s.timers, name)
    if cls is None or not held or not contained or waited:
        why = ("a compute or optimizer timer: GPU kernels or host work, which the log cannot "
               "tell apart" if cls is None else "other timers grew with it" if not waited else
               "its max across ranks grew while its min held: the ranks that arrive first "
               "wait in it for a late one (a straggler the timers do not name), not a slower "
               "transfer")
        return SlowdownVerdict(
            category="unknown", confidence=_unexplained(s),
            summary=f"{what}: {why}; {WHAT_WOULD_TELL}", evidence=evidence,
            unknowns=["no profiler trace: which kernels or host work grew is not measured"])
    label = {"input_stall": "waiting for the next batch (input pipeline)",
             "communication": "gradient/parameter communication"}[cls]
    return SlowdownVerdict(
        category=cls, confidence=MAX_CONFIDENCE, evidence=evidence,
        summary=(f"{what} while the other timers held: the time went to {label}"
                 + (f"; {rise.text()}" if rise else "")
                 + "; a profiler trace of a slow and a good stretch would confirm it"),
        unknowns=["no profiler trace: the class rests on Megatron's timers alone (a trace "
                  "would confirm it)"])


def log_verdict(s: LogSeries, line_text: LineText) -> SlowdownVerdict:
    """The slowdown verdict the training log's own series supports."""
    rise = measure_rise(s.points)
    if (v := straggler(s, rise, line_text)) is not None:
        return v
    if (v := timer_verdict(s, rise, line_text)) is not None:
        return v
    if rise is None:
        return _too_few(s, line_text)
    evidence = [_event(rise.base, f"step {rise.base.step}: {rise.base.ms:.0f} ms",
                       Role.context, line_text),
                _event(rise.start, f"step {rise.start.step}: {rise.start.ms:.0f} ms",
                       Role.symptom, line_text)]
    if rise.ratio < STEADY:
        return SlowdownVerdict(
            category="unknown", confidence=unknown_confidence(NOTHING_TO_COMPARE,
                                                              s.unread_files),
            evidence=evidence, summary=(
                f"the training log's iteration time is steady ({rise.first_ms:.0f} ms at the "
                f"start, {rise.last_ms:.0f} ms at the end): the log holds one regime, and the "
                "run it is slower than is not in the bundle"),
            unknowns=["no profiler trace, and no earlier run's log or trace to compare with"])
    measured = rise.text() if rise.ratio >= SLOWER else (
        f"{rise.text()}, under the {SLOWER}x the series must show to be read as a slowdown")
    return SlowdownVerdict(
        category="unknown", confidence=_unexplained(s),
        evidence=evidence, summary=f"{measured}; {_read(s)}: {WHAT_WOULD_TELL}",
        unknowns=["no profiler trace, timers or GPU metrics: the cause of the rise is not in "
                  "the bundle"])


def _unexplained(s: LogSeries) -> float:
    """The confidence of an `unknown` that names no cause: every line of the bundle read and
    none reading as a fault, or not (abstention.py)."""
    return unknown_confidence(NOTHING_NAMES_A_CAUSE if s.quiet else SILENCE, s.unread_files)


def _read(s: LogSeries) -> str:
    return ("every line of the bundle was read, none reads as a fault, and nothing in it says "
            "why" if s.quiet else "nothing in the bundle says why")


def _too_few(s: LogSeries, line_text: LineText) -> SlowdownVerdict:
    """Fewer than MIN_POINTS iteration times: a change within the log cannot be measured."""
    if not s.points:
        why = "the training logs print no iteration time: no series to measure"
        return SlowdownVerdict(category="unknown", confidence=_unexplained(s),
                               summary=f"{why}; {WHAT_WOULD_TELL}",
                               unknowns=[why, "no profiler trace"])
    lo, hi = min(s.points, key=lambda p: p.ms), max(s.points, key=lambda p: p.ms)
    steady = lo.ms > 0 and hi.ms < STEADY * lo.ms
    why = (f"the training log prints {len(s.points)} iteration times ({lo.ms:.0f} to "
           f"{hi.ms:.0f} ms), too few to measure a change within it"
           + ("; they are steady: the run they are slower than is not in the bundle"
              if steady else ""))
    evidence = [_event(p, f"step {p.step}: {p.ms:.0f} ms", Role.context, line_text)
                for p in (lo, hi)]
    return SlowdownVerdict(
        category="unknown", evidence=evidence,
        confidence=unknown_confidence(NOTHING_TO_COMPARE, s.unread_files) if steady
        else _unexplained(s),
        summary=why if steady else f"{why}; {WHAT_WOULD_TELL}",
        unknowns=["no profiler trace, and no earlier run's log or trace to compare with"])
