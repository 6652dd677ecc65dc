"""Why did training slow down: the verdict from per-step breakdowns (trace_steps), cross-rank
collective waits (trace_ranks), kernel families and DCGM clocks (throttle).

Every cause that the evidence supports becomes a candidate with a confidence; the strongest is
the verdict and the others are its alternatives, each with why it lost.

- With a baseline run, the change of the mean step (mean over ranks of each rank's mean step)
  is split into the parts: they sum to the step, so their deltas sum to the slowdown. The mean,
  not the median, is split because it is what throughput pays and because a stall every few
  steps leaves the median step untouched; the breakdown still reports each rank's median step.
  A slowdown under `MIN_SLOWDOWN` is no slowdown, and a part carrying under `MIN_PART_SHARE`
  of the growth is no cause. Each grown part is a candidate, confidence 0.3 + 0.55 x its share
  of the growth (0.2..0.85): idle_input -> input_stall, idle_host -> host_overhead, memory
  copies -> input_stall when host-to-device copies grew (or take) most, else host_overhead;
  communication (transfer, plus waiting when no rank is a straggler) -> communication; compute
  -> gpu_throttling when the same kernel families got slower per call on every rank (at most
  0.45 without DCGM confirming, with the unknown said), a straggler when only one rank's
  kernels got slower, unknown when compute grew by more or other kernels; idle_other -> unknown.
- Without a baseline, a part must take `SHARE_THRESHOLDS` of the mean step to count
  (confidence 0.5, up to 0.8 at twice the threshold); one rank computing `COMPUTE_EXCESS` times
  its peers' median is a straggler candidate at 0.5.
- A straggler (trace_ranks) is a candidate of its own, 0.55 + 0.35 x the share of aligned steps
  that name it: a DDP all-reduce hides it from step totals, the others' collective waits show
  it. With a baseline it must explain 30% of the slowdown (its extra time plus the others'
  waiting) or drops to 0.4. When its own excess over its peers is input wait or host time
  rather than compute, the cause is that (input_stall / host_overhead) on that rank.
- A throttled GPU (throttle) counts when it drives a traced rank (same host, same device index;
  the only traced rank of that host when the index does not match): 0.9 with two signs in the
  traces that it costs time (its rank is the straggler, computes `COMPUTE_EXCESS` over its
  peers, or compute grew most), 0.8 with one, 0.45 with none; x0.7 when no traced rank drives
  it. Several throttled GPUs make one verdict naming the node, not a rank.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from goodput_agent.analysis.kernel_families import diff, per_call_ratio, pooled
from goodput_agent.analysis.slowdown_model import (
    PARTS,
    Breakdown,
    FamilyChange,
    RankBreakdown,
    RunBreakdown,
    SlowdownVerdict,
    StepBreakdown,
)
from goodput_agent.analysis.throttle import ThrottleFinding, throttle_findings
from goodput_agent.analysis.trace_ranks import RunWaits, Straggler, collective_waits
from goodput_agent.analysis.trace_steps import RankTimeline, rank_breakdown
from goodput_agent.events import Event, EventKind, Locator, Role
from goodput_agent.parsing.openmetrics import Series
from goodput_agent.parsing.trace_model import COMM, COMPUTE, MEMCPY, Trace

SHARE_THRESHOLDS = {"idle_input_us": 0.15, "idle_host_us": 0.20, "memory_us": 0.20,
                    "comm": 0.20}
MIN_SLOWDOWN = 0.05  # a mean step this much longer than the baseline's is a slowdown
COMPUTE_EXCESS = 1.10  # a rank computing this much longer than its peers' median is slow
SLOWER_PER_CALL = 1.05  # a kernel family this much slower per call got slower
MIN_PART_SHARE = 0.10  # with a baseline, a part must carry this share of the growth to count
LATE_MIN_WAIT_SHARE = 0.10  # ranks waiting this share of the step for others: someone is late
NOTES = [
    "One clock per rank: a step is its ProfilerStep window (or an iteration found from a "
    "recurring kernel) on the trace clock; the GPU ops of the rank's main device (all streams) "
    "are clipped to it and counted once, compute > communication > memory > idle, so the seven "
    "parts sum to the step time.",
    "comm_wait: the part of the exposed communication spent waiting for other ranks: per "
    "collective, its duration minus the same collective's duration on the fastest rank (the one "
    "that arrived last), counted from the kernel's start and not under compute; comm_transfer "
    "is the rest of the exposed communication.",
    "Idle gaps: when the op that ends a gap was launched at or after the gap began, the GPU "
    "waited for the host: idle_input under a DataLoader __next__ span, idle_host elsewhere; when "
    "it was queued before, it waited on a dependency: idle_other.",
    "Run parts: each rank's mean over its steps, then the mean over ranks; the change against "
    "the baseline is split by part (the deltas sum to the change of the mean step).",
    f"Thresholds: slowdown >= {MIN_SLOWDOWN:.0%} of the baseline step; without a baseline a "
    "cause needs its share of the step: " + ", ".join(
        f"{p.removesuffix('_us')} {v:.0%}" for p, v in SHARE_THRESHOLDS.items())
    + f"; a rank computing {COMPUTE_EXCESS:.2f}x its peers' median is slow.",
]


@dataclass
class _Run:
    label: str
    timelines: list[RankTimeline]
    waits: RunWaits
    breakdown: RunBreakdown

    @classmethod
    def of(cls, label: str, traces: list[Trace]) -> _Run:
        tls = [RankTimeline(t) for t in traces]
        waits = collective_waits(tls)
        ranks = [rank_breakdown(tl, rw.exposed) for tl, rw in zip(tls, waits.ranks, strict=True)]
        return cls(label, tls, waits, RunBreakdown(label=label, ranks=ranks))

    @classmethod
    def prepared(cls, label: str, timelines: list, waits: RunWaits,
                 ranks: list[RankBreakdown]) -> _Run:
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


Run = _Run  # the public name, for rank_digest


@dataclass
class _Candidate:
    category: str
    confidence: float
    summary: str
    evidence: list[Event]
    rank: int | None = None
    node: str | None = None
    gpu: str | None = None
    unknowns: tuple[str, ...] = ()
    detail: str = ""  # what the traces add to the evidence


def _ms(us: float) -> str:
    return f"{us / 1000:.1f} ms"


def _short(host: str | None) -> str:
    return (host or "").split(".")[0].lower()


def _step_label(tl: RankTimeline, number: int) -> str:
    step = next((s for s in tl.steps if s.number == number), None)
    if step is None or step.source == "ProfilerStep":
        return f"ProfilerStep#{number}"
    return f"{step.source} step {number}"


def _span_event(tl: RankTimeline, r: RankBreakdown, s: StepBreakdown | None, text: str,
                category: str) -> Event:
    head = (f"step {s.step}: {_step_label(tl, s.step)} @ {s.start_us:.0f} us, {_ms(s.step_us)}"
            if s is not None else "no step")
    span = f"{head}; {text}"
    who = ", ".join(x for x in (f"rank {r.rank}" if r.rank is not None else "",
                                r.host or "") if x)
    return Event(kind=EventKind.trace_span, role=Role.primary, category=category,
                 node=r.host, rank=r.rank, summary=f"{who or r.path}: {text}",
                 locator=Locator(path=r.path, line_start=0, line_end=0, span=span),
                 excerpt=span)


def _worst_step(r: RankBreakdown, part: str) -> StepBreakdown | None:
    return max(r.steps, key=lambda s: getattr(s, part), default=None)


def _longest(spans: list, what: str) -> str:
    if not spans:
        return ""
    s = max(spans, key=lambda x: x.dur)
    return f"; {what}{s.name[:90]} {_ms(s.dur)}"


def _part_evidence(run: _Run, part: str, category: str,
                   describe: Callable[[RankTimeline, StepBreakdown], str]) -> list[Event]:
    """The worst step (most `part`) of the two ranks with the most `part`, described."""
    pairs = sorted(run.pairs(), key=lambda p: -p[1].mean_parts[part])[:2]
    return [_span_event(tl, r, s, describe(tl, s), category) for tl, r in pairs
            if (s := _worst_step(r, part)) is not None]


def _input_evidence(run: _Run, category: str) -> list[Event]:
    return _part_evidence(run, "idle_input_us", category, lambda tl, s: (
        f"GPU idle waiting for input {_ms(s.idle_input_us)}"
        + _longest(tl.dataloader.overlapping(s.start_us, s.start_us + s.step_us), "")))


def _host_evidence(run: _Run, category: str) -> list[Event]:
    return _part_evidence(run, "idle_host_us", category, lambda tl, s: (
        f"GPU idle while the host worked {_ms(s.idle_host_us)}, {s.kernels} GPU ops in the "
        "step" + _longest(tl.syncs.overlapping(s.start_us, s.start_us + s.step_us),
                          "longest sync ")))


def _memory_evidence(run: _Run, category: str) -> list[Event]:
    return _part_evidence(run, "memory_us", category, lambda tl, s: (
        f"copies not hidden under compute {_ms(s.memory_us)}"
        + _longest([o for o in tl.ops_in(s.start_us, s.start_us + s.step_us)
                    if o.kind not in (COMPUTE, COMM)], "longest ")))


def _comm_evidence(run: _Run, category: str, text: str) -> list[Event]:
    pairs = sorted(run.pairs(), key=lambda p: -(p[1].mean_parts["comm_transfer_us"]
                                                + p[1].mean_parts["comm_wait_us"]))[:2]
    out = []
    for tl, r in pairs:
        s = r.median_step
        if s is None:
            continue
        colls = [o for o in tl.ops_in(s.start_us, s.start_us + s.step_us) if o.kind == COMM]
        out.append(_span_event(tl, r, s, text.format(
            transfer=_ms(s.comm_transfer_us), wait=_ms(s.comm_wait_us))
            + _longest(colls, "longest collective "), category))
    return out


def _compute_excess(run: _Run) -> dict[int, float]:
    """Index of each rank -> its mean compute over its peers' median."""
    comp = [r.mean_parts.get("compute_us", 0.0) for r in run.breakdown.ranks]
    out = {}
    for i, c in enumerate(comp):
        peers = [x for j, x in enumerate(comp) if j != i and x > 0]
        if peers and c > 0:
            out[i] = c / statistics.median(peers)
    return out


def _rank_for(run: _Run, f: ThrottleFinding) -> int | None:
    """The index of the traced rank that drives the throttled GPU."""
    same_host = [i for i, tl in enumerate(run.timelines)
                 if _short(tl.trace.meta.host) == _short(f.node) and tl.ops]
    exact = [i for i in same_host if f.gpu is not None and f.gpu.isdigit()
             and run.timelines[i].device == int(f.gpu)]
    if exact:
        return exact[0]
    return same_host[0] if len(same_host) == 1 else None


def analyse(incident: list[Trace], baseline: list[Trace] | None = None,
            series: list[Series] | None = None,
            series_paths: Mapping[str, str] | None = None) -> tuple[Breakdown, SlowdownVerdict]:
    """The breakdown of both runs and the verdict. `series`: DCGM series (any others are
    ignored); `series_paths`: metric name -> the file it came from, for evidence."""
    gpu_traces = [t for t in incident if t.gpu]
    base_traces = [t for t in baseline or [] if t.gpu]
    inc = _Run.of("incident", gpu_traces)
    base = _Run.of("baseline", base_traces) if base_traces else None
    gpu_less = [t.meta.path for t in [*incident, *(baseline or [])] if not t.gpu]
    return analyse_runs(inc, base, gpu_less, series, series_paths)


def analyse_runs(inc: Run, base: Run | None, gpu_less_paths: list[str],
                 series: list[Series] | None = None,
                 series_paths: Mapping[str, str] | None = None
                 ) -> tuple[Breakdown, SlowdownVerdict]:
    """`analyse` of runs already prepared (from traces here, or from rank digests made where
    the traces lie); `gpu_less_paths`: the traces without GPU kernels."""
    breakdown = Breakdown(incident=inc.breakdown, baseline=base.breakdown if base else None,
                          notes=NOTES)
    gpu_less = [f"{p}: no GPU kernels in the trace (a CPU-only or device-less trace)"
                for p in gpu_less_paths]
    if not inc.parts():
        why = ("no incident trace has GPU kernels: nothing to break down" if not inc.timelines
               else "no incident trace has a step to break down")
        return breakdown, SlowdownVerdict(category="unknown", confidence=0.0, summary=why,
                                          unknowns=gpu_less or [why])
    findings = throttle_findings(series or [], series_paths)
    before = pooled(r.kernel_families for r in base.breakdown.ranks) if base else []
    changes = diff(before, pooled(r.kernel_families for r in inc.breakdown.ranks)) if base else []
    # each incident rank's compute kernels per call against the baseline's same families
    ratios = {i: x for i, r in enumerate(inc.breakdown.ranks)
              if (x := per_call_ratio(before, r.kernel_families)) is not None} if base else {}
    have_clocks = any(f.clock_ratio is not None or f.reasons or f.other_reasons
                      for f in findings)
    verdict = _decide(inc, base, [f for f in findings if f.throttled], changes, have_clocks,
                      ratios)
    verdict.kernel_changes = changes[:10]
    verdict.unknowns += gpu_less
    if base is None:
        verdict.unknowns.append("no baseline run (a baseline/ folder, incident.yaml's baseline, "
                                "or an older run folder): the cause "
                                "is judged from the incident's own shares of the step")
    if not have_clocks:
        verdict.unknowns.append("no DCGM clock metrics: GPU throttling can be neither confirmed "
                                "nor ruled out")
    if len(inc.timelines) < 2:
        verdict.unknowns.append("one rank traced: waiting for other ranks and stragglers cannot "
                                "be measured")
    return breakdown, verdict


def _decide(inc: _Run, base: _Run | None, throttled: list[ThrottleFinding],
            changes: list[FamilyChange], have_clocks: bool,
            ratios: dict[int, float]) -> SlowdownVerdict:
    now = inc.parts()
    before = base.parts() if base else {}
    grown = now["step"] - before["step"] if before else 0.0
    if before and grown < MIN_SLOWDOWN * before["step"]:
        return SlowdownVerdict(category="unknown", confidence=0.3, summary=(
            f"the mean step is {_ms(now['step'])} against the baseline's {_ms(before['step'])} "
            f"({grown / before['step']:+.0%}): no slowdown to explain"))
    growth = {p: now[p] - before.get(p, 0.0) for p in PARTS} if before else {}
    candidates = [*_throttle_candidates(inc, throttled, growth, grown, changes),
                  *_straggler_candidates(inc, growth, grown, have_clocks),
                  *_part_candidates(inc, now, before, growth, changes, have_clocks, ratios)]
    if not candidates:
        shares = ", ".join(f"{p.removesuffix('_us')} {now[p] / now['step']:.0%}" for p in PARTS
                           if now[p] > 0)
        return SlowdownVerdict(category="unknown", confidence=0.2, summary=(
            "no cause stands out" + (" and there is no baseline to compare with" if not before
                                     else "") + f": mean step {_ms(now['step'])} ({shares})"))
    candidates.sort(key=lambda c: -c.confidence)
    top = candidates[0]
    alternatives: list[tuple[str, float, str]] = []
    for c in candidates[1:]:
        if c.category == top.category or c.category in {a[0] for a in alternatives}:
            continue
        if top.category == "gpu_throttling" and c.category == "straggler" and c.rank == top.rank:
            why = (f"rank {c.rank} is the straggler, and DCGM says why: its GPU throttles "
                   f"({c.summary})")
        else:
            why = f"{c.summary}; weaker than {top.category.replace('_', ' ')}"
        alternatives.append((c.category, round(max(0.05, min(c.confidence,
                                                             top.confidence - 0.05)), 2), why))
    return SlowdownVerdict(category=top.category, confidence=round(top.confidence, 2),
                           summary=top.summary, rank=top.rank, node=top.node, gpu=top.gpu,
                           evidence=top.evidence, alternatives=alternatives[:3],
                           unknowns=list(top.unknowns))


def _throttle_candidates(inc: _Run, throttled: list[ThrottleFinding], growth: dict[str, float],
                         grown: float, changes: list[FamilyChange]) -> list[_Candidate]:
    straggler = inc.waits.straggler
    excess = _compute_excess(inc)
    slower = [c for c in changes if c.kind == "compute" and c.ratio > SLOWER_PER_CALL]
    compute_grew = bool(growth) and growth["compute_us"] >= 0.5 * grown > 0
    out = []
    for f in throttled:
        idx = _rank_for(inc, f)
        r = inc.breakdown.ranks[idx] if idx is not None else None
        support = []
        if r is not None and straggler is not None and straggler.path == r.path:
            support.append(f"rank {r.rank} is the straggler the others wait for "
                           f"({straggler.others_wait_share:.0%} of their step)")
        if idx is not None and excess.get(idx, 1.0) >= COMPUTE_EXCESS:
            support.append(f"rank {r.rank if r else '?'} computes {excess[idx]:.2f}x its peers' "
                           "median per step")
        if compute_grew:
            support.append(f"compute grew {_ms(growth['compute_us'])} per step"
                           + (": " + ", ".join(f"{c.family} x{c.ratio:.2f} per call"
                                               for c in slower[:3]) if slower else ""))
        conf = (0.9 if len(support) >= 2 else 0.8 if support else 0.45) * (1 if r else 0.7)
        where = f"GPU {f.gpu} on {f.node}"
        summary = (f"{where} throttles ({f.describe()})"
                   + (f"; {'; '.join(support)}" if support else
                      "; the traces do not show it costing step time"))
        evidence = list(f.evidence)
        unknowns: tuple[str, ...] = ()
        if idx is not None and r is not None:
            tl = inc.timelines[idx]
            evidence.append(_span_event(tl, r, r.median_step, (
                f"compute {_ms(r.mean_parts['compute_us'])} per step on device {tl.device}"),
                "gpu_throttling"))
        else:
            unknowns = (f"{where} is not matched to a traced rank (no trace from that host "
                        "and device)",)
        out.append(_Candidate("gpu_throttling", conf, summary, evidence,
                              rank=r.rank if r else None,
                              node=(r.host if r else None) or f.node, gpu=f.gpu,
                              unknowns=unknowns, detail="; ".join(support)))
    if len(out) > 1:  # several throttled GPUs: one verdict, on the strongest support
        best = max(out, key=lambda c: c.confidence)
        gpus: dict[str | None, list[str]] = {}
        for f in throttled:
            gpus.setdefault(f.node, []).append(f.gpu or "?")
        reasons = sorted({x for f in throttled for x in f.reasons}) or ["low SM clock"]
        where = "; ".join(f"{n} GPU {', '.join(g)}" for n, g in gpus.items())
        best.summary = (f"{len(throttled)} GPUs throttle ({where}: {', '.join(reasons)})"
                        + (f"; {best.detail}" if best.detail else ""))
        best.node = next(iter(gpus)) if len(gpus) == 1 else None
        best.rank = best.gpu = None
        best.evidence = [e for c in out for e in c.evidence[:1]][:6] + best.evidence[1:]
        return [best]
    return out


def _straggler_candidates(inc: _Run, growth: dict[str, float], grown: float,
                          have_clocks: bool) -> list[_Candidate]:
    s: Straggler | None = inc.waits.straggler
    if s is None:
        return []
    idx = next(i for i, rw in enumerate(inc.waits.ranks) if rw.path == s.path)
    tl, r = inc.timelines[idx], inc.breakdown.ranks[idx]
    conf = min(0.9, 0.55 + 0.35 * s.consistency)
    local = _local_cause(inc, idx)
    if local is not None:  # the straggler is slow because it waits for its input / its host
        part, extra = local
        category = "input_stall" if part == "idle_input_us" else "host_overhead"
        what = "its input (DataLoader)" if category == "input_stall" else "its host"
        evidence = (_input_evidence if category == "input_stall" else _host_evidence)(
            _Run(inc.label, [tl], inc.waits, RunBreakdown(label=inc.label, ranks=[r])),
            category)
        return [_Candidate(category, conf, (
            f"rank {s.rank} waits for {what} {_ms(extra)} per step longer than its peers, and "
            f"the other ranks wait for it in collectives ({s.others_wait_share:.0%} of their "
            f"step, in {s.consistency:.0%} of {s.steps} aligned steps)"), evidence,
            rank=s.rank, node=s.host)]
    summary = (f"rank {s.rank} is a straggler: in {s.consistency:.0%} of {s.steps} aligned "
               f"steps the other ranks wait for it in collectives ({s.others_wait_share:.0%} of "
               f"their step, it waits {s.own_wait_share:.0%}); its own work takes "
               f"{_ms(s.busy_us)} per step against their {_ms(s.others_busy_us)}")
    if growth:
        explained = growth["comm_wait_us"] + max(0.0, s.busy_us - s.others_busy_us)
        if explained < 0.3 * grown:
            conf = 0.4
            summary += f"; but that explains only {explained / grown:.0%} of the slowdown"
    unknowns = ((f"why rank {s.rank} is slow: DCGM shows no throttling on its GPU (check its "
                 "host CPU, data loading and GPU health)",) if have_clocks else
                (f"why rank {s.rank} is slow: no DCGM clock metrics to tell a throttled GPU "
                 "from a slow host",))
    evidence = [_span_event(tl, r, r.median_step, f"own work {_ms(s.busy_us)} per step, waits "
                            f"{_ms(r.mean_parts['comm_wait_us'])} in collectives", "straggler")]
    waiting = sorted((p for p in inc.pairs() if p[1].path != s.path),
                     key=lambda p: -p[1].mean_parts["comm_wait_us"])[:2]
    for wtl, wr in waiting:
        st = wr.median_step
        colls = [o for o in wtl.ops_in(st.start_us, st.start_us + st.step_us)
                 if o.kind == COMM] if st else []
        evidence.append(_span_event(wtl, wr, st, f"waits {_ms(st.comm_wait_us if st else 0)} "
                                    f"for rank {s.rank}" + _longest(colls, "in "), "straggler"))
    return [_Candidate("straggler", conf, summary, evidence, rank=s.rank, node=s.host,
                       unknowns=unknowns)]


OWN_PARTS = ("compute_us", "memory_us", "idle_input_us", "idle_host_us")  # a rank's own time
LOCAL_CAUSES = ("idle_input_us", "idle_host_us")


def _excess(late: list[RankBreakdown], others: list[RankBreakdown]) -> tuple[str, float]:
    """The part of their own time in which the late ranks exceed the others most (medians over
    each group), and by how much per step."""
    extra = {p: statistics.median(r.mean_parts[p] for r in late)
             - statistics.median(r.mean_parts[p] for r in others) for p in OWN_PARTS}
    part = max(extra, key=extra.__getitem__)
    return part, extra[part]


def _local_cause(inc: _Run, idx: int) -> tuple[str, float] | None:
    """The part in which the straggler's own time exceeds its peers' most, when that is
    waiting for input or for its host rather than computing: (part, µs per step)."""
    ranks = inc.breakdown.ranks
    peers = [r for i, r in enumerate(ranks) if i != idx and r.mean_parts]
    if not ranks[idx].mean_parts or not peers:
        return None
    part, extra = _excess([ranks[idx]], peers)
    return (part, extra) if part in LOCAL_CAUSES and extra > 0 else None


@dataclass
class _LateGroup:
    part: str  # idle_input_us | idle_host_us: what the late ranks spend their extra time on
    ranks: list[int | None]
    extra_us: float  # per step, over the waiting ranks (medians)
    host: str | None  # when the late ranks share one


def _late_group(inc: _Run) -> _LateGroup | None:
    """Without a single straggler: the ranks the others wait for in collectives (those that
    wait least), when what they do longer than the waiting ranks is waiting for input or for
    their host (one node's slow input, say). The others' waiting is then that cause's cost."""
    ranks = [r for _, r in inc.pairs()]
    if len(ranks) < 3:
        return None
    wait = [r.mean_parts["comm_wait_us"] for r in ranks]
    floor = LATE_MIN_WAIT_SHARE * statistics.fmean(sum(r.mean_parts[p] for p in PARTS)
                                                   for r in ranks)
    top = max(wait)
    late = [r for r, w in zip(ranks, wait, strict=True) if w < top / 2]
    waiting = [r for r, w in zip(ranks, wait, strict=True) if w >= top / 2]
    if top < floor or not late:
        return None
    part, extra = _excess(late, waiting)
    waited = statistics.median(r.mean_parts["comm_wait_us"] for r in waiting)
    if part not in LOCAL_CAUSES or waited < floor or extra < max(waited / 2, floor):
        return None
    hosts = {r.host for r in late}
    # a node is named only when the late ranks are all of that node's traced ranks
    host = hosts.pop() if len(hosts) == 1 and None not in hosts else None
    if host is not None and any(r.host == host for r in waiting):
        host = None
    return _LateGroup(part, sorted((r.rank for r in late), key=lambda k: (k is None, k or 0)),
                      extra, host)


def _ranks_text(ranks: list[int | None]) -> str:
    known = [r for r in ranks if r is not None]
    if len(known) > 2 and known == list(range(known[0], known[-1] + 1)):
        return f"ranks {known[0]}-{known[-1]}"
    return "ranks " + ", ".join(str(r) for r in known) if known else f"{len(ranks)} ranks"


def _part_candidates(inc: _Run, now: dict[str, float], before: dict[str, float],
                     growth: dict[str, float], changes: list[FamilyChange],
                     have_clocks: bool, ratios: dict[int, float]) -> list[_Candidate]:
    straggler = inc.waits.straggler is not None
    late = None if straggler else _late_group(inc)
    comm_parts = ("comm_transfer_us",) if straggler or late else (
        "comm_transfer_us", "comm_wait_us")
    amounts: dict[str, str | tuple[str, ...]] = {
        "idle_input_us": "idle_input_us", "idle_host_us": "idle_host_us",
        "memory_us": "memory_us", "comm": comm_parts, "compute_us": "compute_us",
        "idle_other_us": "idle_other_us"}
    if late is not None:  # the others' waiting is the late ranks' input or host time
        amounts[late.part] = (late.part, "comm_wait_us")

    def of(values: dict[str, float], key: str) -> float:
        keys = amounts[key]
        return sum(values.get(k, 0.0) for k in ((keys,) if isinstance(keys, str) else keys))

    out = []
    step = now["step"]
    grown = now["step"] - before["step"] if before else 0.0
    for key in amounts:
        if before:
            g = of(growth, key)
            if g <= 0:
                continue
            share = g / grown
            if share < MIN_PART_SHARE:
                continue
            conf = max(0.2, min(0.85, 0.3 + 0.55 * share))
            what = (f"{key.removesuffix('_us')} grew {_ms(of(before, key))} -> "
                    f"{_ms(of(now, key))} per step, {share:.0%} of the step's growth "
                    f"({_ms(before['step'])} -> {_ms(step)})")
        else:
            if key not in SHARE_THRESHOLDS:
                continue
            share = of(now, key) / step
            limit = SHARE_THRESHOLDS[key]
            if share < limit:
                continue
            conf = 0.5 + 0.3 * min(1.0, share / limit - 1)
            what = f"{key.removesuffix('_us')} takes {share:.0%} of the mean step " \
                   f"({_ms(of(now, key))} of {_ms(step)})"
        if key == "compute_us":
            out.append(_compute_candidate(inc, what, conf, changes, have_clocks, ratios))
        elif late is not None and key == late.part:
            out.append(_late_candidate(inc, late, what, conf))
        else:
            out.append(_part_candidate(inc, key, what, conf, changes, bool(before)))
    if not before and inc.waits.straggler is None:
        out.append(_slow_compute_rank(inc, have_clocks))
    return [c for c in out if c is not None]


def _late_candidate(inc: _Run, late: _LateGroup, what: str, conf: float) -> _Candidate:
    category = "input_stall" if late.part == "idle_input_us" else "host_overhead"
    waits_for = "their input (DataLoader)" if category == "input_stall" else "their host"
    where = f" on {late.host}" if late.host else ""
    evidence = (_input_evidence if category == "input_stall" else _host_evidence)(inc, category)
    return _Candidate(category, conf, (
        f"{_ranks_text(late.ranks)}{where} wait for {waits_for} {_ms(late.extra_us)} per step "
        f"longer than the other ranks, which wait for them in collectives: {what} "
        "(their waiting included)"), evidence, node=late.host)


def _no_clocks(have_clocks: bool, who: str) -> str:
    return (f"why {who} slow: DCGM shows no throttling on the traced GPUs (clocks capped by "
            "settings, a different GPU model or software are left)" if have_clocks else
            f"why {who} slow: no DCGM clock metrics to confirm GPU throttling")


def _slow_rank_candidate(inc: _Run, idx: int, conf: float, why: str,
                         have_clocks: bool) -> _Candidate:
    tl, r = inc.timelines[idx], inc.breakdown.ranks[idx]
    return _Candidate("straggler", conf, f"rank {r.rank} is slower than its peers: {why}",
                      [_span_event(tl, r, r.median_step, f"compute "
                                   f"{_ms(r.mean_parts['compute_us'])} per step", "straggler")],
                      rank=r.rank, node=r.host,
                      unknowns=(_no_clocks(have_clocks, f"rank {r.rank}'s kernels are"),))


def _slow_compute_rank(inc: _Run, have_clocks: bool) -> _Candidate | None:
    """Without a baseline or collective waits: the one rank computing longer than its peers."""
    slow = [(i, x) for i, x in _compute_excess(inc).items() if x >= COMPUTE_EXCESS]
    if len(slow) != 1 or len(inc.timelines) < 2:
        return None
    i, x = slow[0]
    return _slow_rank_candidate(inc, i, 0.5, f"it computes {x:.2f}x its peers' median per "
                                "step (no collective waits to confirm that the others wait)",
                                have_clocks)


def _compute_candidate(inc: _Run, what: str, conf: float, changes: list[FamilyChange],
                       have_clocks: bool, ratios: dict[int, float]) -> _Candidate | None:
    slower = [c for c in changes if c.kind == "compute" and c.ratio > SLOWER_PER_CALL]
    slow_ranks = [i for i, x in ratios.items() if x > SLOWER_PER_CALL]
    if not slower or not slow_ranks:
        return _Candidate("unknown", min(conf, 0.35), f"compute grew but the same kernels are "
                          f"not slower per call (more or other kernels: the workload "
                          f"changed): {what}", [])
    text = ", ".join(f"{c.family} x{c.ratio:.2f}" for c in slower[:3])
    if len(slow_ranks) == 1 and len(inc.timelines) > 1:
        i = slow_ranks[0]
        straggler = inc.waits.straggler
        if straggler is not None and straggler.path == inc.breakdown.ranks[i].path:
            return None  # the straggler candidate says it, with the waits
        return _slow_rank_candidate(inc, i, min(conf, 0.6), f"its kernels take "
                                    f"{ratios[i]:.2f}x their baseline time per call, the other "
                                    f"ranks' do not: {what}", have_clocks)
    where = ("every rank" if len(slow_ranks) == len(inc.timelines) else "ranks " + ", ".join(
        str(inc.breakdown.ranks[i].rank) for i in slow_ranks))
    # the slow ranks all ran on one host: that host is where it is, whatever the cause
    hosts = {inc.breakdown.ranks[i].host for i in slow_ranks}
    return _Candidate("gpu_throttling", min(conf, 0.45), f"the same kernels run slower per "
                      f"call on {where} ({text}): {what}", [],
                      node=next(iter(hosts)) if len(hosts) == 1 else None,
                      unknowns=(_no_clocks(have_clocks, "the kernels are"),))


def _part_candidate(inc: _Run, key: str, what: str, conf: float, changes: list[FamilyChange],
                    with_base: bool) -> _Candidate | None:
    if key == "idle_input_us":
        return _Candidate("input_stall", conf, f"the GPU waits for input: {what}",
                          _input_evidence(inc, "input_stall"))
    if key == "idle_host_us":
        return _Candidate("host_overhead", conf, f"the GPU waits for the host: {what}",
                          _host_evidence(inc, "host_overhead"))
    if key == "memory_us":
        # the copy that grew most (with a baseline) or takes most time: host-to-device copies
        # bring the batch in (input); device-to-host ones are the host reading results back
        grew = [c.family for c in changes if c.kind == MEMCPY
                and c.incident_mean_us > c.baseline_mean_us]
        most = [f.family for f in pooled(r.kernel_families for r in inc.breakdown.ranks)
                if f.kind == MEMCPY]
        top = (grew or most or ["no copy"])[0]
        cat = "input_stall" if "HtoD" in top else "host_overhead"
        return _Candidate(cat, conf * 0.8, f"memory copies on the critical path ({top} "
                          f"most): {what}", _memory_evidence(inc, cat))
    if key == "comm":
        nccl = [c for c in changes if c.kind == COMM]
        per_call = (": " + ", ".join(f"{c.family} x{c.ratio:.2f} per call" for c in nccl[:2])
                    if nccl else "")
        return _Candidate("communication", conf if with_base else conf * 0.9,
                          f"collectives take longer on every rank, no rank stands out: "
                          f"{what}{per_call}", _comm_evidence(
                              inc, "communication", "exposed transfer {transfer}, waiting {wait}"))
    return _Candidate("unknown", min(conf, 0.35), f"the GPU waits on queued work's "
                      f"dependencies (events, other streams): {what}", [])
