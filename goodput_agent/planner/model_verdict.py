"""A model may only add to the failure analysis. The analysis' verdict (category, node, rank, GPU,
confidence) is the report, unless the model's verdict claim cites evidence for another: a
primary event of the model's category (at its node and rank), shown to it with an evidence id,
that the analysis did not already weigh and reject, and that came before the analysis' first
failure on the one clock (or the analysis found none). An adopted change is the report's
verdict claim, citing that evidence, with the analysis' verdict as the alternative it replaced;
a refused one is a refuted claim and an alternative saying why. Either way the report says how
the model's verdict met the analysis'."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING

from goodput_agent.analysis.failure.model import FailureVerdict
from goodput_agent.analysis.failure.observations import short_name
from goodput_agent.core.events import Event, Role
from goodput_agent.ledger.actions import actions_of
from goodput_agent.ledger.records import evidence_rows
from goodput_agent.planner.base import ClaimDraft, Conclusion, ToolCall
from goodput_agent.planner.loop import execute, record_conclusion
from goodput_agent.planner.model_report import model_report
from goodput_agent.planner.model_tools import FinishInput
from goodput_agent.planner.offline import failure_conclusion
from goodput_agent.planner.proposals import JobRefs
from goodput_agent.planner.unknowns import with_missing_evidence
from goodput_agent.report import Alternative, ProposedAction, Report
from goodput_agent.tools.failure_verdict import FailureVerdictOutput

if TYPE_CHECKING:
    from goodput_agent.pictures.report_pictures import PictureHook
    from goodput_agent.planner.model_agent import Agent

ADOPTED_CAP = 0.5  # a verdict the analysis did not reach itself promises no more than this


def _analysis(agent: Agent) -> FailureVerdictOutput | None:
    """The failure_verdict the model called, else one run now (a tool call of the run)."""
    for step in reversed(agent.steps):
        if isinstance(step.output, FailureVerdictOutput) and step.output.analysis is not None:
            return step.output
    step = execute(ToolCall(tool="failure_verdict"), agent.ctx, agent.ledger, agent.inv_id,
                   agent.seq())
    agent.steps.append(step)
    out = step.output
    return out if isinstance(out, FailureVerdictOutput) and out.analysis is not None else None


def cited_events(agent: Agent, evidence_ids: list[int], events: list[Event]) -> list[Event]:
    """The events behind the evidence ids (rows written for shown event lines)."""
    if not evidence_ids:
        return []
    by_locator = {(e.locator.path, str(e.locator)): e for e in events}
    rows = evidence_rows(agent.ledger, agent.inv_id, evidence_ids)
    return [by_locator[key] for r in rows if (key := (r.source, r.locator)) in by_locator]


def _same(a: str | int | None, b: str | int | None) -> bool:
    if a is None or b is None:
        return True  # the model left it open, or added it where the analysis had none
    if isinstance(a, str) and isinstance(b, str):
        return short_name(a) == short_name(b)
    return a == b


def judge(f: FinishInput, v: FailureVerdict, cited: list[Event], skew_s: float
          ) -> tuple[list[Event] | None, str]:
    """The events that justify the model's verdict (None: refused) and the reason."""
    ids = ", ".join(e.summary[:60] for e in cited[:3]) or "no shown event line"
    pairs = ((f.node, v.node), (f.rank, v.rank), (f.gpu, v.gpu))
    if f.category == v.category and all(m is None or (d is not None and _same(m, d))
                                        for m, d in pairs):
        return None, "agreed"
    # the same category, naming where the analysis could not: only a fill-in
    fills_only = f.category == v.category and all(_same(m, d) for m, d in pairs)
    support = [e for e in cited if e.role == Role.primary and e.category == f.category
               and _same(f.node, e.node) and _same(f.rank, e.rank)]
    if not support:
        return None, (f"its verdict claim cites no primary {f.category} event"
                      f"{' on ' + f.node if f.node else ''} (cited: {ids})")
    rejected = {(e.locator.path, str(e.locator)): a for a in v.alternatives for e in a.evidence}
    for e in support:
        a = rejected.get((e.locator.path, str(e.locator)))
        if a is not None:
            return None, f"the analysis weighed that event and rejected it: {a.why_not}"
    if v.category != "unknown" and not fills_only:
        first = v.primary.ts if v.primary is not None else None
        early = [e for e in support if e.ts and first and
                 e.ts < first - timedelta(seconds=skew_s)]
        if not early:
            return None, ("its evidence is not earlier than the analysis' first failure"
                          f"{' at ' + first.isoformat() if first else ''}")
        support = early
    return support, "adopted"


def _adopted(f: FinishInput, v: FailureVerdict, support: list[Event], claim_id: int | None
             ) -> FailureVerdict:
    confidence = min(f.confidence, v.confidence if f.category == v.category else ADOPTED_CAP)
    replaced = Alternative(category=v.category,  # type: ignore[arg-type]
                           confidence=min(v.confidence, 0.5), node=v.node, rank=v.rank,
                           why_not=f"the model's claim {claim_id} cited an earlier "
                                   f"{f.category} event: {support[0].summary[:160]}")
    from goodput_agent.analysis.failure.model import Alternative as Found

    return v.model_copy(update={
        "category": f.category, "node": f.node or v.node,
        "rank": f.rank if f.rank is not None else v.rank, "gpu": f.gpu or v.gpu,
        "confidence": confidence, "primary": support[0],
        "summary": f"model planner (claim {claim_id}): {f.summary}", "evidence": support,
        "alternatives": [Found(**replaced.model_dump(), evidence=v.evidence), *v.alternatives]})


def failure_report(agent: Agent, f: FinishInput | None, why_unknown: str | None,
                   question: str, unread: dict[str, str], pictures: PictureHook | None = None
                   ) -> tuple[Report, str]:
    """The report of a model-planned failure investigation, and how the model's verdict met
    the analysis' (agreed / adopted / stands: why)."""
    out = _analysis(agent)
    if out is None or out.analysis is None:  # no analysis to stand on: the model's own report
        return model_report(agent, f, why_unknown, question, unread, pictures), \
            "model report: the failure analysis could not run"
    a = out.analysis
    v, obs = a.verdict, a.observations
    claim = agent._claims().get(f.verdict_claim_id or -1) if f is not None else None
    claim_ids = json.loads(claim["supporting"]) if claim else []
    if f is None or f.category == "unknown":
        outcome = f"stands: the model gave no verdict ({why_unknown or 'unknown'})"
        support = None
    else:
        cited = cited_events(agent, claim_ids, obs.events + out.events)
        support, why = judge(f, v, cited, obs.clock.skew_tolerance_s)
        outcome = why if why in ("agreed", "adopted") else \
            f"stands: the model's verdict {f.category} was not adopted: {why}"
    refused: list[ClaimDraft] = []
    if support is not None and f is not None:
        v = _adopted(f, v, support, f.verdict_claim_id)
        outcome = f"adopted: {f.category} from the model's claim {f.verdict_claim_id}"
    elif f is not None and outcome.startswith("stands") and f.category != "unknown":
        refused.append(ClaimDraft(statement=f"model planner's verdict not adopted: {outcome}",
                                  category=f.category, confidence=f.confidence,
                                  status="refuted", node=f.node, rank=f.rank, gpu=f.gpu))
    inv = agent.ctx.bundle.inventory if agent.ctx.bundle is not None else None
    c = failure_conclusion(v, obs, with_missing_evidence(a.errors, inv), inv,
                           JobRefs.of(out.scheduler))
    c = _with_model(c, refused, f, outcome)
    report = record_conclusion(agent.ledger, agent.inv_id, agent.steps, c, question, unread,
                               pictures, extra_actions=_model_actions(agent))
    return report, outcome


def _with_model(c: Conclusion, refused: list[ClaimDraft], f: FinishInput | None,
                outcome: str) -> Conclusion:
    alternatives = list(c.alternatives)
    if refused and f is not None:
        alternatives.append(Alternative(category=f.category,  # type: ignore[arg-type]
                                        confidence=min(f.confidence, c.claims[0].confidence),
                                        why_not=f"model planner: {outcome}", node=f.node,
                                        rank=f.rank))
    return c.model_copy(update={"claims": [*c.claims, *refused], "alternatives": alternatives,
                                "unknowns": [f"model planner: {outcome}", *c.unknowns]})


def _model_actions(agent: Agent) -> list[ProposedAction]:
    return [ProposedAction(id=a.id, tool=a.tool, args=a.args, mutating=a.mutating,
                           rationale=a.rationale or "")
            for a in actions_of(agent.ledger, agent.inv_id)]
