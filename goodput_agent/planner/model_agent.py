"""The Claude planner: the model plans, the loop's execute() runs the read-only tools, and the
ledger holds everything. The model can record claims (citing evidence ids the ledger holds) and
proposals (status `proposed`); it can never approve or execute: mutating tools are not offered,
and a request for one is refused by execute() as a tool error."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import structlog
from pydantic import ValidationError

from goodput_agent.core.redact import redact, redact_data
from goodput_agent.ledger import Ledger, digest
from goodput_agent.ledger.chat import claims_of
from goodput_agent.ledger.records import count
from goodput_agent.planner.base import UNPARSED_ARGS, ProposalDraft, StepResult, ToolCall
from goodput_agent.planner.claude_client import (
    ContextExceeded,
    DeadlineReached,
    MessagesClient,
    Turn,
)
from goodput_agent.planner.claude_config import ClaudeSettings
from goodput_agent.planner.loop import execute
from goodput_agent.planner.model_evidence import present, read_page, wrap
from goodput_agent.planner.model_store import record_llm_call
from goodput_agent.planner.model_tools import (
    PLANNER_TOOLS,
    FinishInput,
    ProposeActionInput,
    ReadEvidenceInput,
    RecordClaimInput,
    tool_definitions,
)
from goodput_agent.planner.proposals import JobRefs, checked
from goodput_agent.report import CATEGORIES
from goodput_agent.toolkit import ToolContext, registry

log = structlog.get_logger(__name__)
PLANNER_NAME = "claude"
COMPACT_AT = 0.8  # of the context budget
KEEP_RECENT = 4  # messages never compacted
COMPACTED = "[compacted to save context]"


def prompt_text(name: str) -> str:
    return resources.files("goodput_agent.prompts").joinpath(name).read_text(encoding="utf-8")


def system_prompt(chat: bool = False) -> tuple[str, str]:
    """The system prompt and its hash (stored with the investigation)."""
    text = prompt_text("system_claude.md")
    if chat:
        text += "\n" + prompt_text("system_chat.md")
    return text, digest(text)


class BudgetSpent(Exception):
    """A budget ran out during a model turn (the wall time, while the API was answering)."""


class ToolOutcome:
    """A tool's answer to the model (and a conclusion, when it accepted one)."""

    def __init__(self, content: str, is_error: bool = False, finish: FinishInput | None = None,
                 malformed: bool = False):
        self.content, self.is_error, self.finish = content, is_error, finish
        self.failed_finish = False
        self.malformed = malformed  # not a valid call of any offered tool (name or arguments)


class Agent:
    """One conversation with the model over one investigation's ledger rows."""

    def __init__(self, settings: ClaudeSettings, ledger: Ledger, inv_id: str, ctx: ToolContext,
                 kind: str, *, chat: bool = False, client: MessagesClient | None = None):
        self.settings, self.ledger, self.inv_id, self.ctx, self.kind = (
            settings, ledger, inv_id, ctx, kind)
        self.client = client or MessagesClient(settings)
        self.system, self.prompt_hash = system_prompt(chat)
        self.tools = tool_definitions(finish=not chat)
        self.messages: list[dict[str, Any]] = []
        self.steps: list[StepResult] = []  # the read-only tools it ran, with their outputs
        self.on_message: Callable[[dict[str, Any]], None] | None = None
        self.last_input = 0  # the last request's input tokens (kept across chat answers)
        self.reset_budgets()

    # --- budgets ---------------------------------------------------------------------

    def reset_budgets(self) -> None:
        self.turns = self.tool_calls = self.input_tokens = self.output_tokens = 0
        self.started = time.monotonic()

    def budget_exhausted(self) -> str | None:
        b = self.settings.budgets
        checks = (("max_turns", self.turns, b.max_turns),
                  ("max_tool_calls", self.tool_calls, b.max_tool_calls),
                  ("max_input_tokens", self.input_tokens, b.max_input_tokens),
                  ("max_output_tokens", self.output_tokens, b.max_output_tokens),
                  ("max_wall_s", time.monotonic() - self.started, b.max_wall_s))
        for name, used, limit in checks:
            if used >= limit:
                return f"the {name} budget ({limit:g}) was reached (used {used:g})"
        return None

    def deadline(self) -> float:
        """When the wall-time budget runs out (time.monotonic())."""
        return self.started + self.settings.budgets.max_wall_s

    # --- messages --------------------------------------------------------------------

    def add(self, role: str, content: Any) -> None:
        msg = {"role": role, "content": content}
        self.messages.append(msg)
        if self.on_message:
            self.on_message(msg)

    def _compact(self, keep: int = KEEP_RECENT, force: bool = False) -> None:
        """Near the context budget (or when the server said the request was too long: forced),
        old tool results shrink to a pointer into the ledger (the summary's first line: its
        evidence id for read_evidence)."""
        estimate = max(self.last_input, len(json.dumps(self.messages)) // 4)
        if not force and estimate < COMPACT_AT * self.settings.context_tokens:
            return
        done = 0
        for msg in self.messages[:len(self.messages) - keep]:
            if msg["role"] != "user" or not isinstance(msg["content"], list):
                continue
            for block in msg["content"]:
                content = block.get("content")
                if block.get("type") != "tool_result" or not isinstance(content, str) or \
                        len(content) < 400 or content.startswith(COMPACTED):
                    continue
                pointer = next((x for x in content.splitlines() if "read_evidence id=" in x),
                               "the full result is in the ledger")
                block["content"] = f"{COMPACTED} {pointer}"
                done += 1
        if done:
            log.info("history_compacted", results=done, input_tokens=estimate)

    def _create(self, on_text: Callable[[str], None] | None) -> Turn:
        left = self.settings.budgets.max_output_tokens - self.output_tokens
        return self.client.create(
            system=[{"type": "text", "text": self.system, "cache_control": {"type": "ephemeral"}}],
            tools=self.tools, messages=self.messages, on_text=on_text,
            max_tokens=max(1, min(self.settings.max_tokens_per_turn, left)),
            deadline=self.deadline())

    def _create_within_context(self, on_text: Callable[[str], None] | None) -> Turn:
        """A request the server found too long is recorded, every tool result is compacted to
        its ledger pointer, and it is asked once more; a second refusal goes to the caller."""
        try:
            return self._create(on_text)
        except ContextExceeded as exc:
            self._record_refusal(exc)
        self._compact(keep=0, force=True)
        try:
            return self._create(on_text)
        except ContextExceeded as exc:
            self._record_refusal(exc)
            raise

    def _record_refusal(self, exc: ContextExceeded) -> None:
        log.info("context_exceeded", error=str(exc)[:200])
        self._record(Turn([], "context_length_exceeded", None, 0, 0, 0, 0, 0.0), None)

    def _record(self, turn: Turn, cost: float | None) -> None:
        record_llm_call(self.ledger, self.inv_id, self.settings.model, turn, cost)

    def call(self, on_text: Callable[[str], None] | None = None) -> Turn:
        self._compact()
        try:
            turn = self._create_within_context(on_text)
        except DeadlineReached as exc:
            limit = self.settings.budgets.max_wall_s
            used = time.monotonic() - self.started
            log.warning("wall_budget_spent_in_call", limit_s=limit, used_s=round(used, 3),
                        why=str(exc))
            raise BudgetSpent(f"the max_wall_s budget ({limit:g}) was reached (used {used:.3g}) "
                              f"while the Messages API was answering: {exc}") from exc
        self.turns += 1
        self.last_input = turn.input_tokens + turn.cache_creation_tokens + turn.cache_read_tokens
        self.input_tokens += self.last_input
        self.output_tokens += turn.output_tokens
        cost = self.settings.cost_usd(turn.input_tokens, turn.output_tokens,
                                      turn.cache_creation_tokens, turn.cache_read_tokens)
        self._record(turn, cost)
        # the API refuses empty text blocks and empty assistant turns sent back to it
        content = [_plain(b) for b in turn.content
                   if not (b.get("type") == "text" and not b.get("text", "").strip())]
        self.add("assistant", content or [{"type": "text", "text": "(no answer)"}])
        return turn

    # --- tools -----------------------------------------------------------------------

    def seq(self) -> int:
        return count(self.ledger, "tool_calls", self.inv_id) + 1

    def run_tool(self, name: str, args: Any) -> ToolOutcome:
        limit = self.settings.budgets.max_tool_calls
        if self.tool_calls >= limit and name != "finish_investigation":
            return ToolOutcome(f"refused: the max_tool_calls budget ({limit}) is spent; "
                               "not run", True)
        self.tool_calls += 1
        if isinstance(args, dict) and UNPARSED_ARGS in args:
            out = self._refuse(name, args, "invalid arguments: not a JSON object (truncated or "
                               "malformed); send the call again with valid JSON arguments")
            out.malformed = True
            return out
        if name in PLANNER_TOOLS and (name != "finish_investigation" or
                                      any(t["name"] == name for t in self.tools)):
            try:
                parsed = PLANNER_TOOLS[name].model_validate(args)
            except ValidationError as exc:
                e = exc.errors()[0]
                where = ".".join(str(p) for p in e["loc"]) or "input"
                error = f"invalid arguments: {where}: {e['msg']}"
                self._refuse(name, args if isinstance(args, dict) else {}, error)
                return ToolOutcome(error, True, malformed=True)
            return getattr(self, f"_{name}")(parsed)
        if not isinstance(args, dict):
            return ToolOutcome("invalid arguments: expected an object", True, malformed=True)
        # everything else, mutating or unknown, goes to execute(), which refuses what it must
        step = execute(ToolCall(tool=name, args=args), self.ctx, self.ledger, self.inv_id,
                       self.seq())
        self.steps.append(step)
        if step.error is not None:
            return ToolOutcome(f"error: {step.error}", True, malformed=step.error.startswith(
                ("unknown tool", "invalid arguments")))
        body, _ = present(step, self.ledger, self.inv_id, self.settings.result_chars)
        return ToolOutcome(wrap(name, step.tool_call_id, body))

    def _refuse(self, name: str, args: dict[str, Any], error: str) -> ToolOutcome:
        """A call that cannot run is still a recorded tool call, with its error."""
        tool = registry().get(name)
        read_only = name in PLANNER_TOOLS or bool(tool is not None and tool.read_only)
        self.ledger.record_tool_call(self.inv_id, self.seq(), name, read_only,
                                     redact_data(args), None, None, 0.0, error,
                                     datetime.now(UTC))
        return ToolOutcome(f"error: {error}", True)

    def _read_evidence(self, a: ReadEvidenceInput) -> ToolOutcome:
        try:
            text, _ = read_page(self.ledger, self.inv_id, a.id, a.start, a.count,
                                self.settings.result_chars)
        except LookupError as exc:
            return ToolOutcome(f"error: {exc}", True)
        return ToolOutcome(wrap("read_evidence", None, text))

    def _record_claim(self, a: RecordClaimInput) -> ToolOutcome:
        try:
            cid = self.ledger.record_claim(self.inv_id, redact(a.statement), a.category,
                                           a.confidence, a.status, a.supporting,
                                           a.contradicting, a.node, a.rank, a.gpu)
        except ValueError as exc:
            return ToolOutcome(f"refused: {exc}; cite ids shown as [E<id>] in tool results",
                               True)
        return ToolOutcome(f"recorded claim {cid}")

    def _claims(self) -> dict[int, dict[str, Any]]:
        return claims_of(self.ledger, self.inv_id)

    def _propose_action(self, a: ProposeActionInput) -> ToolOutcome:
        missing = [c for c in a.claim_ids if c not in self._claims()]
        if missing:
            return ToolOutcome(f"refused: unknown claim ids {missing}", True)
        inv = self.ctx.bundle.inventory if self.ctx.bundle is not None else None
        draft = checked(ProposalDraft(tool=a.tool, args=a.args, rationale=a.rationale),
                        JobRefs.read(inv))
        if not isinstance(draft, ProposalDraft):
            return ToolOutcome(f"refused: {draft.missing}; a proposal names a mutating tool "
                               "and the exact arguments it runs with (advice for a person "
                               "belongs in the conclusion's unknowns)", True)
        aid = self.ledger.record_action(self.inv_id, draft.tool, redact_data(draft.args), True,
                                        redact(a.rationale), a.claim_ids)
        return ToolOutcome(f"recorded proposal {aid} with status proposed. Nothing was executed; "
                           "only a person can approve it, outside this conversation.")

    def _finish_investigation(self, a: FinishInput) -> ToolOutcome:
        problems = []
        if a.kind != self.kind:
            problems.append(f"kind must be {self.kind!r}")
        if a.category != "unknown" and a.category not in CATEGORIES[self.kind]:
            problems.append(f"category must be one of {', '.join(CATEGORIES[self.kind])} "
                            "or unknown")
        claims = self._claims()
        if a.category != "unknown" and a.verdict_claim_id not in claims:
            problems.append("verdict_claim_id must name a claim recorded with record_claim")
        if problems:
            return ToolOutcome("invalid conclusion: " + "; ".join(problems), True)
        return ToolOutcome("conclusion accepted", finish=a)

    def answer_tools(self, turn: Turn,
                     on_tool: Callable[[str, Any, float, bool], None] | None = None
                     ) -> list[ToolOutcome]:
        """Run every tool_use of the turn; one user message carries all results."""
        blocks, outcomes = [], []
        for b in turn.content:
            if b.get("type") != "tool_use":
                continue
            t0 = time.perf_counter()
            out = self.run_tool(b["name"], b.get("input"))
            out.failed_finish = b["name"] == "finish_investigation" and out.is_error
            if on_tool:
                on_tool(b["name"], b.get("input"), (time.perf_counter() - t0) * 1000,
                        out.is_error)
            block = {"type": "tool_result", "tool_use_id": b["id"], "content": out.content}
            if out.is_error:
                block["is_error"] = True
            blocks.append(block)
            outcomes.append(out)
        if blocks:
            self.add("user", blocks)
        return outcomes


def _plain(block: dict[str, Any]) -> dict[str, Any]:
    """A content block as it is sent back: only the fields the API defines for it."""
    if block.get("type") == "text":
        return {"type": "text", "text": block.get("text", "")}
    if block.get("type") == "tool_use":
        return {"type": "tool_use", "id": block["id"], "name": block["name"],
                "input": block.get("input", {})}
    return block
