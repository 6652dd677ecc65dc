"""The failure analysis as a tool: the first failure (category, node, rank, GPU, confidence),
the alternatives it explains away and why, from every scheduler record, job log, kernel log
and GPU metric of the bundle, with the typed scheduler facts it used. It is the verdict the
offline planner concludes with; a model planner gets it the same way, and may only add to it
with evidence (planner/model_verdict.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from goodput_agent.analysis.failure.analyze import diagnose
from goodput_agent.analysis.failure.model import FailureVerdict
from goodput_agent.analysis.failure.observations import Observations
from goodput_agent.core.events import Event
from goodput_agent.planner.observe import EVIDENCE_TOOLS, observations
from goodput_agent.planner.scheduler_facts import SchedulerFacts
from goodput_agent.report import Alternative
from goodput_agent.toolkit import EventsOutput, Tool, ToolContext, ToolUnavailable, registry


class FailureVerdictInput(BaseModel):
    pass


class FailureAnalysis(BaseModel):
    """What the planner needs to turn the verdict into a report; never shown or stored."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    verdict: FailureVerdict
    observations: Observations
    errors: list[str] = Field(default_factory=list)


class FailureVerdictOutput(EventsOutput):
    """`events`: the verdict's evidence, then the alternatives' (each shown with an id)."""

    category: str
    statement: str
    node: str | None = None
    rank: int | None = None
    gpu: str | None = None
    confidence: float
    alternatives: list[Alternative] = Field(default_factory=list)  # explained away, and why
    unknowns: list[str] = Field(default_factory=list)
    scheduler: SchedulerFacts = Field(default_factory=SchedulerFacts)
    analysis: FailureAnalysis | None = Field(default=None, exclude=True)

    def verdict_lines(self) -> list[str]:
        where = " ".join(x for x in (f"node={self.node}" if self.node else "",
                                     f"rank={self.rank}" if self.rank is not None else "",
                                     f"gpu={self.gpu}" if self.gpu else "") if x)
        lines = [f"verdict: {self.category} {where or '(no node)'} confidence "
                 f"{self.confidence:.2f}: {self.statement}"]
        lines += [f"rejected: {a.category} ({a.confidence:.2f}) {a.why_not}"
                  for a in self.alternatives[:8]]
        return lines + [f"unknown: {u}" for u in self.unknowns[:5]]

    def detail_lines(self) -> list[str]:
        """The verdict, then one line per scheduler fact (read_evidence pages through them)."""
        facts = [f"job {j.model_dump_json(exclude_none=True)}" for j in self.scheduler.jobs]
        facts += [f"pod {p.model_dump_json(exclude_none=True)}" for p in self.scheduler.pods]
        return self.verdict_lines() + facts


def _evidence(v: FailureVerdict) -> list[Event]:
    seen: list[Event] = []
    for e in [*v.evidence, *(e for a in v.alternatives for e in a.evidence)]:
        if e not in seen:
            seen.append(e)
    return seen


class FailureVerdictTool(Tool[FailureVerdictInput, FailureVerdictOutput]):
    name = "failure_verdict"
    input_model = FailureVerdictInput
    output_model = FailureVerdictOutput
    timeout_s = 300.0

    def run(self, ctx: ToolContext, args: FailureVerdictInput) -> FailureVerdictOutput:
        if ctx.bundle is None:
            raise ToolUnavailable("no incident bundle is open")
        tools = registry()
        outputs: dict[str, object] = {"bundle_inventory": ctx.bundle.inventory}
        errors: list[str] = []
        for name in (*EVIDENCE_TOOLS, "log_activity"):
            tool = tools[name]
            try:  # parse results are the bundle's: a tool the planner already ran costs nothing
                outputs[name] = tool.run(ctx, tool.input_model())
            except ToolUnavailable as exc:
                errors.append(f"{name} failed: unavailable: {exc}")
        obs, facts = observations(outputs)
        v = diagnose(obs)
        return FailureVerdictOutput(
            events=_evidence(v), rank_hosts=obs.rank_hosts, rank_gpus=obs.rank_gpus,
            category=v.category, statement=v.summary, node=v.node, rank=v.rank, gpu=v.gpu,
            confidence=v.confidence, unknowns=v.unknowns, scheduler=facts,
            alternatives=[Alternative.model_validate(a.model_dump(exclude={"evidence"}))
                          for a in v.alternatives],
            analysis=FailureAnalysis(verdict=v, observations=obs, errors=errors))


TOOL = FailureVerdictTool()
