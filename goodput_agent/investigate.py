"""The facade: investigate a bundle with a planner, record everything in the ledger."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from goodput_agent.bundle import open_bundle
from goodput_agent.kinds import infer_kind
from goodput_agent.ledger import Ledger
from goodput_agent.planner.loop import run_investigation
from goodput_agent.planner.offline import OfflinePlanner
from goodput_agent.report import Report
from goodput_agent.toolkit import ToolContext


def investigate_bundle(path: Path, ledger: Ledger, kind: str | None = None,
                       ignore: tuple[str, ...] = (),
                       progress: Callable[[int, int], None] | None = None) -> Report:
    with open_bundle(path, ignore) as bundle:
        inv = bundle.inventory
        chosen = kind or infer_kind(inv)
        planner = OfflinePlanner(chosen)
        default = {"failure": f"why did {inv.incident.job or 'this job'} fail?",
                   "slowdown": "why did training slow down?",
                   "latency": "why did inference latency rise?"}[chosen]
        question = inv.incident.question or default
        ctx = ToolContext(bundle=bundle, progress=progress)
        # read at the end: files that fail to parse join `unread` during the run
        return run_investigation(
            planner, ctx, ledger, question=question, kind=chosen, target=str(path),
            unread=lambda: {u.path: u.reason for u in bundle.inventory.unread})


def exit_code(report: Report) -> int:
    return 3 if report.root_cause.category == "unknown" else 0
