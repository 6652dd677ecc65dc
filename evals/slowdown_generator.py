"""Generate slowdown eval cases: a seeded simulation of a DDP training job traced with the PyTorch
profiler on every rank (Kineto format, evals/kineto_writer.py), with one cause planted per case.

Every step on every rank: DataLoader `__next__` (the GPU idles), the batch copied to the GPU,
forward kernels, backward kernels on the autograd thread with gradient all-reduce buckets
launched as they become ready, the optimizer, `loss.item()`. Ranks meet at the collectives: the
k-th all-reduce ends on every rank at the last arrival plus the transfer, so a slow rank makes
everyone else's NCCL kernels long while per-rank step totals even out. Every host has its own
clock offset, every process its own profiler base time.

Causes and their variants (the plan is a table, `RECIPES`): input stalls on all ranks, in
bursts, on one node's ranks only, or through pageable H2D copies; host overhead from launch
gaps longer than the kernels, an unfused optimizer, a `.item()` sync in the forward pass, or one
CPU-bound rank; a straggler GPU (no clock metrics, or metrics that look healthy, or only its
GEMMs slower); slower all-reduce everywhere (a degraded fabric, a socket fallback, a protocol
change, one bucket that overlaps nothing); a throttled GPU with its DCGM series (HW slowdown +
thermal, power brake; old and new reason names; OpenMetrics text or Prometheus query_range
JSON). Deterministic: the same seed gives byte-identical files (gzip mtime 0).

    python -m goodput_agent.evals.slowdown_generator --out DIR --seed 7
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from goodput_agent.evals.slowdown.files import _write_run, write_dcgm
from goodput_agent.evals.slowdown.recipes import RECIPES, Recipe
from goodput_agent.evals.slowdown.simulation import _Run, simulate
from goodput_agent.evals.slowdown.spec import CATEGORIES, CaseSpec, host, node_of

__all__ = [
    "CATEGORIES",
    "CaseSpec",
    "RECIPES",
    "_write_run",
    "host",
    "node_of",
    "simulate",
    "write_dcgm",
]


class Case(BaseModel):
    case_id: str
    path: Path
    expected: dict[str, Any]
    files: list[str]
    total_bytes: int


def expected_of(spec: CaseSpec) -> dict[str, Any]:
    rank = spec.slow_rank
    node = (host(spec, node_of(spec, rank)) if rank is not None else
            host(spec, spec.culprit_node) if spec.culprit_node is not None else None)
    return {"case_id": spec.case_id, "kind": "slowdown", "category": spec.category,
            "node": node, "rank": rank,
            "gpu": str(rank % spec.per_node) if spec.category == "gpu_throttling"
            and rank is not None else None,
            "misleading": False, "notes": spec.notes, "variant": spec.variant,
            "baseline": spec.baseline, "ranks": spec.ranks, "decoys": list(spec.decoys)}


def median_steps(run: _Run) -> dict[int, float]:
    """Each rank's median ProfilerStep duration (µs)."""
    return {t.rank: statistics.median((s.end_us or s.start_us) - s.start_us for s in t.steps)
            for t in run.traces}


def _longest_step_is(run: _Run, rank: int, margin_us: float = 3.0) -> bool:
    """Whether `rank`'s median step is the longest, or within `margin_us` of it (so integer
    timestamps cannot make it so)."""
    med = median_steps(run)
    return med[rank] >= max(v for r, v in med.items() if r != rank) - margin_us


def _step_ms(run: _Run) -> float:
    steps = run.traces[0].steps
    return (steps[-1].start_us - steps[0].start_us) / max(len(steps) - 1, 1) / 1000


def _incident_yaml(spec: CaseSpec, run: _Run, before: _Run | None) -> str:
    iso = "%Y-%m-%dT%H:%M:%SZ"
    q = "why did training slow down?"
    if before is not None:
        q = (f"why did training slow down? a step took about {_step_ms(before):.0f} ms in the "
             f"good run and takes {_step_ms(run):.0f} ms now")
    return yaml.safe_dump({
        "question": q, "kind": "slowdown", "job": f"pretrain-{spec.seed % 9000 + 1000}",
        "window": {"start": (run.epoch - timedelta(minutes=15)).strftime(iso),
                   "end": (run.epoch + timedelta(minutes=5)).strftime(iso)}}, sort_keys=False)


def render_case(spec: CaseSpec, out: Path, *, with_expected: bool = True,
                blame: Callable[[Path], Any] | None = None) -> Case:
    """Write the bundle with `out` as its root. `blame(case_dir) -> (category, node, rank)`
    (the naive baseline) sets `misleading`: whether it answers differently from the key."""
    for attempt in range(50):
        rng = random.Random(spec.seed + 104_729 * attempt)
        incident = simulate(spec, True, rng)
        if spec.slow_rank is None or not _longest_step_is(incident, spec.slow_rank):
            break  # on purpose: the slow rank's own step is not the longest (DDP barrier)
    baseline = simulate(spec, False, rng) if spec.baseline else None
    files = _write_run(spec, incident, out, rng)
    if baseline is not None:
        files += _write_run(spec, baseline, out, rng)
    if spec.metrics_format != "none":
        files.append(write_dcgm(spec, incident, out, rng))
    (out / "incident.yaml").write_text(_incident_yaml(spec, incident, baseline))
    files.append("incident.yaml")
    exp = expected_of(spec)
    if blame is not None:
        cat, node, rank = blame(out)
        exp["misleading"] = cat != exp["category"] or (
            exp["rank"] is not None and rank != exp["rank"]) or (
            exp["node"] is not None and node != exp["node"])
    if with_expected:
        (out / "expected.json").write_text(json.dumps(exp, indent=2) + "\n")
        files.append("expected.json")
    total = sum((out / f).stat().st_size for f in files)
    return Case(case_id=spec.case_id, path=out, expected=exp, files=sorted(files),
                total_bytes=total)


def _plan(category: str, idx: int, recipe: Recipe, seed: int, number: int) -> CaseSpec:
    rng = random.Random(seed * 7919 + number)
    kw: dict[str, Any] = {}
    for key, val in recipe.items():
        kw[key] = round(rng.uniform(*val), 2) if isinstance(val, tuple) else val
    ranks = kw.pop("ranks", rng.choice((4, 8, 8)))
    per_node = kw.pop("per_node", min(ranks, rng.choice((2, 4, 4))))
    if kw.get("culprit_node") is True:
        kw["culprit_node"] = rng.randrange(ranks // per_node)
    if kw.get("culprit") is True or category in ("straggler", "gpu_throttling"):
        kw["culprit"] = rng.randrange(ranks)
    styles = ("gpu-node", "nid", "dgx", "a100")
    return CaseSpec(case_id=f"s{number:02d}-{category.replace('_', '-')}", category=category,
                    seed=seed * 1000 + number, ranks=ranks, per_node=per_node,
                    steps=6 if ranks <= 4 else 5, layers=3,
                    kernel_scale=kw.pop("kernel_scale", round(rng.uniform(1.0, 1.6), 2)),
                    host_style=styles[(idx + number) % len(styles)],
                    first_node=rng.choice((1, 3, 7, 12, 121)), **kw)


def plan_suite(seed: int = 7, count: int | None = None) -> list[CaseSpec]:
    """The cases, categories interleaved (s01 input_stall, s02 host_overhead, ...)."""
    depth = max(len(v) for v in RECIPES.values())
    order = [(c, i) for i in range(depth) for c in CATEGORIES if i < len(RECIPES[c])]
    if count is not None:
        order = order[:count]
    return [_plan(c, i, RECIPES[c][i], seed, n + 1) for n, (c, i) in enumerate(order)]


def generate_suite(out_dir: Path, seed: int = 7, count: int | None = None) -> list[Case]:
    from goodput_agent.evals.scorer import naive_slowdown_blame

    out_dir.mkdir(parents=True, exist_ok=True)
    cases = []
    for spec in plan_suite(seed, count):
        case_dir = out_dir / spec.case_id
        if case_dir.exists() and not (case_dir / "expected.json").exists() and \
                any(case_dir.iterdir()):
            raise FileExistsError(f"{case_dir}: not empty and not a case; not overwriting")
        cases.append(render_case(spec, case_dir, blame=naive_slowdown_blame))
    (out_dir / "suite.json").write_text(json.dumps({
        "seed": seed, "count": len(cases), "kind": "slowdown",
        "cases": [{"id": c.case_id, "category": c.expected["category"],
                   "variant": c.expected["variant"], "misleading": c.expected["misleading"],
                   "bytes": c.total_bytes} for c in cases]}, indent=2) + "\n")
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent /
                    "slowdown_cases")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--count", type=int, default=None, help="first N cases of the plan")
    a = ap.parse_args(argv)
    cases = generate_suite(a.out, a.seed, a.count)
    total = sum(c.total_bytes for c in cases)
    print(f"wrote {len(cases)} slowdown cases to {a.out} ({total / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
