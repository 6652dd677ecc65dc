"""One investigation planned by a model (Claude, or a self-hosted model through `client`): the
turn loop over the Agent, its budgets and repairs, and the report. For a failure the report is
the failure analysis' verdict, which the model can only add to with evidence
(model_verdict.py); a model server that fails mid-run is one ledger row and one line, and the
analysis' report still comes out of the same investigation."""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog
from pydantic import BaseModel

from goodput_agent import __version__
from goodput_agent.ledger import Ledger
from goodput_agent.pictures.report_pictures import PictureHook
from goodput_agent.planner.claude_client import (
    ContextExceeded,
    MessagesClient,
    ModelCallFailed,
    Turn,
)
from goodput_agent.planner.claude_config import ClaudeSettings
from goodput_agent.planner.model_agent import Agent, BudgetSpent, ToolOutcome, system_prompt
from goodput_agent.planner.model_report import model_report
from goodput_agent.planner.model_tools import FinishInput
from goodput_agent.report import CATEGORIES, Report
from goodput_agent.toolkit import ToolContext

log = structlog.get_logger(__name__)
PLANNER_NAME = "claude"


class ModelRunStats(BaseModel):
    """What one model-planned investigation cost and how it ended (for evals and benchmarks)."""

    investigation_id: str
    turns: int = 0
    tool_calls: int = 0
    valid_tool_calls: int = 0  # calls of an offered tool with arguments its schema accepts
    prose_answers: int = 0  # turns answered without a tool call (each nudged)
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    finished: bool = False  # the model called finish_investigation with a valid conclusion
    stopped: str | None = None  # why it stopped without one (budget, repairs, server failure)
    outcome: str = ""  # failure only: how the model's verdict met the analysis' (model_verdict)


def first_message(question: str, kind: str, target: str) -> str:
    cats = ", ".join(CATEGORIES[kind])
    return (f"Question: {question}\nKind: {kind}. Verdict categories: {cats}, or unknown.\n"
            f"Evidence source: {target}\nInvestigate with the tools, record claims citing "
            "evidence ids, then call finish_investigation.")


class _Run:
    """The turn loop's state: the conclusion, or why there is none."""

    def __init__(self, agent: Agent, repair_attempts: int,
                 describe: Callable[[ModelCallFailed], str] = str):
        self.agent, self.repair_attempts, self.describe = agent, repair_attempts, describe
        self.finish: FinishInput | None = None
        self.why_unknown: str | None = None
        self.failure: ModelCallFailed | None = None
        self.repairs = self.valid = self.prose = 0

    def turn(self, on_text: Callable[[str], None] | None) -> bool:
        """One model turn and its tool calls; False when the run is over."""
        agent = self.agent
        spent = agent.budget_exhausted()
        if spent:
            self.why_unknown = f"partial report: {spent} before a conclusion"
            return False
        try:
            turn = agent.call(on_text=on_text)
        except BudgetSpent as exc:
            self.why_unknown = f"partial report: {exc} before a conclusion"
            return False
        except ModelCallFailed as exc:  # the server failed, refused or died mid-answer
            self.failure = exc
            self.why_unknown = self.describe(exc)
            if not isinstance(exc, ContextExceeded):  # its refusals are rows already
                agent._record(Turn([], f"failed: {type(exc).__name__}: {exc}"[:200], None, 0,
                                   0, 0, 0, 0.0), None)
            return False
        outcomes = agent.answer_tools(turn)
        self.valid += sum(not o.malformed for o in outcomes)
        self.finish = next((o.finish for o in outcomes if o.finish is not None), None)
        if self.finish is not None:
            return False
        bad = [o for o in outcomes if o.failed_finish]
        if not outcomes:  # the model answered in prose, without a tool call
            self.prose += 1
            bad = [ToolOutcome("no finish_investigation call (an answer without a tool call)",
                               True)]
            agent.add("user", "Finish now: call finish_investigation with your conclusion.")
        if bad:
            self.repairs += 1
            if self.repairs > self.repair_attempts:
                self.why_unknown = (f"no valid conclusion after {self.repair_attempts} repair "
                                    f"attempts: {bad[-1].content}")
                return False
        return True


def investigate(settings: ClaudeSettings, ctx: ToolContext, ledger: Ledger, *, question: str,
                kind: str, target: str, unread: Callable[[], dict[str, str]],
                client: MessagesClient | None = None, pictures: PictureHook | None = None,
                planner: str = PLANNER_NAME, on_text: Callable[[str], None] | None = None,
                on_stats: Callable[[ModelRunStats], None] | None = None,
                notify: Callable[[str], None] | None = None,
                describe: Callable[[ModelCallFailed], str] = str) -> Report:
    """One investigation planned by a model; always ends with a recorded report, except when
    the model server fails on a question other than a failure's (ModelCallFailed is raised
    for the caller's fallback). `notify` is told, in one line, how a failure's model verdict
    met the analysis' when it was not simply adopted."""
    from goodput_agent.planner.model_verdict import failure_report

    _, phash = system_prompt()
    inv_id = ledger.start_investigation(question, kind, target, planner, __version__,
                                        prompt_hash=phash)
    log.info("investigation_started", id=inv_id, kind=kind, target=target, planner=planner,
             model=settings.model)
    t0 = time.perf_counter()
    agent = Agent(settings, ledger, inv_id, ctx, kind, client=client)
    agent.add("user", first_message(question, kind, target))
    run = _Run(agent, settings.repair_attempts, describe)
    while run.turn(on_text):
        pass
    stats = ModelRunStats(investigation_id=inv_id, turns=agent.turns, tool_calls=agent.tool_calls,
                          valid_tool_calls=run.valid, prose_answers=run.prose,
                          input_tokens=agent.input_tokens,
                          output_tokens=agent.output_tokens, finished=run.finish is not None,
                          stopped=run.why_unknown)
    if kind == "failure" and ctx.bundle is not None:
        report, stats.outcome = failure_report(agent, run.finish, run.why_unknown, question,
                                               unread(), pictures)
        if notify is not None and run.failure is not None:  # the server, in one line
            notify(run.why_unknown or str(run.failure))
        elif notify is not None and stats.outcome.startswith("stands"):
            notify(f"{stats.outcome}{_mistakes(stats)}")
    elif run.failure is not None:
        raise run.failure
    else:
        report = model_report(agent, run.finish, run.why_unknown, question, unread(), pictures)
    stats.seconds = time.perf_counter() - t0
    log.info("investigation_finished", id=inv_id, category=report.root_cause.category,
             turns=agent.turns, tool_calls=agent.tool_calls, valid_tool_calls=run.valid,
             input_tokens=agent.input_tokens, output_tokens=agent.output_tokens,
             outcome=stats.outcome)
    if on_stats is not None:
        on_stats(stats)
    return report


def _mistakes(stats: ModelRunStats) -> str:
    """What the model got wrong on the way, for the one line (each is also a ledger row)."""
    bad = stats.tool_calls - stats.valid_tool_calls
    parts = [f"{bad} of {stats.tool_calls} tool calls malformed" if bad else "",
             f"{stats.prose_answers} answers without a tool call" if stats.prose_answers else ""]
    said = "; ".join(p for p in parts if p)
    return f" ({said})" if said else ""
