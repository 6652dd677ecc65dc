"""A live finding recorded as an investigation like any other: the reads as tool calls, the
verdict and its alternatives as claims with evidence (the progress lines, the ranks' stacks as
dumped, the metric queries), proposals through the gate (recorded `proposed`; nothing runs).

Kind and category: a hang is the failure question's `hang`; a slow node the slowdown
question's `straggler` or `gpu_throttling`; a job found healthy, or that could not be judged,
is recorded as `unknown` with the reason.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from goodput_agent import __version__
from goodput_agent.analysis.advice import Advice
from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.detect.assess import Finding
from goodput_agent.ledger import Ledger
from goodput_agent.planner.base import ClaimDraft, Conclusion, ProposalDraft
from goodput_agent.planner.loop import record_conclusion
from goodput_agent.planner.proposals import JobRefs, settle
from goodput_agent.report import Report, Retry

PLANNER = "live-detect"


class Read(BaseModel):
    """One read-only look taken (a command, a file, a query), for the tool-call rows."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    ms: float = 0.0


def evidence(path: str, line: int, excerpt: str, summary: str, at: float | None = None,
             node: str | None = None, rank: int | None = None,
             span: str | None = None) -> Event:
    ts = datetime.fromtimestamp(at, UTC) if at else None
    return Event(kind=EventKind.other, role=Role.context, ts=ts,
                 clock=Clock.absolute if ts else Clock.none, node=node, rank=rank,
                 summary=summary, excerpt=excerpt[:600],
                 locator=Locator(path=path, line_start=line, line_end=line, span=span))


def _kind(f: Finding) -> tuple[str, str]:
    if f.kind == "hang":
        return "failure", "hang"
    if f.kind in ("straggler", "gpu_throttling"):
        return "slowdown", f.kind
    return "failure", "unknown"


def proposals(f: Finding, scheduler: str, job: str | None
              ) -> tuple[list[ProposalDraft], list[Advice]]:
    """Hardware signs on one node (a rank stuck in a CUDA call, a node throttled or slow
    against its peers) -> take the node out and rerun without it; a rank stuck in its own
    data or I/O -> advice, no cluster action; culprit unknown -> what to collect."""
    stuck = f.stacks.culprits[0].state if f.stacks and f.stacks.culprits else None
    hardware = f.node is not None and (
        (f.kind == "hang" and (stuck == "cuda" or bool(f.node_problems)))
        or (f.kind != "hang" and f.failslow and f.failslow.slow))
    if hardware and f.node:
        why = f.summary[:300]
        if scheduler == "kubernetes":
            return [ProposalDraft(tool="k8s_cordon_node", rationale=why,
                                  args={"node": f.node})], []
        if scheduler != "slurm":  # a job known only by its metrics: no scheduler to ask
            return [], [Advice(topic="node_service", rationale=why, details={"node": f.node},
                               text=f"take {f.node} out of service and rerun without it",
                               missing="the job is known only by its metrics: no scheduler "
                                       "to drain the node through")]
        out = [ProposalDraft(tool="slurm_drain_node", rationale=why,
                             args={"node": f.node, "reason": f"goodput: {f.kind} of job {job}"})]
        if job:
            out.append(ProposalDraft(tool="slurm_requeue_job", rationale=why,
                                     args={"job": job, "exclude": [f.node],
                                           "resume_from_checkpoint": True}))
        return out, []
    if f.kind in ("hang", "straggler") and f.culprit_ranks:
        place = f.stacks.culprits[0] if f.stacks and f.stacks.culprits else None
        return [], [Advice(topic="code_fix", rationale=f.summary[:300],
                           text=f"look at rank {f.rank}'s own work"
                                + (f" ({place.state} in {place.where})" if place else ""),
                           details={"rank": f.rank, "node": f.node,
                                    "state": place.state if place else None,
                                    "where": place.where if place else None})]
    if f.kind == "hang":
        return [], [Advice(topic="collect_stacks", rationale=f.summary[:300],
                           text="install py-spy where the ranks run (and allow ptrace); enable "
                                "Flight Recorder TORCH_NCCL_TRACE_BUFFER_SIZE=2000")]
    return [], []


def conclusion(f: Finding, support: list[Event], against: list[Event], scheduler: str,
               job: str | None, unknowns: list[str]) -> Conclusion:
    kind, category = _kind(f)
    statement = f.summary if f.alarm else f"no hang or slow node found: {f.summary}"
    verdict = ClaimDraft(statement=statement, category=category,
                         confidence=f.confidence if f.alarm else 0.0,
                         status="supported" if f.alarm else "hypothesis", node=f.node,
                         rank=f.rank, supporting=support, contradicting=against)
    retry = Retry(useful=None, why="the job is still running: nothing has failed yet")
    if f.kind == "hang":
        retry = Retry(useful=None, why="a rank stuck in its own work usually sticks again; "
                      "rerun without the node only when the signs are the hardware's")
    drafts, advice = proposals(f, scheduler, job)
    ready, advice = settle(drafts, advice, JobRefs())
    return Conclusion(kind=kind, claims=[verdict], retry=retry, proposals=ready, advice=advice,
                      unknowns=[*f.unknowns, *unknowns, *f.stall.notes])


def record(ledger: Ledger, target: str, question: str, f: Finding, reads: list[Read],
           support: list[Event], against: list[Event], scheduler: str, job: str | None,
           unknowns: list[str]) -> Report:
    kind, _ = _kind(f)
    inv = ledger.start_investigation(question, kind, target, PLANNER, __version__)
    now = datetime.now(UTC)
    for seq, r in enumerate(reads, 1):
        ledger.record_tool_call(inv, seq, r.tool, True, r.args, None, r.summary, r.ms,
                                r.error, now)
    c = conclusion(f, support, against, scheduler, job, unknowns)
    return record_conclusion(ledger, inv, [], c, question, {})
