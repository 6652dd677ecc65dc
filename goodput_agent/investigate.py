"""The facade: investigate a bundle with a planner, record everything in the ledger."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from goodput_agent.bundle import open_bundle
from goodput_agent.core.incident import IncidentSpec
from goodput_agent.core.parallel import Runner
from goodput_agent.kinds import choose_kind
from goodput_agent.ledger import Ledger
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.pictures.report_pictures import PictureHook, draw_report_pictures
from goodput_agent.planner.loop import run_investigation
from goodput_agent.planner.offline import PLAYBOOK_FORMATS, OfflinePlanner
from goodput_agent.report import Report
from goodput_agent.toolkit import ToolContext


def investigate_bundle(path: Path, ledger: Ledger, kind: str | None = None,
                       ignore: tuple[str, ...] = (),
                       progress: Callable[[int, int], None] | None = None,
                       pictures_dir: Path | None = None, claude: Any = None,
                       runner: Runner | None = None,
                       on_model_stats: Callable[[Any], None] | None = None) -> Report:
    """`claude`: a planner.claude_config.ClaudeSettings to have Claude plan (else offline);
    `runner`: where the per-file work runs (goodput_agent.core.parallel; None: this machine);
    `on_model_stats`: told a model-planned run's turns, tool calls, tokens and seconds."""
    with open_bundle(path, ignore) as bundle:
        bundle.runner = runner
        inv = bundle.inventory
        if kind is None:
            choice = choose_kind(inv)
            kind = choice.kind
            if choice.note:  # every report carries the inventory's missing evidence
                inv.missing.append(f"missing evidence: {choice.note}")
        chosen = kind
        planner = OfflinePlanner(chosen, {"latency_metrics": _latency_args(inv.incident)})
        default = {"failure": f"why did {inv.incident.job or 'this job'} fail?",
                   "slowdown": "why did training slow down?",
                   "latency": "why did inference latency rise?"}[chosen]
        question = inv.incident.question or default
        ctx = ToolContext(bundle=bundle, progress=progress)
        pictures = picture_hook(ledger, pictures_dir, bundle.root)
        # read at the end: files that fail to parse join `unread` during the run
        if claude is not None:
            from goodput_agent.planner.openai_compat import investigate_with_model

            report = investigate_with_model(
                claude, ctx, ledger, question=question, kind=chosen, target=str(path),
                unread=lambda: {u.path: u.reason for u in bundle.inventory.unread},
                pictures=pictures, on_stats=on_model_stats)
            if report is not None:
                return report
        bundle.read_ahead(PLAYBOOK_FORMATS.get(chosen, ()), progress)
        return run_investigation(
            planner, ctx, ledger, question=question, kind=chosen, target=str(path),
            unread=lambda: {u.path: u.reason for u in bundle.inventory.unread},
            pictures=pictures)


def _pictures_dir(ledger: Ledger, report: Report, chosen: Path | None) -> Path:
    """Pictures go next to the ledger that holds the report, one folder per investigation."""
    return chosen or ledger.path.parent / "reports" / (report.investigation_id or "latest")


def picture_hook(ledger: Ledger, pictures_dir: Path | None,
                 bundle_root: Path | None = None) -> PictureHook:
    """Draws a report's pictures when its conclusion is recorded (the stored report lists them)."""
    return lambda report: draw_report_pictures(
        report, _pictures_dir(ledger, report, pictures_dir), bundle_root)


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
    return run_investigation(planner, ToolContext(metrics=source), ledger, question=question,
                             kind="latency", target=source.name, unread=dict,
                             pictures=picture_hook(ledger, pictures_dir))


def exit_code(report: Report) -> int:
    return 3 if report.root_cause.category == "unknown" else 0
