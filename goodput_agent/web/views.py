"""What the pages show, read from a ledger (read-only): plain dicts for the templates."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import statuses_of
from goodput_agent.ledger.records import (
    claims_citing,
    evidence_row,
    investigation_row,
    tool_call_row,
)
from goodput_agent.report import Report


def report_of(conclusion: dict[str, Any] | None) -> Report | None:
    if not conclusion or not conclusion.get("report_json"):
        return None
    try:
        return Report.model_validate_json(conclusion["report_json"])
    except ValidationError:
        return None


def picture_paths(report: Report | None, ledger_path: Path, inv_id: str,
                  cache: Path | None = None) -> list[Path]:
    """The investigation's SVG pictures: those its stored report lists that still exist. A
    ledger written before reports listed their pictures stored none: for those, the default
    folder `goodput investigate` wrote them to (reports/<id>/ beside the ledger). A latency
    report with no picture files left is drawn again from its stored numbers into `cache`."""
    listed = [Path(p) for p in (report.pictures if report else [])]
    if not listed:  # an older ledger's report
        folder = ledger_path.parent / "reports" / inv_id
        listed = sorted(folder.glob("*.svg")) if folder.is_dir() else []
    paths = [p for p in dict.fromkeys(listed) if p.suffix == ".svg" and p.is_file()]
    if not paths and report is not None and report.latency and cache is not None:
        from goodput_agent.pictures.latency_charts import draw_latency_pictures

        paths = draw_latency_pictures(report.latency, cache / inv_id)
    return paths


def action_statuses(ledger: Ledger, inv_id: str) -> dict[int, str]:
    """Each action's status from its approval rows."""
    return dict(statuses_of(ledger, [inv_id])[inv_id])


def investigation_list(ledger: Ledger, limit: int = 200) -> list[dict[str, Any]]:
    rows = ledger.investigations(limit)
    statuses = statuses_of(ledger, [row["id"] for row in rows])
    out = []
    for row in rows:
        counts = Counter(statuses[row["id"]].values())
        out.append({**row, "actions": ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                    or "none"})
    return out


def _ids(text: str | None) -> list[int]:
    try:
        return [int(i) for i in json.loads(text or "[]")]
    except (ValueError, TypeError):
        return []


def investigation_view(ledger: Ledger, inv_id: str) -> dict[str, Any] | None:
    rec = ledger.investigation(inv_id)
    if rec is None:
        return None
    evidence = {e["id"]: e for e in rec.evidence}
    claims = []
    for c in rec.claims:
        claims.append({**c, "supporting_ev": [evidence[i] for i in _ids(c["supporting"])
                                              if i in evidence],
                       "contradicting_ev": [evidence[i] for i in _ids(c["contradicting"])
                                            if i in evidence]})
    statuses = action_statuses(ledger, inv_id)
    actions = [{**a, "status_now": statuses.get(a["id"], a["status"]),
                "args": json.loads(a["args_json"] or "{}")} for a in rec.actions]
    tool_calls = [{**t, "summary": _summary(t["output_summary"])} for t in rec.tool_calls]
    report = report_of(rec.conclusion)
    return {"inv": rec.investigation, "conclusion": rec.conclusion, "report": report,
            "claims": claims, "evidence": rec.evidence, "actions": actions,
            "tool_calls": tool_calls}


def _summary(text: str | None) -> str:
    try:
        value = json.loads(text or "null")
    except ValueError:
        return text or ""
    return "" if value is None else json.dumps(value, sort_keys=True)


def evidence_view(ledger: Ledger, inv_id: str, ev_id: int) -> dict[str, Any] | None:
    found = evidence_row(ledger, ev_id, inv_id)
    inv = investigation_row(ledger, inv_id)
    if found is None or inv is None:
        return None
    call = tool_call_row(ledger, found.tool_call_id) if found.tool_call_id is not None else None
    return {"ev": found.model_dump(), "claims": claims_citing(ledger, inv_id, ev_id),
            "call": call.model_dump() if call else None, "inv": inv.model_dump()}
