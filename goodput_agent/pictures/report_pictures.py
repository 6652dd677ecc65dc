"""The pictures a report carries, drawn when the investigation records its conclusion (so the
stored report lists them): a slowdown's breakdown bars and step timeline, a latency's charts,
a failure's timeline of every node and rank."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from goodput_agent.report import Report

FAILURE_TIMELINE = "failure-timeline.svg"
# called with the finished (redacted) report just before it is recorded; returns the files
PictureHook = Callable[[Report], list[str]]


def draw_report_pictures(report: Report, out: Path, bundle_root: Path | None = None) -> list[str]:
    """Every picture the report's kind has, written under `out`; absolute paths."""
    written: list[str] = []
    if report.breakdown is not None and bundle_root is not None:
        written += draw_slowdown_pictures(report, bundle_root, out)
    if report.latency is not None and (report.latency.get("timeline")
                                       or report.latency.get("baseline")):
        from goodput_agent.pictures.latency_charts import draw_latency_pictures

        written += [str(p.resolve()) for p in draw_latency_pictures(report.latency, out)]
    if report.kind == "failure" and report.timeline:
        from goodput_agent.pictures.failure_timeline import draw_failure_timeline

        drawn = draw_failure_timeline(report, out / FAILURE_TIMELINE)
        if drawn is not None:
            written.append(str(Path(drawn).resolve()))
    return written


def draw_slowdown_pictures(report: Report, root: Path, out: Path) -> list[str]:
    """The breakdown as stacked bars, and the representative step of the rank the verdict names
    (else the first incident rank) as a timeline. Returns the files written."""
    from goodput_agent.analysis.slowdown.trace_steps import steps_of
    from goodput_agent.parsing.kineto.load import load_trace
    from goodput_agent.pictures.breakdown_bars import draw_breakdown_bars
    from goodput_agent.pictures.trace_timeline import draw_step_timeline

    b = report.breakdown
    assert b is not None
    out.mkdir(parents=True, exist_ok=True)
    written = [draw_breakdown_bars(b, out / "breakdown.svg")]
    ranks = [r for r in b.incident.ranks if r.median_step is not None]
    pick = next((r for r in ranks if r.rank is not None and r.rank == report.root_cause.rank),
                ranks[0] if ranks else None)
    if pick is not None and pick.median_step is not None:
        trace = load_trace(root / pick.path, rel_path=pick.path)
        step = next((s for s in steps_of(trace) if s.number == pick.median_step.step), None)
        if step is not None:
            written.append(draw_step_timeline(trace, step, pick.median_step,
                                              out / f"step-{step.number}-rank-{pick.rank}.svg"))
    return [str(Path(w).resolve()) for w in written]
