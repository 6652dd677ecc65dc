"""Why did training slow down: the verdict from per-step breakdowns, cross-rank waits, kernel
families and DCGM clocks.

With a baseline run, the change of the mean step is split into the parts (they sum to the step,
so the deltas sum to the slowdown) and the part that grew most names the cause. Without one,
the incident's own shares decide (thresholds below). Order of precedence: a throttled GPU that
drives a traced rank (DCGM says why its kernels are slow) > a straggler rank (the others wait
for it in collectives) > the part that grew most.
"""

from __future__ import annotations

import statistics

from goodput_agent.analysis.kernel_families import diff
from goodput_agent.analysis.slowdown_model import (
    PARTS,
    Breakdown,
    FamilyChange,
    KernelFamily,
    RankBreakdown,
    RunBreakdown,
    SlowdownVerdict,
)
from goodput_agent.analysis.throttle import ThrottleFinding, throttle_findings
from goodput_agent.analysis.trace_ranks import RunWaits, Straggler, collective_waits
from goodput_agent.analysis.trace_steps import rank_breakdown
from goodput_agent.events import Event, EventKind, Locator, Role
from goodput_agent.parsing.openmetrics import Series
from goodput_agent.parsing.trace_model import Trace

# without a baseline: the share of the step a part must take to be called the cause
SHARE_THRESHOLDS = {"idle_input_us": 0.15, "idle_host_us": 0.20, "comm": 0.25}
MIN_SLOWDOWN = 0.05  # a step this much slower than baseline is a slowdown worth explaining
CAUSE_OF_PART = {"idle_input_us": "input_stall", "idle_host_us": "host_overhead",
                 "comm": "communication", "compute_us": "gpu_throttling",
                 "memory_us": "host_overhead", "idle_other_us": "communication"}
NOTES = [
    "One clock per rank: each step is its ProfilerStep window on the trace clock; GPU ops of the "
    "rank's device (all streams) are clipped to it and counted once in the order compute > "
    "communication > memory > idle, so the seven parts sum to the step time.",
    "comm_wait: time inside collectives beyond the same collective's duration on the rank that "
    "arrived last (the fastest one), i.e. waiting for other ranks; comm_transfer is the rest of "
    "the exposed communication.",
    "Idle gaps: when the op after the gap was launched after the gap began, the GPU waited for "
    "the host (idle_input under a DataLoader __next__ span, else idle_host); otherwise the op "
    "was queued behind a dependency (idle_other).",
]


def _run(label: str, traces: list[Trace]) -> tuple[RunBreakdown, RunWaits]:
    waits = collective_waits(traces)
    ranks = [rank_breakdown(t, waits.waits_of(t.meta.path)) for t in traces]
    return RunBreakdown(label=label, ranks=ranks), waits


def _mean_parts(run: RunBreakdown) -> dict[str, float]:
    ranks = [r for r in run.ranks if r.mean_parts]
    if not ranks:
        return {}
    parts = {p: statistics.fmean(r.mean_parts[p] for r in ranks) for p in PARTS}
    parts["comm"] = parts["comm_transfer_us"] + parts["comm_wait_us"]
    parts["step"] = sum(parts[p] for p in PARTS)
    return parts


def _span_event(rank: RankBreakdown, text: str, category: str) -> Event:
    m = rank.median_step
    step = f"step {m.step} @ {m.start_us:.0f} us, {m.step_us / 1000:.1f} ms" if m else "no step"
    span = f"{step}: {text}"
    return Event(kind=EventKind.trace_span, role=Role.primary, category=category,
                 node=rank.host, rank=rank.rank, summary=text,
                 locator=Locator(path=rank.path, line_start=0, line_end=0, span=span),
                 excerpt=span)


def _ms(us: float) -> str:
    return f"{us / 1000:.1f} ms"


def _families(run: RunBreakdown) -> list:
    return [f for r in run.ranks for f in r.kernel_families]


def _kernel_changes(base: RunBreakdown | None, inc: RunBreakdown) -> list[FamilyChange]:
    if base is None:
        return []

    def pooled(run: RunBreakdown) -> list[KernelFamily]:
        acc: dict[tuple[str, str], list[float]] = {}
        for f in _families(run):
            a = acc.setdefault((f.family, f.kind), [0, 0.0])
            a[0] += f.calls
            a[1] += f.total_us
        return [KernelFamily(family=k[0], kind=k[1], calls=int(c), total_us=t, mean_us=t / c)
                for k, (c, t) in acc.items() if c]
    return diff(pooled(base), pooled(inc))


def _rank_of(inc: RunBreakdown, node: str | None, gpu: str | None,
             traces: list[Trace]) -> RankBreakdown | None:
    """The traced rank that drives the throttled GPU (same host, same device index)."""
    def short(h: str | None) -> str:
        return (h or "").split(".")[0].lower()
    for t, r in zip(traces, inc.ranks, strict=True):
        if short(t.meta.host) != short(node) or not t.gpu:
            continue
        devices = {op.device for op in t.gpu}
        if gpu is None or (gpu.isdigit() and int(gpu) in devices):
            return r
    return None


def analyse(incident: list[Trace], baseline: list[Trace] | None = None,
            series: list[Series] | None = None,
            metrics_path: str = "metrics") -> tuple[Breakdown, SlowdownVerdict]:
    gpu_traces = [t for t in incident if t.gpu]
    base_traces = [t for t in baseline or [] if t.gpu]
    inc, waits = _run("incident", gpu_traces)
    base = _run("baseline", base_traces)[0] if base_traces else None
    breakdown = Breakdown(incident=inc, baseline=base, notes=NOTES)
    if not gpu_traces:
        return breakdown, SlowdownVerdict(
            category="unknown", confidence=0.0,
            summary="no trace has GPU kernels: nothing to break down",
            unknowns=[f"{t.meta.path}: no GPU kernels (CPU-only trace)" for t in incident])
    findings = [f for f in throttle_findings(series or [], default_path=metrics_path)
                if f.throttled]
    changes = _kernel_changes(base, inc)
    verdict = _decide(inc, base, waits.straggler, findings, changes, gpu_traces)
    verdict.kernel_changes = changes[:10]
    if base is None:
        verdict.unknowns.append("no baseline run in the bundle (a traces/baseline/ folder): "
                                "the cause is judged from the incident's own step shares")
    if not series:
        verdict.unknowns.append("no DCGM clock metrics: GPU throttling cannot be confirmed")
    return breakdown, verdict


def _decide(inc: RunBreakdown, base: RunBreakdown | None, straggler: Straggler | None,
            throttled: list[ThrottleFinding], changes: list[FamilyChange],
            traces: list[Trace]) -> SlowdownVerdict:
    now, before = _mean_parts(inc), _mean_parts(base) if base else {}
    alternatives: list[tuple[str, float, str]] = []
    for f in throttled:
        rank = _rank_of(inc, f.node, f.gpu, traces)
        if rank is None:
            continue
        slower = [c for c in changes if c.kind == "compute" and c.ratio > 1.1]
        own = rank.mean_parts.get("compute_us", 0.0)
        peers = [r.mean_parts.get("compute_us", 0.0) for r in inc.ranks if r is not rank]
        excess = own / statistics.median(peers) if peers and statistics.median(peers) else 1.0
        conf = 0.9 if (straggler and straggler.rank == rank.rank) or excess > 1.1 else 0.7
        why = (f"GPU {f.gpu} on {f.node} throttles ({', '.join(f.reasons) or 'low SM clock'}"
               + (f", SM clock at {f.clock_ratio:.0%} of peak" if f.clock_ratio else "") + "); "
               f"rank {rank.rank}'s compute is {excess:.2f}x its peers'"
               + (f"; slowest families: {', '.join(c.family for c in slower[:3])}"
                  if slower else ""))
        if straggler and straggler.rank == rank.rank:
            why += f"; the other ranks wait {straggler.others_wait_share:.0%} of each step for it"
            alternatives.append(("straggler", 0.3, "the straggler is explained by its GPU's "
                                 "throttling (DCGM clock-event reasons)"))
        return SlowdownVerdict(
            category="gpu_throttling", confidence=conf, summary=why, rank=rank.rank,
            node=rank.host or f.node, gpu=f.gpu, alternatives=alternatives,
            evidence=[*f.evidence, _span_event(rank, f"compute {_ms(own)} per step vs peers' "
                                               f"median {_ms(statistics.median(peers or [own]))}",
                                               "gpu_throttling")])
    if straggler is not None:
        rank = next(r for r in inc.ranks if r.path == straggler.path)
        step = sum(rank.mean_parts.get(p, 0.0) for p in PARTS) or 1.0
        for part in ("idle_input_us", "idle_host_us"):
            if rank.mean_parts.get(part, 0.0) / step >= SHARE_THRESHOLDS[part]:
                # the slowest rank is slow because it waits for input / its host: that is the
                # cause, and the ranks waiting for it are its consequence
                straggler = None
                break
    if straggler is not None:
        why = (f"rank {straggler.rank} is a straggler: in {straggler.consistency:.0%} of "
               f"{straggler.steps} aligned steps it waits least in collectives "
               f"({straggler.own_wait_share:.0%} of the step) while the other ranks wait "
               f"{straggler.others_wait_share:.0%} of each step for it")
        unknowns = [] if throttled else ["why this rank is slow (no DCGM throttling on its GPU "
                                         "in the bundle): check its GPU and host"]
        conf = min(0.9, 0.55 + 0.4 * straggler.consistency)
        evidence = [_span_event(rank, f"waits {straggler.own_wait_share:.0%} of the step in "
                                "collectives", "straggler")]
        evidence += [_span_event(r, f"waits {_ms(r.mean_parts['comm_wait_us'])} per step in "
                                 "collectives for the straggler", "straggler")
                     for r in inc.ranks[:3] if r is not rank and r.mean_parts]
        return SlowdownVerdict(category="straggler", confidence=conf, summary=why,
                               rank=straggler.rank, node=straggler.host, evidence=evidence,
                               unknowns=unknowns)
    return _by_parts(inc, now, before, changes)


def _worst(inc: RunBreakdown, part: str) -> RankBreakdown:
    key = ("comm_transfer_us", "comm_wait_us") if part == "comm" else (part,)
    return max((r for r in inc.ranks if r.mean_parts),
               key=lambda r: sum(r.mean_parts[k] for k in key))


def _by_parts(inc: RunBreakdown, now: dict[str, float], before: dict[str, float],
              changes: list[FamilyChange]) -> SlowdownVerdict:
    candidates = ("idle_input_us", "idle_host_us", "comm", "compute_us", "memory_us",
                  "idle_other_us")
    if before:
        growth = {p: now[p] - before[p] for p in candidates}
        slower = (now["step"] - before["step"]) / before["step"] if before["step"] else 0.0
        best = max(growth, key=growth.__getitem__)
        if slower < MIN_SLOWDOWN or growth[best] <= 0:
            return SlowdownVerdict(category="unknown", confidence=0.2, summary=(
                f"the mean step is {slower:+.0%} against the baseline: no slowdown to explain"))
        share = growth[best] / (now["step"] - before["step"])
        why = (f"the mean step grew {_ms(before['step'])} -> {_ms(now['step'])} ({slower:+.0%}); "
               f"{best.removesuffix('_us')} grew {_ms(before[best])} -> {_ms(now[best])}, "
               f"{share:.0%} of the growth")
        conf = max(0.4, min(0.9, 0.35 + 0.55 * share))
        runners = sorted(((growth[p], p) for p in candidates if p != best), reverse=True)[:2]
        alternatives = [(CAUSE_OF_PART[p], round(max(0.05, min(0.5, g / max(growth[best], 1e-9)
                                                               * 0.4)), 2),
                         f"{p.removesuffix('_us')} grew only {_ms(g)} per step")
                        for g, p in runners if CAUSE_OF_PART[p] != CAUSE_OF_PART[best]]
    else:
        shares = {p: now[p] / now["step"] for p in candidates if now["step"]}
        hits = [(shares[p] / SHARE_THRESHOLDS[p], p) for p in SHARE_THRESHOLDS
                if shares.get(p, 0) >= SHARE_THRESHOLDS[p]]
        if not hits:
            return SlowdownVerdict(category="unknown", confidence=0.2, summary=(
                "no part of the step stands out (compute "
                f"{shares.get('compute_us', 0):.0%} of the step) and there is no baseline to "
                "compare with"))
        best = max(hits)[1]
        why = (f"{best.removesuffix('_us')} takes {shares[best]:.0%} of the mean step "
               f"({_ms(now[best])} of {_ms(now['step'])})")
        conf = 0.6
        alternatives = []
    category = CAUSE_OF_PART[best]
    unknowns = []
    if category == "gpu_throttling":
        slower_k = [c for c in changes if c.kind == "compute" and c.ratio > 1.05]
        why += ("; the same kernels run slower per call: " + ", ".join(
            f"{c.family} x{c.ratio:.2f}" for c in slower_k[:3])) if slower_k else ""
        conf = min(conf, 0.45)
        unknowns.append("slower kernels on every rank with no DCGM clock metrics to confirm "
                        "throttling")
    if category == "communication":
        nccl = [c for c in changes if c.kind == "comm"]
        if nccl:
            why += "; collectives per call: " + ", ".join(
                f"{c.family} x{c.ratio:.2f}" for c in nccl[:2])
        why += "; no rank stands out (every rank's transfer time grew)"
    rank = _worst(inc, best)
    text = f"{best.removesuffix('_us')} {_ms(now[best])} per step (mean over ranks)"
    return SlowdownVerdict(category=category, confidence=round(conf, 2), summary=why,
                           evidence=[_span_event(rank, text, category)],
                           alternatives=alternatives, unknowns=unknowns)
