"""Drain proposals for named repeat offenders, through the existing approval gate: each named
node becomes a small investigation of its own (planner `fleet`, target `fleet:node:<node>`)
with the test's numbers as its evidence, a verdict claim naming the node, and a proposed
`slurm_drain_node` action resting on that claim. Nothing is approved or executed here: a person
previews and approves it with `goodput actions` / `goodput approve`, under the policy."""

from __future__ import annotations

from goodput_agent import __version__
from goodput_agent.accounting.fleet_models import DrainProposal, FleetReport, NodeFinding
from goodput_agent.approval.gate import action_status
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import proposals_by
from goodput_agent.report import EvidenceItem, ProposedAction, Report, Retry, RootCause

PLANNER = "fleet"  # fleet investigations are not failures of their own: the fleet skips them
DRAIN_TOOL = "slurm_drain_node"
_OPEN = ("proposed", "approved")


def _open_proposal(ledger: Ledger, node: str) -> DrainProposal | None:
    for r in proposals_by(ledger, PLANNER, DRAIN_TOOL, node, limit=1000):
        status = action_status(ledger, r["id"])
        if status in _OPEN:
            return DrainProposal(node=node, investigation_id=r["investigation_id"],
                                 action_id=r["id"], claim_id=r["claim_ids"][0], status=status)
    return None


def _numbers(f: NodeFinding, report: FleetReport) -> str:
    test = report.test
    correction, tested = (test.correction, test.nodes_tested) if test else ("", 0)
    period = f"{report.since.isoformat() if report.since else 'the start'} to " \
             f"{report.until.isoformat()}"
    return (f"{f.node}: {f.failures} attributed failures on {f.jobs} different jobs in "
            f"{f.exposure_gpu_h:.1f} GPU-hours ({f.rate_per_1k_gpu_h:.3g} per 1000 GPU-h; rest "
            f"of the fleet {f.fleet_rate_per_1k_gpu_h:.3g}); expected {f.expected:.2f}; "
            f"one-sided exact Poisson p = {f.p_value:.3g}, {correction}-adjusted p = "
            f"{f.adjusted_p:.3g} over {tested} nodes; period {period}; investigations "
            f"{', '.join(f.investigations[:20])}"
            f"{' …' if len(f.investigations) > 20 else ''}")


def propose_drain(ledger: Ledger, f: NodeFinding, report: FleetReport) -> DrainProposal:
    """One named node's proposal (or the open one already there: never two at once)."""
    existing = _open_proposal(ledger, f.node)
    if existing is not None:
        return existing
    category = f.categories[0] if len(f.categories) == 1 else "node_failure"
    inv = ledger.start_investigation(f"is {f.node} a repeat offender?", "failure",
                                     f"fleet:node:{f.node}", PLANNER, __version__)
    excerpt = _numbers(f, report)
    ev = ledger.record_evidence(inv, None, "goodput fleet", f"fleet test of {f.node}",
                                excerpt, None)
    confidence = max(0.0, min(1.0, 1.0 - (f.adjusted_p or 1.0)))
    statement = (f"{f.node} fails significantly more often per GPU-hour than the rest of the "
                 f"fleet ({f.failures} failures on {f.jobs} jobs, adjusted p "
                 f"{f.adjusted_p:.3g})")
    claim = ledger.record_claim(inv, statement, category, confidence, "supported", [ev], [],
                                node=f.node)
    why = (f"repeat offender: {f.failures} failures on {f.jobs} jobs where "
           f"{f.expected:.2f} were expected (adjusted p {f.adjusted_p:.3g})")
    args = {"node": f.node, "reason": f"goodput fleet: repeat offender, {f.failures} failures "
                                      f"on {f.jobs} jobs, adj p {f.adjusted_p:.2g}"}
    aid = ledger.record_action(inv, DRAIN_TOOL, args, True, why, [claim])
    rep = Report(investigation_id=inv, kind="failure", question=f"is {f.node} a repeat offender?",
                 root_cause=RootCause(category=category, summary=statement,  # type: ignore[arg-type]
                                      node=f.node, confidence=confidence,
                                      evidence=[EvidenceItem(source="goodput fleet",
                                                             locator=f"fleet test of {f.node}",
                                                             excerpt=excerpt, id=ev)]),
                 retry=Retry(useful=False, why="the node keeps failing jobs; drain it first"),
                 actions=[ProposedAction(id=aid, tool=DRAIN_TOOL, args=args, mutating=True,
                                         rationale=why)])
    ledger.record_conclusion(inv, category, confidence, 0, rep.to_json())
    return DrainProposal(node=f.node, investigation_id=inv, action_id=aid, claim_id=claim,
                         status=action_status(ledger, aid))


def propose_drains(ledger: Ledger, report: FleetReport) -> list[DrainProposal]:
    named = [f for f in report.nodes if f.named]
    return [propose_drain(ledger, f, report) for f in named]
