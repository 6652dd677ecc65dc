"""Did training speed recover: step time after the fix against the incident (and the healthy
run), under comparable conditions — same world size, the same number of steps after warm-up,
the same batch when the bundles state it — as a median with a bootstrap interval, and each
phase of the step before and after (reusing the slowdown breakdown)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import yaml

from goodput_agent.analysis.slowdown.model import PART_LABELS, PARTS, RunBreakdown
from goodput_agent.verify.model import PhaseChange, VerifyResult
from goodput_agent.verify.stats import bootstrap_diff, grade

WARMUP_STEPS = 1  # the first profiled step is dropped from every run
MIN_STEPS = 3
MATERIAL = 0.10  # a phase that grows by this share of the healthy step is a regression


def job_steps(run: RunBreakdown) -> list[tuple[int, float, dict[str, float]]]:
    """Per step number after warm-up: the job's step (median over ranks, ms) and each part
    (mean over ranks, ms)."""
    by: dict[int, list] = {}
    for r in run.ranks:
        for s in r.steps:
            by.setdefault(s.step, []).append(s)
    out = []
    for number in sorted(by)[WARMUP_STEPS:]:
        ss = by[number]
        out.append((number, statistics.median(s.step_us for s in ss) / 1000,
                    {p: statistics.fmean(getattr(s, p) for s in ss) / 1000 for p in PARTS}))
    return out


def stated_batch(root: Path | None) -> Any:
    f = root / "incident.yaml" if root else None
    if f is None or not f.is_file():
        return None
    try:
        data = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return None
    return data.get("batch") if isinstance(data, dict) else None


def after_run(after: Path) -> tuple[RunBreakdown | None, list[str]]:
    from goodput_agent.bundle import open_bundle
    from goodput_agent.toolkit import ToolContext, registry

    tool = registry()["profiler_traces"]
    with open_bundle(after) as b:
        out = tool.run(ToolContext(bundle=b), tool.input_model())
    problems = [f"{p}: {why}" for p, why in out.problems.items()]
    return (out.breakdown.incident if out.breakdown else None), problems


def _median_parts(steps: list[tuple[int, float, dict[str, float]]]) -> dict[str, float]:
    return {p: statistics.median(s[2][p] for s in steps) for p in PARTS}


def verify(report: dict[str, Any], before_root: Path | None, after: Path) -> VerifyResult:
    bd = report.get("breakdown") or {}
    if not bd.get("incident"):
        return VerifyResult(kind="slowdown", verdict="incomparable", comparable=False,
                            summary="the investigation holds no step breakdown to compare with")
    before_run = RunBreakdown.model_validate(bd["incident"])
    healthy_run = RunBreakdown.model_validate(bd["baseline"]) if bd.get("baseline") else None
    after_bd, problems = after_run(after)
    if after_bd is None or not after_bd.ranks:
        return VerifyResult(kind="slowdown", verdict="incomparable", comparable=False,
                            summary=f"{after}: no profiler trace with steps after the fix",
                            notes=problems)
    b, a = job_steps(before_run), job_steps(after_bd)
    h = job_steps(healthy_run) if healthy_run else []
    conditions, why_not = [], []
    wb, wa = len(before_run.ranks), len(after_bd.ranks)
    conditions.append(f"world size (ranks traced): before {wb}, after {wa}")
    if wb != wa:
        why_not.append(f"world size differs ({wb} ranks before, {wa} after)")
    n = min(len(b), len(a))
    conditions.append(f"steps compared: {n} per run, after {WARMUP_STEPS} warm-up step(s)")
    if n < MIN_STEPS:
        why_not.append(f"too few steps after warm-up ({n} < {MIN_STEPS})")
    bb, ba = stated_batch(before_root), stated_batch(after)
    if bb is not None and ba is not None:
        conditions.append(f"batch: before {bb}, after {ba}")
        if bb != ba:
            why_not.append(f"batch differs ({bb} before, {ba} after)")
    else:
        conditions.append("batch: not stated in both bundles (incident.yaml `batch`); "
                          "taken as unchanged")
    evidence = [f"{after}/{r.path}" for r in after_bd.ranks]
    if why_not:
        return VerifyResult(kind="slowdown", verdict="incomparable", comparable=False,
                            summary="not comparable: " + "; ".join(why_not) + " — no verdict",
                            conditions=conditions, evidence=evidence, notes=problems)
    b, a = b[:n], a[:n]
    before_ms = [s[1] for s in b]
    after_ms = [s[1] for s in a]
    diff, lo, hi = bootstrap_diff(before_ms, after_ms)
    healthy_ms = statistics.median(s[1] for s in h) if h else None
    mb, ma = statistics.median(before_ms), statistics.median(after_ms)
    verdict, share = grade(mb, ma, healthy_ms, significant=lo > 0)
    pb, pa = _median_parts(b), _median_parts(a)
    ph = _median_parts(h) if h else {}
    phases = [PhaseChange(phase=PART_LABELS[p], healthy=ph.get(p), before=pb[p], after=pa[p])
              for p in PARTS]
    scale = healthy_ms or mb
    grown = [(PART_LABELS[p], pa[p] - max(pb[p], ph.get(p, 0.0))) for p in PARTS
             if pa[p] - max(pb[p], ph.get(p, 0.0)) > MATERIAL * scale]
    numbers = {"median_step_ms": {"healthy": healthy_ms, "before": mb, "after": ma},
               "improvement_ms": diff, "ci95_ms": [lo, hi], "excess_removed": share}
    text = (f"median step {mb:.1f} ms before, {ma:.1f} ms after (improvement {diff:.1f} ms, "
            f"95% CI {lo:.1f} to {hi:.1f})"
            + (f"; healthy {healthy_ms:.1f} ms, {share:.0%} of the excess removed"
               if healthy_ms is not None and share is not None else ""))
    fell = [PART_LABELS[p] for p in PARTS if pb[p] - pa[p] > MATERIAL * scale]
    if grown and fell:  # the cause went away and the time moved to another phase
        verdict = "regressed_elsewhere"
        text += (f"; {', '.join(fell)} fell, but "
                 + ", ".join(f"{name} grew by {d:.1f} ms" for name, d in grown))
    return VerifyResult(kind="slowdown", verdict=verdict, comparable=True, summary=text,
                        conditions=conditions, numbers=numbers, phases=phases,
                        evidence=evidence, notes=problems)
