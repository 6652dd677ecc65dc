"""`goodput verify`: re-measure after the fix and record the verdict on the actions taken (on
the investigation itself where it proposed none: its advice was carried out by hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goodput_agent.approval import store
from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import actions_of, add_investigation_event
from goodput_agent.ledger.records import conclusion_row, investigation_row
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.verify.model import VerifyResult


def measure(kind: str, report: dict, before: Path | None, after: Path | None,
            source: Any = None, window: TimeWindow | None = None) -> VerifyResult:
    from goodput_agent.verify import failure, latency, slowdown

    if source is not None:
        if kind != "latency":
            raise BadInput(f"live verification (Prometheus) is for latency investigations; "
                           f"this one is {kind}: collect an after bundle (goodput collect) and "
                           "pass --after")
        return latency.verify(report, source=source, window=window)
    assert after is not None
    if kind == "slowdown":
        return slowdown.verify(report, before, after)
    if kind == "latency":
        return latency.verify(report, after)
    return failure.verify(report, before, after)


def verify_investigation(ledger: Ledger, inv_id: str, after: Path | None,
                         before: Path | None = None, *, source: Any = None,
                         window: TimeWindow | None = None) -> tuple[VerifyResult, list[int]]:
    """The verdict, and the verification rows written: one per action executed through the gate
    (or, when none was, one per proposed action: the fix may have been applied by hand)."""
    inv = investigation_row(ledger, inv_id)
    conc = conclusion_row(ledger, inv_id)
    if inv is None or conc is None:
        raise BadInput(f"{ledger.path}: no concluded investigation {inv_id}")
    if after is None and source is None:
        raise BadInput("verify needs an after bundle (--after) or a live source (--prometheus)")
    if after is not None and not after.exists():
        raise BadInput(f"{after}: no such file or directory")
    target = Path(inv.target) if inv.target else None
    before = before or (target if target is not None and target.exists() else None)
    result = measure(inv.kind or "", conc.report, before, after, source, window)
    actions = actions_of(ledger, inv_id)
    executed = [a.id for a in actions
                if any(e.kind == "execution" and e.ok for e in store.events(ledger, a.id))]
    fields = {"ok": result.verdict == "recovered", "reason": result.verdict,
              "detail": {"after": str(after) if after else getattr(source, "name", None),
                         "before": str(before) if before else None,
                         "through_gate": bool(executed), **result.model_dump(mode="json")}}
    if not actions:  # advice only, carried out by a person: the investigation's own row
        return result, [add_investigation_event(ledger, inv_id, "verification",
                                                actor="goodput verify", **fields).id]
    rows = []
    for aid in executed or [a.id for a in actions]:
        row = store.record_event(ledger, store.action_row(ledger, aid), "verification",
                                 actor="goodput verify", **fields)
        rows.append(row.id)
    return result, rows
