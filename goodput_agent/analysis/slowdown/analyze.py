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
  record_levels.AMBIGUOUS without DCGM metrics, with the unknown said: a GPU shared with
  another process shows the same numbers; 0.45 when DCGM shows no throttling), a straggler
  when only one rank's
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

Modules: slowdown_run (a run's ranks, the evidence, the thresholds), slowdown_candidates (the
causes); this one breaks the runs down and picks the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping

from goodput_agent.analysis.abstention import NOTHING_TO_EXPLAIN, UNEXPLAINED, UNREAD
from goodput_agent.parsing.kineto.model import Trace
from goodput_agent.parsing.openmetrics import Series

from .candidates import part_candidates, straggler_candidates, throttle_candidates
from .kernel_families import diff, per_call_ratio, pooled
from .model import PARTS, Breakdown, FamilyChange, SlowdownVerdict
from .run import COMPUTE_EXCESS, MIN_SLOWDOWN, SHARE_THRESHOLDS, Run, ms
from .throttle import ThrottleFinding, throttle_findings

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


def analyse(incident: list[Trace], baseline: list[Trace] | None = None,
            series: list[Series] | None = None,
            series_paths: Mapping[str, str] | None = None) -> tuple[Breakdown, SlowdownVerdict]:
    """The breakdown of both runs and the verdict. `series`: DCGM series (any others are
    ignored); `series_paths`: metric name -> the file it came from, for evidence."""
    gpu_traces = [t for t in incident if t.gpu]
    base_traces = [t for t in baseline or [] if t.gpu]
    inc = Run.of("incident", gpu_traces)
    base = Run.of("baseline", base_traces) if base_traces else None
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
        return breakdown, SlowdownVerdict(category="unknown", confidence=UNREAD, summary=why,
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


def _decide(inc: Run, base: Run | None, throttled: list[ThrottleFinding],
            changes: list[FamilyChange], have_clocks: bool,
            ratios: dict[int, float]) -> SlowdownVerdict:
    now = inc.parts()
    before = base.parts() if base else {}
    grown = now["step"] - before["step"] if before else 0.0
    if before and grown < MIN_SLOWDOWN * before["step"]:
        return SlowdownVerdict(category="unknown", confidence=NOTHING_TO_EXPLAIN, summary=(
            f"the mean step is {ms(now['step'])} against the baseline's {ms(before['step'])} "
            f"({grown / before['step']:+.0%}): no slowdown to explain"))
    growth = {p: now[p] - before.get(p, 0.0) for p in PARTS} if before else {}
    candidates = [*throttle_candidates(inc, throttled, growth, grown, changes),
                  *straggler_candidates(inc, growth, grown, have_clocks),
                  *part_candidates(inc, now, before, growth, changes, have_clocks, ratios)]
    if not candidates:
        shares = ", ".join(f"{p.removesuffix('_us')} {now[p] / now['step']:.0%}" for p in PARTS
                           if now[p] > 0)
        return SlowdownVerdict(category="unknown", confidence=UNEXPLAINED, summary=(
            "no cause stands out" + (" and there is no baseline to compare with" if not before
                                     else "") + f": mean step {ms(now['step'])} ({shares})"))
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
