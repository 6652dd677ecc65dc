"""The facade: investigate a bundle with a planner, record everything in the ledger."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from goodput_agent.bundle import open_bundle
from goodput_agent.incident import IncidentSpec
from goodput_agent.kinds import infer_kind
from goodput_agent.ledger import Ledger
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.planner.loop import run_investigation
from goodput_agent.planner.offline import OfflinePlanner
from goodput_agent.report import Report
from goodput_agent.toolkit import ToolContext


def investigate_bundle(path: Path, ledger: Ledger, kind: str | None = None,
                       ignore: tuple[str, ...] = (),
                       progress: Callable[[int, int], None] | None = None,
                       pictures_dir: Path | None = None, claude: Any = None) -> Report:
    """`claude`: a planner.claude_config.ClaudeSettings to have Claude plan (else offline)."""
    with open_bundle(path, ignore) as bundle:
        inv = bundle.inventory
        chosen = kind or infer_kind(inv)
        planner = OfflinePlanner(chosen, {"latency_metrics": _latency_args(inv.incident)})
        default = {"failure": f"why did {inv.incident.job or 'this job'} fail?",
                   "slowdown": "why did training slow down?",
                   "latency": "why did inference latency rise?"}[chosen]
        question = inv.incident.question or default
        ctx = ToolContext(bundle=bundle, progress=progress)
        # read at the end: files that fail to parse join `unread` during the run
        if claude is not None:
            from goodput_agent.planner.claude import investigate as claude_investigate

            report = claude_investigate(
                claude, ctx, ledger, question=question, kind=chosen, target=str(path),
                unread=lambda: {u.path: u.reason for u in bundle.inventory.unread})
        else:
            report = run_investigation(
                planner, ctx, ledger, question=question, kind=chosen, target=str(path),
                unread=lambda: {u.path: u.reason for u in bundle.inventory.unread})
        if report.breakdown is not None:
            report.pictures = draw_slowdown_pictures(
                report, bundle.root, _pictures_dir(ledger, report, pictures_dir))
        return with_latency_pictures(report, ledger, pictures_dir)


def _pictures_dir(ledger: Ledger, report: Report, chosen: Path | None) -> Path:
    """Pictures go next to the ledger that holds the report, one folder per investigation."""
    return chosen or ledger.path.parent / "reports" / (report.investigation_id or "latest")


def with_latency_pictures(report: Report, ledger: Ledger, pictures_dir: Path | None) -> Report:
    if report.latency is not None and (report.latency.get("timeline")
                                       or report.latency.get("baseline")):
        from goodput_agent.pictures.latency_charts import draw_latency_pictures

        out = _pictures_dir(ledger, report, pictures_dir)
        report.pictures = [str(p.resolve()) for p in draw_latency_pictures(report.latency, out)]
    return report


def _window(w: object) -> dict | None:
    return {"start": w.start, "end": w.end} if hasattr(w, "start") else None


def _latency_args(spec: IncidentSpec) -> dict:
    return {"service": spec.service, "baseline": _window(spec.baseline),
            "incident": _window(spec.incident), "search": _window(spec.window)}


def investigate_prometheus(url: str, ledger: Ledger, service: str | None,
                           baseline: TimeWindow | None = None, incident: TimeWindow | None = None,
                           search: TimeWindow | None = None, timeout_s: float = 30.0,
                           pictures_dir: Path | None = None) -> Report:
    """The latency question against a live Prometheus: no bundle, queries pushed down."""
    from goodput_agent.metrics.prometheus import PrometheusSource

    given = [w for w in (search, baseline, incident) if w is not None]
    horizon = TimeWindow(start=min(w.start for w in given),
                         end=max(w.end for w in given)) if given else None
    source = PrometheusSource(url, timeout_s=timeout_s, horizon=horizon)
    args = {"service": service, **{k: w.model_dump(mode="json") if w else None for k, w in
                                   (("baseline", baseline), ("incident", incident),
                                    ("search", search))}}
    planner = OfflinePlanner("latency", {"latency_metrics": args}, with_bundle=False)
    question = f"why did inference latency of {service or 'the service'} rise?"
    report = run_investigation(planner, ToolContext(metrics=source), ledger, question=question,
                               kind="latency", target=source.name, unread=dict)
    return with_latency_pictures(report, ledger, pictures_dir)


def draw_slowdown_pictures(report: Report, root: Path, out: Path) -> list[str]:
    """The breakdown as stacked bars, and the representative step of the rank the verdict names
    (else the first incident rank) as a timeline. Returns the files written."""
    from goodput_agent.analysis.trace_steps import steps_of
    from goodput_agent.parsing.trace_load import load_trace
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


def exit_code(report: Report) -> int:
    return 3 if report.root_cause.category == "unknown" else 0
