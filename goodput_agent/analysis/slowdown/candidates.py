"""The slowdown's candidate causes: a throttled GPU, a straggler or late ranks, a
grown part of the step (input, host, memory, communication, compute).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from goodput_agent.analysis.record_levels import AMBIGUOUS, CONTESTED
from goodput_agent.parsing.kineto.model import COMM, MEMCPY

from .kernel_families import pooled
from .model import PARTS, FamilyChange, RankBreakdown, RunBreakdown
from .run import (
    COMPUTE_EXCESS,
    LATE_MIN_WAIT_SHARE,
    MIN_PART_SHARE,
    SHARE_THRESHOLDS,
    SLOWER_PER_CALL,
    Candidate,
    Run,
    comm_evidence,
    compute_excess,
    host_evidence,
    input_evidence,
    longest,
    memory_evidence,
    ms,
    rank_for,
    span_event,
)
from .throttle import NO_SIGN, WITH_ONE_SIGN, WITH_TWO_SIGNS, ThrottleFinding
from .trace_ranks import Straggler


def throttle_candidates(inc: Run, throttled: list[ThrottleFinding], growth: dict[str, float],
                        grown: float, changes: list[FamilyChange]) -> list[Candidate]:
    straggler = inc.waits.straggler
    excess = compute_excess(inc)
    slower = [c for c in changes if c.kind == "compute" and c.ratio > SLOWER_PER_CALL]
    compute_grew = bool(growth) and growth["compute_us"] >= 0.5 * grown > 0
    out = []
    for f in throttled:
        idx = rank_for(inc, f)
        r = inc.breakdown.ranks[idx] if idx is not None else None
        support = []
        if r is not None and straggler is not None and straggler.path == r.path:
            support.append(f"rank {r.rank} is the straggler the others wait for "
                           f"({straggler.others_wait_share:.0%} of their step)")
        if idx is not None and excess.get(idx, 1.0) >= COMPUTE_EXCESS:
            support.append(f"rank {r.rank if r else '?'} computes {excess[idx]:.2f}x its peers' "
                           "median per step")
        if compute_grew:
            support.append(f"compute grew {ms(growth['compute_us'])} per step"
                           + (": " + ", ".join(f"{c.family} x{c.ratio:.2f} per call"
                                               for c in slower[:3]) if slower else ""))
        conf = (WITH_TWO_SIGNS if len(support) >= 2 else WITH_ONE_SIGN if support else
                NO_SIGN) * (1 if r else 0.7)
        where = f"GPU {f.gpu} on {f.node}"
        summary = (f"{where} throttles ({f.describe()})"
                   + (f"; {'; '.join(support)}" if support else
                      "; the traces do not show it costing step time"))
        evidence = list(f.evidence)
        unknowns: tuple[str, ...] = ()
        if idx is not None and r is not None:
            tl = inc.timelines[idx]
            evidence.append(span_event(tl, r, r.median_step, (
                f"compute {ms(r.mean_parts['compute_us'])} per step on device {tl.device}"),
                "gpu_throttling"))
        else:
            unknowns = (f"{where} is not matched to a traced rank (no trace from that host "
                        "and device)",)
        out.append(Candidate("gpu_throttling", conf, summary, evidence,
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


def straggler_candidates(inc: Run, growth: dict[str, float], grown: float,
                         have_clocks: bool) -> list[Candidate]:
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
        evidence = (input_evidence if category == "input_stall" else host_evidence)(
            Run(inc.label, [tl], inc.waits, RunBreakdown(label=inc.label, ranks=[r])),
            category)
        return [Candidate(category, conf, (
            f"rank {s.rank} waits for {what} {ms(extra)} per step longer than its peers, and "
            f"the other ranks wait for it in collectives ({s.others_wait_share:.0%} of their "
            f"step, in {s.consistency:.0%} of {s.steps} aligned steps)"), evidence,
            rank=s.rank, node=s.host)]
    summary = (f"rank {s.rank} is a straggler: in {s.consistency:.0%} of {s.steps} aligned "
               f"steps the other ranks wait for it in collectives ({s.others_wait_share:.0%} of "
               f"their step, it waits {s.own_wait_share:.0%}); its own work takes "
               f"{ms(s.busy_us)} per step against their {ms(s.others_busy_us)}")
    if growth:
        explained = growth["comm_wait_us"] + max(0.0, s.busy_us - s.others_busy_us)
        if explained < 0.3 * grown:
            conf = 0.4
            summary += f"; but that explains only {explained / grown:.0%} of the slowdown"
    unknowns = ((f"why rank {s.rank} is slow: DCGM shows no throttling on its GPU (check its "
                 "host CPU, data loading and GPU health)",) if have_clocks else
                (f"why rank {s.rank} is slow: no DCGM clock metrics to tell a throttled GPU "
                 "from a slow host",))
    evidence = [span_event(tl, r, r.median_step, f"own work {ms(s.busy_us)} per step, waits "
                            f"{ms(r.mean_parts['comm_wait_us'])} in collectives", "straggler")]
    waiting = sorted((p for p in inc.pairs() if p[1].path != s.path),
                     key=lambda p: -p[1].mean_parts["comm_wait_us"])[:2]
    for wtl, wr in waiting:
        st = wr.median_step
        colls = [o for o in wtl.ops_in(st.start_us, st.start_us + st.step_us)
                 if o.kind == COMM] if st else []
        evidence.append(span_event(wtl, wr, st, f"waits {ms(st.comm_wait_us if st else 0)} "
                                    f"for rank {s.rank}" + longest(colls, "in "), "straggler"))
    return [Candidate("straggler", conf, summary, evidence, rank=s.rank, node=s.host,
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


def _local_cause(inc: Run, idx: int) -> tuple[str, float] | None:
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


def _late_group(inc: Run) -> _LateGroup | None:
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


def part_candidates(inc: Run, now: dict[str, float], before: dict[str, float],
                    growth: dict[str, float], changes: list[FamilyChange],
                    have_clocks: bool, ratios: dict[int, float]) -> list[Candidate]:
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
            what = (f"{key.removesuffix('_us')} grew {ms(of(before, key))} -> "
                    f"{ms(of(now, key))} per step, {share:.0%} of the step's growth "
                    f"({ms(before['step'])} -> {ms(step)})")
        else:
            if key not in SHARE_THRESHOLDS:
                continue
            share = of(now, key) / step
            limit = SHARE_THRESHOLDS[key]
            if share < limit:
                continue
            conf = 0.5 + 0.3 * min(1.0, share / limit - 1)
            what = f"{key.removesuffix('_us')} takes {share:.0%} of the mean step " \
                   f"({ms(of(now, key))} of {ms(step)})"
        if key == "compute_us":
            out.append(_compute_candidate(inc, what, conf, changes, have_clocks, ratios))
        elif late is not None and key == late.part:
            out.append(_late_candidate(inc, late, what, conf))
        else:
            out.append(_part_candidate(inc, key, what, conf, changes, bool(before)))
    if not before and inc.waits.straggler is None:
        out.append(_slow_compute_rank(inc, have_clocks))
    return [c for c in out if c is not None]


def _late_candidate(inc: Run, late: _LateGroup, what: str, conf: float) -> Candidate:
    category = "input_stall" if late.part == "idle_input_us" else "host_overhead"
    waits_for = "their input (DataLoader)" if category == "input_stall" else "their host"
    where = f" on {late.host}" if late.host else ""
    evidence = (input_evidence if category == "input_stall" else host_evidence)(inc, category)
    return Candidate(category, conf, (
        f"{_ranks_text(late.ranks)}{where} wait for {waits_for} {ms(late.extra_us)} per step "
        f"longer than the other ranks, which wait for them in collectives: {what} "
        "(their waiting included)"), evidence, node=late.host)


def _no_clocks(have_clocks: bool, who: str) -> str:
    return (f"why {who} slow: DCGM shows no throttling on the traced GPUs (clocks capped by "
            "settings, a different GPU model or software are left)" if have_clocks else
            f"why {who} slow: no DCGM clock metrics to confirm GPU throttling")


def _slow_rank_candidate(inc: Run, idx: int, conf: float, why: str,
                         have_clocks: bool) -> Candidate:
    tl, r = inc.timelines[idx], inc.breakdown.ranks[idx]
    return Candidate("straggler", conf, f"rank {r.rank} is slower than its peers: {why}",
                      [span_event(tl, r, r.median_step, f"compute "
                                   f"{ms(r.mean_parts['compute_us'])} per step", "straggler")],
                      rank=r.rank, node=r.host,
                      unknowns=(_no_clocks(have_clocks, f"rank {r.rank}'s kernels are"),))


def _slow_compute_rank(inc: Run, have_clocks: bool) -> Candidate | None:
    """Without a baseline or collective waits: the one rank computing longer than its peers."""
    slow = [(i, x) for i, x in compute_excess(inc).items() if x >= COMPUTE_EXCESS]
    if len(slow) != 1 or len(inc.timelines) < 2:
        return None
    i, x = slow[0]
    return _slow_rank_candidate(inc, i, 0.5, f"it computes {x:.2f}x its peers' median per "
                                "step (no collective waits to confirm that the others wait)",
                                have_clocks)


def _compute_candidate(inc: Run, what: str, conf: float, changes: list[FamilyChange],
                       have_clocks: bool, ratios: dict[int, float]) -> Candidate | None:
    slower = [c for c in changes if c.kind == "compute" and c.ratio > SLOWER_PER_CALL]
    slow_ranks = [i for i, x in ratios.items() if x > SLOWER_PER_CALL]
    if not slower or not slow_ranks:
        return Candidate("unknown", min(conf, 0.35), f"compute grew but the same kernels are "
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
    # without DCGM: a throttled GPU and one shared with another process show the same numbers;
    # with DCGM showing no throttling, the class is contested (capped clocks, another model)
    ceiling = CONTESTED if have_clocks else AMBIGUOUS
    return Candidate("gpu_throttling", min(conf, ceiling), f"the same kernels run slower per "
                      f"call on {where} ({text}): {what}", [],
                      node=next(iter(hosts)) if len(hosts) == 1 else None,
                      unknowns=(_no_clocks(have_clocks, "the kernels are"),))


def _part_candidate(inc: Run, key: str, what: str, conf: float, changes: list[FamilyChange],
                    with_base: bool) -> Candidate | None:
    if key == "idle_input_us":
        return Candidate("input_stall", conf, f"the GPU waits for input: {what}",
                          input_evidence(inc, "input_stall"))
    if key == "idle_host_us":
        return Candidate("host_overhead", conf, f"the GPU waits for the host: {what}",
                          host_evidence(inc, "host_overhead"))
    if key == "memory_us":
        # the copy that grew most (with a baseline) or takes most time: host-to-device copies
        # bring the batch in (input); device-to-host ones are the host reading results back
        grew = [c.family for c in changes if c.kind == MEMCPY
                and c.incident_mean_us > c.baseline_mean_us]
        most = [f.family for f in pooled(r.kernel_families for r in inc.breakdown.ranks)
                if f.kind == MEMCPY]
        top = (grew or most or ["no copy"])[0]
        cat = "input_stall" if "HtoD" in top else "host_overhead"
        return Candidate(cat, conf * 0.8, f"memory copies on the critical path ({top} "
                          f"most): {what}", memory_evidence(inc, cat))
    if key == "comm":
        nccl = [c for c in changes if c.kind == COMM]
        per_call = (": " + ", ".join(f"{c.family} x{c.ratio:.2f} per call" for c in nccl[:2])
                    if nccl else "")
        return Candidate("communication", conf if with_base else conf * 0.9,
                          f"collectives take longer on every rank, no rank stands out: "
                          f"{what}{per_call}", comm_evidence(
                              inc, "communication", "exposed transfer {transfer}, waiting {wait}"))
    return Candidate("unknown", min(conf, 0.35), f"the GPU waits on queued work's "
                      f"dependencies (events, other streams): {what}", [])
