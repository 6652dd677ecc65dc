"""The planner loop: ask the planner for a tool call, run it, record it, repeat; then record
the conclusion. The same loop serves every planner; policy gates live elsewhere."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime

import structlog
from pydantic import BaseModel, ValidationError

from goodput_agent import __version__
from goodput_agent.core.events import Event
from goodput_agent.core.redact import redact, redact_data
from goodput_agent.ledger import Ledger
from goodput_agent.pictures.report_pictures import PictureHook
from goodput_agent.planner.base import ClaimDraft, Conclusion, Planner, StepResult, ToolCall
from goodput_agent.report import EvidenceItem, ProposedAction, Report, RootCause
from goodput_agent.toolkit import ToolContext, ToolUnavailable, registry

log = structlog.get_logger(__name__)
MAX_STEPS = 50
EXCERPT_CHARS = 600


def execute(call: ToolCall, ctx: ToolContext, ledger: Ledger, inv_id: str, seq: int) -> StepResult:
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    tool = registry().get(call.tool)
    output: BaseModel | None = None
    error: str | None = None
    if tool is None:
        error = f"unknown tool {call.tool!r}"
    elif not tool.read_only:
        error = f"{call.tool} mutates: it runs only through the approval gate, not the planner"
    else:
        try:
            args = tool.input_model.model_validate(call.args)
            with ThreadPoolExecutor(max_workers=1) as pool:
                output = pool.submit(tool.run, ctx, args).result(timeout=tool.timeout_s)
        except ValidationError as exc:
            error = f"invalid arguments: {exc.errors()[0]['msg']}"
        except FutureTimeout:
            error = f"timed out after {tool.timeout_s:g} s"
        except ToolUnavailable as exc:
            error = f"unavailable: {exc}"
        except Exception as exc:  # noqa: BLE001 - a failing tool is a recorded step, not a crash
            error = f"failed: {type(exc).__name__}: {exc}".splitlines()[0][:300]
            log.warning("tool_failed", tool=call.tool, error=error)
    duration_ms = (time.perf_counter() - t0) * 1000
    out_json = output.model_dump_json() if output is not None else None
    summary = output.summary() if hasattr(output, "summary") else None  # type: ignore[union-attr]
    row = ledger.record_tool_call(inv_id, seq, call.tool, bool(tool and tool.read_only), call.args,
                                  out_json, summary, duration_ms, error, started)
    log.info("tool_call", tool=call.tool, ms=round(duration_ms, 1), error=error)
    return StepResult(call=call, output=output, error=error, tool_call_id=row,
                      duration_ms=duration_ms)


def _source_of(history: list[StepResult]) -> dict[str, int]:
    """Which tool call produced the events of each file (for the evidence rows)."""
    out: dict[str, int] = {}
    for step in history:
        for e in getattr(step.output, "events", None) or []:
            out.setdefault(e.locator.path, step.tool_call_id)
    return out


class _EvidenceWriter:
    def __init__(self, ledger: Ledger, inv_id: str, history: list[StepResult]):
        self.ledger, self.inv_id = ledger, inv_id
        self.by_file = _source_of(history)
        self.ids: dict[str, int] = {}

    def write(self, e: Event) -> int:
        key = f"{e.locator}|{e.summary}"
        if key not in self.ids:
            self.ids[key] = self.ledger.record_evidence(
                self.inv_id, self.by_file.get(e.locator.path), e.locator.path, str(e.locator),
                redact(e.excerpt)[:EXCERPT_CHARS], e.ts)
        return self.ids[key]

    def item(self, e: Event) -> EvidenceItem:
        return EvidenceItem(id=self.write(e), source=e.locator.path, locator=str(e.locator),
                            excerpt=redact(e.excerpt)[:EXCERPT_CHARS],
                            time=e.ts.isoformat() if e.ts else None)


def _record_claim(ledger: Ledger, inv_id: str, w: _EvidenceWriter, c: ClaimDraft) -> int:
    return ledger.record_claim(inv_id, redact(c.statement), c.category, c.confidence, c.status,
                               [w.write(e) for e in c.supporting],
                               [w.write(e) for e in c.contradicting], c.node, c.rank, c.gpu)


def run_investigation(planner: Planner, ctx: ToolContext, ledger: Ledger, *, question: str,
                      kind: str, target: str, unread: Callable[[], dict[str, str]],
                      pictures: PictureHook | None = None) -> Report:
    inv_id = ledger.start_investigation(question, kind, target, planner.name, __version__)
    log.info("investigation_started", id=inv_id, kind=kind, target=target, planner=planner.name)
    history: list[StepResult] = []
    while len(history) < MAX_STEPS:
        call = planner.next_step(history)
        if call is None:
            break
        history.append(execute(call, ctx, ledger, inv_id, len(history) + 1))
    conclusion = planner.conclude(history)
    report = record_conclusion(ledger, inv_id, history, conclusion, question, unread(),
                               pictures)
    log.info("investigation_finished", id=inv_id, category=report.root_cause.category,
             confidence=report.root_cause.confidence)
    return report


def record_conclusion(ledger: Ledger, inv_id: str, history: list[StepResult], c: Conclusion,
                      question: str, unread: dict[str, str],
                      pictures: PictureHook | None = None,
                      extra_actions: list[ProposedAction] | None = None) -> Report:
    """`extra_actions`: proposals already in the ledger (a model's), listed after c's."""
    w = _EvidenceWriter(ledger, inv_id, history)
    verdict = c.claims[0]
    claim_ids = [_record_claim(ledger, inv_id, w, claim) for claim in c.claims]
    actions = []
    for p in c.proposals:
        aid = ledger.record_action(inv_id, p.tool, redact_data(p.args), p.mutating,
                                   redact(p.rationale),
                                   claim_ids[:1])
        actions.append(ProposedAction(id=aid, tool=p.tool, args=p.args, mutating=p.mutating,
                                      rationale=p.rationale))
    report = Report(
        investigation_id=inv_id, kind=c.kind, question=question,  # type: ignore[arg-type]
        root_cause=RootCause(category=verdict.category,  # type: ignore[arg-type]
                             summary=redact(verdict.statement), node=verdict.node,
                             rank=verdict.rank, gpu=verdict.gpu, confidence=verdict.confidence,
                             evidence=[w.item(e) for e in verdict.supporting]),
        alternatives=c.alternatives, retry=c.retry, actions=actions + (extra_actions or []),
        advice=c.advice,
        unread=sorted(unread), unread_reasons=unread, unknowns=c.unknowns,
        timeline=c.timeline, timeline_left_out=c.timeline_left_out, clock=c.clock,
        breakdown=c.breakdown, latency=c.latency)
    # one redaction step over everything the report carries (summaries, timeline, args)
    report = Report.model_validate(redact_data(report.model_dump(by_alias=True)))
    return store_report(ledger, report, pictures)


def store_report(ledger: Ledger, report: Report, pictures: PictureHook | None) -> Report:
    """Draw the report's pictures (so the stored report lists them), then record it. A picture
    that cannot be drawn is an unknown of the report, never a lost conclusion."""
    if pictures is not None:
        try:
            report.pictures = pictures(report)
        except Exception as exc:  # noqa: BLE001 - the conclusion is recorded regardless
            log.warning("pictures_failed", error=f"{type(exc).__name__}: {exc}")
            report.unknowns.append(f"pictures not drawn: {type(exc).__name__}: {exc}"[:300])
    exit_code = 3 if report.root_cause.category == "unknown" else 0
    assert report.investigation_id is not None
    report.planner = report.planner or ledger.planner_of(report.investigation_id)
    ledger.record_conclusion(report.investigation_id, report.root_cause.category,
                             report.root_cause.confidence, exit_code, report.to_json())
    return report
