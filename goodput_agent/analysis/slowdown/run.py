"""One run's ranks as the slowdown verdict weighs them (its parts, its collective waits),
a candidate cause, and the evidence events candidates cite; the verdict's thresholds.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from goodput_agent.core.events import Event, EventKind, Locator, Role
from goodput_agent.parsing.kineto.model import COMM, COMPUTE, Trace

from .model import PARTS, RankBreakdown, RunBreakdown, StepBreakdown
from .throttle import ThrottleFinding
from .trace_ranks import RunWaits, collective_waits
from .trace_steps import RankTimeline, rank_breakdown

SHARE_THRESHOLDS = {"idle_input_us": 0.15, "idle_host_us": 0.20, "memory_us": 0.20,
                    "comm": 0.20}
MIN_SLOWDOWN = 0.05  # a mean step this much longer than the baseline's is a slowdown
COMPUTE_EXCESS = 1.10  # a rank computing this much longer than its peers' median is slow
SLOWER_PER_CALL = 1.05  # a kernel family this much slower per call got slower
MIN_PART_SHARE = 0.10  # with a baseline, a part must carry this share of the growth to count
LATE_MIN_WAIT_SHARE = 0.10  # ranks waiting this share of the step for others: someone is late


@dataclass
class Run:
    label: str
    timelines: list[RankTimeline]
    waits: RunWaits
    breakdown: RunBreakdown

    @classmethod
    def of(cls, label: str, traces: list[Trace]) -> Run:
        tls = [RankTimeline(t) for t in traces]
        waits = collective_waits(tls)
        ranks = [rank_breakdown(tl, rw.exposed) for tl, rw in zip(tls, waits.ranks, strict=True)]
        return cls(label, tls, waits, RunBreakdown(label=label, ranks=ranks))

    @classmethod
    def prepared(cls, label: str, timelines: list, waits: RunWaits,
                 ranks: list[RankBreakdown]) -> Run:
        """A run whose timelines answer RankTimeline's step queries (rank_digest's views)."""
        return cls(label, timelines, waits, RunBreakdown(label=label, ranks=ranks))

    def pairs(self) -> list[tuple[RankTimeline, RankBreakdown]]:
        return [(tl, r) for tl, r in zip(self.timelines, self.breakdown.ranks, strict=True)
                if r.mean_parts]

    def parts(self) -> dict[str, float]:
        ranks = [r for _, r in self.pairs()]
        if not ranks:
            return {}
        out = {p: statistics.fmean(r.mean_parts[p] for r in ranks) for p in PARTS}
        out["step"] = sum(out[p] for p in PARTS)
        return out


@dataclass
class Candidate:
    category: str
    confidence: float
    summary: str
    evidence: list[Event]
    rank: int | None = None
    node: str | None = None
    gpu: str | None = None
    unknowns: tuple[str, ...] = ()
    detail: str = ""  # what the traces add to the evidence


def ms(us: float) -> str:
    return f"{us / 1000:.1f} ms"


def short_host(host: str | None) -> str:
    return (host or "").split(".")[0].lower()


def step_label(tl: RankTimeline, number: int) -> str:
    step = next((s for s in tl.steps if s.number == number), None)
    if step is None or step.source == "ProfilerStep":
        return f"ProfilerStep#{number}"
    return f"{step.source} step {number}"


def span_event(tl: RankTimeline, r: RankBreakdown, s: StepBreakdown | None, text: str,
               category: str) -> Event:
    head = (f"step {s.step}: {step_label(tl, s.step)} @ {s.start_us:.0f} us, {ms(s.step_us)}"
            if s is not None else "no step")
    span = f"{head}; {text}"
    who = ", ".join(x for x in (f"rank {r.rank}" if r.rank is not None else "",
                                r.host or "") if x)
    return Event(kind=EventKind.trace_span, role=Role.primary, category=category,
                 node=r.host, rank=r.rank, summary=f"{who or r.path}: {text}",
                 locator=Locator(path=r.path, line_start=0, line_end=0, span=span),
                 excerpt=span)


def worst_step(r: RankBreakdown, part: str) -> StepBreakdown | None:
    return max(r.steps, key=lambda s: getattr(s, part), default=None)


def longest(spans: list, what: str) -> str:
    if not spans:
        return ""
    s = max(spans, key=lambda x: x.dur)
    return f"; {what}{s.name[:90]} {ms(s.dur)}"


def part_evidence(run: Run, part: str, category: str,
                  describe: Callable[[RankTimeline, StepBreakdown], str]) -> list[Event]:
    """The worst step (most `part`) of the two ranks with the most `part`, described."""
    pairs = sorted(run.pairs(), key=lambda p: -p[1].mean_parts[part])[:2]
    return [span_event(tl, r, s, describe(tl, s), category) for tl, r in pairs
            if (s := worst_step(r, part)) is not None]


def input_evidence(run: Run, category: str) -> list[Event]:
    return part_evidence(run, "idle_input_us", category, lambda tl, s: (
        f"GPU idle waiting for input {ms(s.idle_input_us)}"
        + longest(tl.dataloader.overlapping(s.start_us, s.start_us + s.step_us), "")))


def host_evidence(run: Run, category: str) -> list[Event]:
    return part_evidence(run, "idle_host_us", category, lambda tl, s: (
        f"GPU idle while the host worked {ms(s.idle_host_us)}, {s.kernels} GPU ops in the "
        "step" + longest(tl.syncs.overlapping(s.start_us, s.start_us + s.step_us),
                          "longest sync ")))


def memory_evidence(run: Run, category: str) -> list[Event]:
    return part_evidence(run, "memory_us", category, lambda tl, s: (
        f"copies not hidden under compute {ms(s.memory_us)}"
        + longest([o for o in tl.ops_in(s.start_us, s.start_us + s.step_us)
                    if o.kind not in (COMPUTE, COMM)], "longest ")))


def comm_evidence(run: Run, category: str, text: str) -> list[Event]:
    pairs = sorted(run.pairs(), key=lambda p: -(p[1].mean_parts["comm_transfer_us"]
                                                + p[1].mean_parts["comm_wait_us"]))[:2]
    out = []
    for tl, r in pairs:
        s = r.median_step
        if s is None:
            continue
        colls = [o for o in tl.ops_in(s.start_us, s.start_us + s.step_us) if o.kind == COMM]
        out.append(span_event(tl, r, s, text.format(
            transfer=ms(s.comm_transfer_us), wait=ms(s.comm_wait_us))
            + longest(colls, "longest collective "), category))
    return out


def compute_excess(run: Run) -> dict[int, float]:
    """Index of each rank -> its mean compute over its peers' median."""
    comp = [r.mean_parts.get("compute_us", 0.0) for r in run.breakdown.ranks]
    out = {}
    for i, c in enumerate(comp):
        peers = [x for j, x in enumerate(comp) if j != i and x > 0]
        if peers and c > 0:
            out[i] = c / statistics.median(peers)
    return out


def rank_for(run: Run, f: ThrottleFinding) -> int | None:
    """The index of the traced rank that drives the throttled GPU."""
    same_host = [i for i, tl in enumerate(run.timelines)
                 if short_host(tl.trace.meta.host) == short_host(f.node) and tl.ops]
    exact = [i for i in same_host if f.gpu is not None and f.gpu.isdigit()
             and run.timelines[i].device == int(f.gpu)]
    if exact:
        return exact[0]
    return same_host[0] if len(same_host) == 1 else None
