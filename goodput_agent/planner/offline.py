"""The offline playbook planner: deterministic, no network. It walks a fixed playbook per kind
of question through the same loop, tools and ledger that the LLM planner uses."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.analysis.failure.analyze import Alternative as FoundAlternative
from goodput_agent.analysis.failure.analyze import FailureVerdict, diagnose
from goodput_agent.analysis.failure.observations import Observations
from goodput_agent.analysis.failure.remedy import Remedy, remedy
from goodput_agent.analysis.failure.timeline import on_culprit_chain
from goodput_agent.analysis.latency.model import LatencyResult, LatencyVerdict
from goodput_agent.analysis.log_series import series_of
from goodput_agent.analysis.read_whole import nothing_reads_as_fault, unread_metrics
from goodput_agent.analysis.slowdown.from_logs import log_verdict
from goodput_agent.analysis.slowdown.log_clocks import weigh_clocks
from goodput_agent.analysis.slowdown.model import SlowdownVerdict
from goodput_agent.analysis.slowdown.profile_tables import profile_verdict, tables_of
from goodput_agent.analysis.slowdown.remedy import log_remedy, slowdown_remedy
from goodput_agent.bundle import Inventory
from goodput_agent.core.events import Event, Role
from goodput_agent.parsing.job_log.state import line_excerpt
from goodput_agent.parsing.lines import line_at
from goodput_agent.parsing.registry import (
    JOB_LOG_FORMATS,
    METRICS_FORMATS,
    SCHEDULER_FORMATS,
)
from goodput_agent.planner.base import (
    ClaimDraft,
    Conclusion,
    ProposalDraft,
    StepResult,
    ToolCall,
)
from goodput_agent.planner.observe import observations, scheduler_kind
from goodput_agent.planner.proposals import JobRefs, settle
from goodput_agent.planner.script_edits import with_script_edits
from goodput_agent.planner.unknowns import with_missing_evidence
from goodput_agent.planner.workload_edits import latency_fixes
from goodput_agent.report import SECONDARY, Alternative, ClockNote, Retry, TimelineEntry
from goodput_agent.toolkit import EventsOutput
from goodput_agent.tools.profiler_traces import TracesOutput

PLAYBOOKS: dict[str, tuple[str, ...]] = {
    "failure": ("bundle_inventory", "scheduler_state", "job_log_events", "kernel_log_events",
                "gpu_metrics_events", "log_activity"),
    # the job logs only when the bundle holds no trace: their own series answer then
    "slowdown": ("bundle_inventory", "profiler_traces", "job_log_events"),
    "latency": ("bundle_inventory", "latency_metrics"),
}

# The formats a playbook's tools parse, every one whatever the findings (scheduler_state,
# job_log_events, kernel_log_events, gpu_metrics_events): read ahead in one fan-out
# (Bundle.read_ahead). tests/planner/test_read_ahead.py checks that the tools ask for them all.
PLAYBOOK_FORMATS: dict[str, frozenset[str]] = {
    "failure": SCHEDULER_FORMATS | JOB_LOG_FORMATS | {"kernel_log"} | METRICS_FORMATS,
}


class OfflinePlanner:
    name = "offline-playbook"

    def __init__(self, kind: str, tool_args: dict[str, dict] | None = None,
                 with_bundle: bool = True):
        self.kind = kind
        self.tool_args = tool_args or {}
        self.steps = tuple(t for t in PLAYBOOKS[kind]
                           if with_bundle or t != "bundle_inventory")

    def next_step(self, history: list[StepResult]) -> ToolCall | None:
        if len(history) >= len(self.steps):
            return None
        tool = self.steps[len(history)]
        if self.kind == "slowdown" and tool == "job_log_events" and _held_traces(history):
            return None
        return ToolCall(tool=tool, args=self.tool_args.get(tool, {}))

    def conclude(self, history: list[StepResult]) -> Conclusion:
        outputs = {s.call.tool: s.output for s in history if s.output is not None}
        errors = [f"{s.call.tool} failed: {s.error}" for s in history if s.error]
        inv = outputs.get("bundle_inventory")
        errors = with_missing_evidence(errors, inv if isinstance(inv, Inventory) else None)
        if self.kind == "slowdown":
            return slowdown_conclusion(outputs, errors)
        if self.kind == "latency":
            return latency_conclusion(outputs, errors)
        obs, facts = observations(outputs)
        v = diagnose(obs)
        return failure_conclusion(v, obs, errors, inv, JobRefs.of(facts))


def _held_traces(history: list[StepResult]) -> bool:
    """Whether the bundle held profiler traces (read or not): they answer a slowdown."""
    out = next((s.output for s in history if s.call.tool == "profiler_traces"), None)
    return isinstance(out, TracesOutput) and bool(out.traces or out.problems)


def _timeline(v: FailureVerdict) -> list[TimelineEntry]:
    """The verdict's timeline; "primary" only on the culprit's chain, any other event that
    could start a failure is "secondary" (another node's fault, a pre-existing one, the job's
    end)."""
    def role(e: Event) -> str:
        if e.role == Role.primary and not on_culprit_chain(e, v):
            return SECONDARY
        return e.role.value

    return [TimelineEntry(time=e.ts.isoformat() if e.ts else None, node=e.node, rank=e.rank,
                          kind=e.kind.value, role=role(e), summary=e.summary,
                          locator=str(e.locator)) for e in v.timeline]


def not_the_verdict(alternatives: list[Alternative], category: str, node: str | None,
                    rank: int | None) -> list[Alternative]:
    """Alternatives, less any that only repeats the verdict (its class at its place)."""
    return [a for a in alternatives if (a.category, a.node, a.rank) != (category, node, rank)]


def _alt(a: FoundAlternative) -> Alternative:
    return Alternative(category=a.category, confidence=a.confidence,  # type: ignore[arg-type]
                       why_not=a.why_not, node=a.node, rank=a.rank)


def failure_conclusion(v: FailureVerdict, obs: Observations, errors: list[str],
                       inv: Inventory | None = None, refs: JobRefs | None = None
                       ) -> Conclusion:
    r = with_script_edits(remedy(v, obs.scheduler_kind, obs.job_id), v, inv, obs.job_id,
                          obs.scheduler_kind)
    proposals, advice = settle(_drafts(r), r.advice, refs or JobRefs())
    verdict = ClaimDraft(statement=v.summary, category=v.category, confidence=v.confidence,
                         status="supported" if v.category != "unknown" else "hypothesis",
                         node=v.node, rank=v.rank, gpu=v.gpu, supporting=v.evidence,
                         contradicting=[e for a in v.alternatives for e in a.evidence
                                        if e not in v.evidence][:5])
    claims = [verdict] + [
        ClaimDraft(statement=f"{a.category}: rejected: {a.why_not}", category=a.category,
                   confidence=a.confidence, status="refuted", node=a.node, rank=a.rank,
                   supporting=a.evidence, contradicting=v.evidence[:1])
        for a in v.alternatives]
    alternatives = not_the_verdict([_alt(a) for a in v.alternatives], v.category, v.node, v.rank)
    return Conclusion(kind="failure", claims=claims, alternatives=alternatives,
                      retry=Retry(useful=r.retry_useful, why=r.why), proposals=proposals,
                      advice=advice,
                      unknowns=v.unknowns + errors, timeline=_timeline(v),
                      timeline_left_out=v.timeline_left_out,
                      clock=ClockNote(assumptions=v.clock_notes,
                                      skew_tolerance_s=obs.clock.skew_tolerance_s))


def _drafts(r: Remedy) -> list[ProposalDraft]:
    return [ProposalDraft(tool=p.tool, args=p.args, rationale=p.rationale) for p in r.proposals]


def slowdown_conclusion(outputs: dict[str, object], errors: list[str]) -> Conclusion:
    traces: TracesOutput | None = outputs.get("profiler_traces")  # type: ignore[assignment]
    inv: Inventory | None = outputs.get("bundle_inventory")  # type: ignore[assignment]
    v = traces.verdict if traces else None
    logs = outputs.get("job_log_events")
    if v is None and isinstance(logs, EventsOutput) and (lv := _log_verdict(logs, inv, traces)):
        return _log_conclusion(lv, inv, errors)
    if v is None:
        why = ("no profiler trace in the bundle could be analysed" if traces is None or
               not traces.traces else "the traces were read but gave no verdict")
        problems = [f"{p}: {r}" if not r.startswith(p) else r
                    for p, r in (traces.problems.items() if traces else [])]
        return Conclusion(kind="slowdown", claims=[ClaimDraft(
            statement=why, category="unknown", confidence=0.0, status="hypothesis")],
            retry=Retry(useful=None, why="no verdict"),
            unknowns=[why, *(traces.assumptions if traces else []), *problems, *errors],
            breakdown=traces.breakdown if traces else None)
    r = slowdown_remedy(v, scheduler_kind(inv), inv.incident.job if inv else None)
    proposals, advice = settle(_drafts(r), r.advice, JobRefs.read(inv))
    claims, alternatives = _verdict_claims(v, v.node, v.rank, v.gpu)
    notes = [f"{p}: {w}" if not w.startswith(p) else w for p, w in traces.problems.items()]
    return Conclusion(kind="slowdown", claims=claims, alternatives=alternatives,
                      retry=Retry(useful=r.retry_useful, why=r.why), proposals=proposals,
                      advice=advice,
                      unknowns=traces.assumptions + v.unknowns + notes + errors,
                      breakdown=traces.breakdown)


def _log_verdict(logs: EventsOutput, inv: Inventory | None, traces: TracesOutput | None
                 ) -> SlowdownVerdict | None:
    """The verdict of the job logs' own series (weighed against the GPUs' DCGM clocks when the
    bundle has them), else of the profiler's key_averages tables; None when they hold
    neither."""
    series = series_of(logs.facts, logs.rank_hosts, len(inv.unread) if inv else 0)
    series.quiet = nothing_reads_as_fault(logs.facts, logs.events)
    root = Path(inv.root) if inv else Path()

    def text(path: str, n: int) -> str:
        return line_excerpt(line_at(root / path, n))

    if not series.points and not series.timers:  # else the profiler's tables, if any
        return profile_verdict(tables_of(logs.facts), text)
    clocks = traces.clocks if traces else []
    v = weigh_clocks(log_verdict(series, text), clocks, logs.rank_gpus)
    if v.category == "unknown" and not clocks and (metrics := unread_metrics(logs.facts)):
        v.unknowns.append(f"{', '.join(metrics)} not read: without a profiler trace the "
                          "slowdown is read from the training log alone (a GPU's clocks there "
                          "may say why)")
    return v


def _log_conclusion(v: SlowdownVerdict, inv: Inventory | None, errors: list[str]
                    ) -> Conclusion:
    """A slowdown answered from the training log's own series (no profiler trace)."""
    r = log_remedy(v) if v.category == "straggler" else \
        slowdown_remedy(v, scheduler_kind(inv), inv.incident.job if inv else None)
    proposals, advice = settle(_drafts(r), r.advice, JobRefs.read(inv))
    claims, alternatives = _verdict_claims(v, v.node, v.rank, v.gpu)
    return Conclusion(kind="slowdown", claims=claims, alternatives=alternatives,
                      retry=Retry(useful=r.retry_useful, why=r.why), proposals=proposals,
                      advice=advice, unknowns=[*v.unknowns, *errors])


def _verdict_claims(v: SlowdownVerdict | LatencyVerdict, node: str | None = None,
                    rank: int | None = None, gpu: str | None = None,
                    ) -> tuple[list[ClaimDraft], list[Alternative]]:
    verdict = ClaimDraft(statement=v.summary, category=v.category, confidence=v.confidence,
                         status="supported" if v.category != "unknown" else "hypothesis",
                         node=node, rank=rank, gpu=gpu, supporting=v.evidence)
    claims = [verdict] + [ClaimDraft(statement=f"{cat}: rejected: {why}", category=cat,
                                     confidence=conf, status="refuted")
                          for cat, conf, why in v.alternatives]
    alternatives = not_the_verdict([
        Alternative(category=cat, confidence=conf, why_not=why)  # type: ignore[arg-type]
        for cat, conf, why in v.alternatives], v.category, node, rank)
    return claims, alternatives


def latency_conclusion(outputs: dict[str, object], errors: list[str]) -> Conclusion:
    result: LatencyResult | None = outputs.get("latency_metrics")  # type: ignore[assignment]
    if result is None:
        why = "no latency metrics could be read"
        return Conclusion(kind="latency", claims=[ClaimDraft(
            statement=why, category="unknown", confidence=0.0, status="hypothesis")],
            retry=Retry(useful=None, why="no verdict"), unknowns=[why, *errors])
    v = result.verdict
    claims, alternatives = _verdict_claims(v)
    inv: Inventory | None = outputs.get("bundle_inventory")  # type: ignore[assignment]
    exact, advice = latency_fixes(result, inv)
    proposals, advice = settle(exact, advice, JobRefs())
    missing = [f"missing evidence: {m.what}: {m.why}" for m in result.missing]
    return Conclusion(kind="latency", claims=claims, alternatives=alternatives,
                      retry=Retry(useful=None, why="not a failure: latency is judged against "
                                  "the baseline window, not by retrying"),
                      proposals=proposals, advice=advice,
                      unknowns=v.unknowns + missing + errors,
                      latency=result.report_object())
