"""`goodput eval --suite fleet`: generate the seeded fleet history (evals/fleet_generator.py),
run `goodput fleet` over it, and score the named repeat offenders against the planted ones —
beside the hurried engineer's baseline, who blames the nodes with the most failures (as many
as were planted) — and the GPU-hours by cause against the planted totals."""

from __future__ import annotations

import tempfile
import time
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from goodput_agent.accounting.fleet import fleet_report
from goodput_agent.evals.fleet_generator import START, FleetPlan, generate_fleet
from goodput_agent.ledger import Ledger

BASELINE = "blame the nodes with the most attributed failures (as many as were planted)"


class CauseScore(BaseModel):
    category: str
    planted_gpu_h: float
    measured_gpu_h: float
    relative_error: float


class Missed(BaseModel):
    node: str
    multiplier: float
    failures: int
    expected: float | None
    adjusted_p: float | None


class FleetScores(BaseModel):
    jobs: int
    nodes: int
    planted: list[str]
    named: list[str]
    precision: float
    recall: float
    busy_named: list[str]  # healthy busy nodes wrongly named
    # healthy nodes a count threshold alone (>= 3 failures on >= 2 jobs) would have named
    healthy_over_minimum: int
    healthy_with_failures: int  # healthy nodes with at least one (coincidental) failure
    missed: list[Missed]
    baseline: str = BASELINE
    baseline_precision: float
    baseline_recall: float
    causes: list[CauseScore]
    max_cause_error: float
    generate_s: float
    fleet_s: float


def _pr(named: set[str], planted: set[str]) -> tuple[float, float]:
    hit = len(named & planted)
    return (hit / len(named) if named else 1.0), (hit / len(planted) if planted else 1.0)


def score_fleet(plan: FleetPlan | None = None, workdir: Path | None = None) -> FleetScores:
    plan = plan or FleetPlan()
    with tempfile.TemporaryDirectory(prefix="goodput-fleet-") as tmp:
        out = workdir or Path(tmp)
        t0 = time.perf_counter()
        truth = generate_fleet(out, plan)
        t1 = time.perf_counter()
        with Ledger(Path(truth.ledger), read_only=True) as ledger:
            until = START + timedelta(days=plan.days + 1)  # after every generated job
            report = fleet_report(ledger, until=until, sacct=Path(truth.sacct))
        t2 = time.perf_counter()
    planted, named = set(truth.offenders), set(report.offenders)
    by_count = sorted(report.nodes, key=lambda n: (-n.failures, n.node))[:len(planted)]
    precision, recall = _pr(named, planted)
    b_precision, b_recall = _pr({n.node for n in by_count}, planted)
    measured = {c.category: c.gpu_hours or 0.0 for c in report.causes}
    causes = [CauseScore(category=c, planted_gpu_h=h, measured_gpu_h=measured.get(c, 0.0),
                         relative_error=abs(measured.get(c, 0.0) - h) / h)
              for c, h in sorted(truth.badput_gpu_h.items(), key=lambda kv: -kv[1])]
    found = {n.node: n for n in report.nodes}
    missed = [Missed(node=m, multiplier=truth.multipliers[m], failures=found[m].failures
                     if m in found else 0, expected=found[m].expected if m in found else None,
                     adjusted_p=found[m].adjusted_p if m in found else None)
              for m in sorted(planted - named)]
    return FleetScores(
        jobs=truth.jobs, nodes=plan.nodes, planted=sorted(planted), named=sorted(named),
        precision=precision, recall=recall, busy_named=sorted(named & set(truth.busy)),
        missed=missed,
        healthy_over_minimum=sum(1 for n in report.nodes if n.node not in planted
                                 and n.failures >= 3 and n.jobs >= 2),
        healthy_with_failures=sum(1 for n in report.nodes if n.node not in planted),
        baseline_precision=b_precision, baseline_recall=b_recall, causes=causes,
        max_cause_error=max((c.relative_error for c in causes), default=0.0),
        generate_s=t1 - t0, fleet_s=t2 - t1)


def render_fleet_scores(s: FleetScores, console: Console) -> None:
    t = Table(title=f"Repeat offenders: {s.jobs} jobs on {s.nodes} nodes, "
                    f"{len(s.planted)} planted")
    for col in ("who", "precision", "recall"):
        t.add_column(col, justify="left" if col == "who" else "right")
    t.add_row("goodput fleet (Poisson test, BH)", f"{s.precision:.2f}", f"{s.recall:.2f}")
    t.add_row(f"baseline: {BASELINE}", f"{s.baseline_precision:.2f}",
              f"{s.baseline_recall:.2f}")
    console.print(t)
    console.print(f"named {', '.join(s.named) or 'none'}; planted {', '.join(s.planted)}; "
                  f"busy healthy nodes named: {', '.join(s.busy_named) or 'none'}; healthy "
                  f"nodes with failures: {s.healthy_with_failures}, of which "
                  f"{s.healthy_over_minimum} pass the count minimum alone")
    for m in s.missed:
        console.print(f"missed {m.node} (planted x{m.multiplier:g}): {m.failures} failures, "
                      f"{m.expected or 0:.2f} expected, adjusted p {m.adjusted_p or 1:.2g}")
    c = Table(title="GPU-hours of failed jobs by cause: measured vs planted")
    for col in ("cause", "planted", "measured", "error"):
        c.add_column(col, justify="left" if col == "cause" else "right")
    for x in s.causes:
        c.add_row(x.category, f"{x.planted_gpu_h:,.1f}", f"{x.measured_gpu_h:,.1f}",
                  f"{x.relative_error:.2%}")
    console.print(c)
    console.print(f"generated in {s.generate_s:.1f} s; goodput fleet answered in "
                  f"{s.fleet_s:.2f} s")
