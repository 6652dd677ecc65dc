"""The report of a model-planned investigation, from what the ledger holds: the verdict claim
and its evidence, the proposals, and (without a valid conclusion) the claims made so far and
why it stopped."""

from __future__ import annotations

import json
from typing import Protocol

from goodput_agent.core.redact import redact_data
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import actions_of
from goodput_agent.ledger.chat import claims_of
from goodput_agent.ledger.records import evidence_rows
from goodput_agent.pictures.report_pictures import PictureHook
from goodput_agent.planner.loop import store_report
from goodput_agent.planner.model_tools import FinishInput
from goodput_agent.planner.unknowns import with_missing_evidence
from goodput_agent.report import EvidenceItem, ProposedAction, Report, Retry, RootCause
from goodput_agent.toolkit import ToolContext


class PlannedRun(Protocol):
    """What the report reads of the model's run (model_agent.Agent is one): naming the Agent
    itself would make model_agent <-> model_report an import cycle."""

    ledger: Ledger
    inv_id: str
    ctx: ToolContext
    kind: str


def _evidence_items(ledger: Ledger, inv_id: str, ids: list[int]) -> list[EvidenceItem]:
    if not ids:
        return []
    return [EvidenceItem(id=r.id, source=r.source, locator=r.locator, excerpt=r.excerpt or "",
                         time=r.event_time.isoformat() if r.event_time else None)
            for r in evidence_rows(ledger, inv_id, ids)]


def model_report(agent: PlannedRun, f: FinishInput | None, why_unknown: str | None, question: str,
            unread: dict[str, str], pictures: PictureHook | None = None) -> Report:
    ledger, inv_id = agent.ledger, agent.inv_id
    claims = claims_of(ledger, inv_id)
    actions = [ProposedAction(id=a.id, tool=a.tool, args=a.args, mutating=a.mutating,
                              rationale=a.rationale or "")
               for a in actions_of(ledger, inv_id)]
    if f is None:
        so_far = [f"claim {c['id']} ({c['status']}, {c['confidence']:.2f}): {c['statement']}"
                  for c in claims.values()]
        root = RootCause(category="unknown", summary=why_unknown or "no conclusion",
                         confidence=0.0)
        unknowns, alternatives, retry = [why_unknown or "", *so_far], [], Retry(
            useful=None, why="no verdict")
    else:
        verdict = claims.get(f.verdict_claim_id or -1)
        ids = json.loads(verdict["supporting"]) if verdict else []
        root = RootCause(category=f.category, summary=f.summary, node=f.node, rank=f.rank,
                         gpu=f.gpu, confidence=f.confidence,
                         evidence=_evidence_items(ledger, inv_id, ids))
        unknowns, alternatives, retry = f.unknowns, f.alternatives, f.retry
    # what collection missed is said whatever the model said (or did not say)
    inv = agent.ctx.bundle.inventory if agent.ctx.bundle is not None else None
    unknowns = with_missing_evidence(unknowns, inv)
    report = Report(investigation_id=inv_id, kind=agent.kind,  # type: ignore[arg-type]
                    question=question, root_cause=root, alternatives=alternatives, retry=retry,
                    actions=actions, unread=sorted(unread), unread_reasons=unread,
                    unknowns=unknowns)
    report = Report.model_validate(redact_data(report.model_dump(by_alias=True)))
    return store_report(ledger, report, pictures)
