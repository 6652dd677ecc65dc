"""The tool interface: typed, described, time-bounded, and marked read-only or mutating.

Every tool is one module in `tools/` (installed as goodput_agent.tools) that defines `TOOL`.
The registry discovers them, so adding a tool never touches the planner or the loop.
Descriptions are data: prompts/tools/<name>.md.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, Field

from goodput_agent.bundle import Bundle
from goodput_agent.core.events import Event
from goodput_agent.metrics.source import MetricsSource

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)


@dataclass
class ToolContext:
    """The evidence sources a tool may read. Live sources join here behind the same tools."""

    bundle: Bundle | None = None
    # a live metrics source (Prometheus); None: metrics come from the bundle's files
    metrics: MetricsSource | None = None
    # told (bytes done, bytes total) during long scans; the CLI draws it on a terminal
    progress: Callable[[int, int], None] | None = None
    # live clients for the mutating tools, which run only through the approval gate:
    # a Slurm command runner (.run(argv) -> CommandResult) and a kubernetes ApiClient
    slurm: Any = None
    kube: Any = None


class Tool(ABC, Generic[In, Out]):
    name: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    output_model: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = True
    timeout_s: ClassVar[float] = 120.0

    @property
    def description(self) -> str:
        return tool_description(self.name)

    @abstractmethod
    def run(self, ctx: ToolContext, args: In) -> Out: ...


class ActionTarget(BaseModel):
    """What a mutating tool acts on, for the policy's scope and blast-radius checks."""

    nodes: list[str] = Field(default_factory=list)
    namespace: str | None = None
    job: str | None = None
    isolates: bool = False  # takes the nodes out of service (drain, cordon)
    retries: bool = False  # reruns a job (requeue, restart)
    changes_config: bool = False  # applies a configuration change
    paths: list[str] = Field(default_factory=list)  # files it writes
    runs: list[str] = Field(default_factory=list)  # files it submits (a job script)
    excludes: list[str] = Field(default_factory=list)  # hosts a retry is kept off


class ToolPreview(BaseModel):
    """Exactly what would run: the command line or API call, and a dry run's diff if any."""

    command: str
    dry_run: str | None = None
    notes: list[str] = Field(default_factory=list)


# the approval row the gate is executing under (set only by goodput_agent.approval.gate)
GATE_APPROVAL: ContextVar[int | None] = ContextVar("goodput_gate_approval", default=None)
# what the gate checked against the policy just before `run` (a tool that writes files
# refuses when its target resolves elsewhere by the time it writes)
GATE_TARGET: ContextVar[ActionTarget | None] = ContextVar("goodput_gate_target", default=None)


class MutatingTool(Tool[In, Out]):
    """A tool that changes the cluster. It never runs from the planner loop: only
    goodput_agent.approval.gate executes it, after a valid approval row. Each subclass's `run`
    refuses to start unless the gate has set GATE_APPROVAL."""

    read_only: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()  # ToolContext fields it acts through: slurm, kube

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        inner = cls.__dict__.get("run")
        if inner is None:
            return

        @functools.wraps(inner)
        def run(self: MutatingTool, ctx: ToolContext, args: Any) -> Any:
            if GATE_APPROVAL.get() is None:
                raise PermissionError(f"{self.name} mutates: it runs only through the approval "
                                      "gate, under a valid approval")
            return inner(self, ctx, args)

        cls.run = run  # type: ignore[method-assign]

    @abstractmethod
    def preview(self, ctx: ToolContext, args: In) -> ToolPreview: ...

    @abstractmethod
    def target(self, args: In) -> ActionTarget: ...

    def live_check(self, ctx: ToolContext, args: In) -> list[str]:
        """Reasons to refuse that only the cluster can tell (an argument the cluster reads
        otherwise than the checks did); checked by the gate just before `run`."""
        return []

    def fingerprint(self, args: In) -> dict[str, str]:
        """The state an approval is given on (a file's digest): execution refuses when it
        changed since, so what runs is what the approver saw."""
        return {}

    def reconcile(self, ctx: ToolContext, args: In) -> bool | None:
        """After a crash between start and result: did the change happen (True), not (False),
        or can the cluster not tell (None)?"""
        return None


class ToolUnavailable(Exception):
    """The source this tool needs is not present (no bundle, no Slurm, ...)."""


def tool_description(name: str) -> str:
    path = resources.files("goodput_agent.prompts").joinpath("tools", f"{name}.md")
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""


@cache
def registry() -> dict[str, Tool]:
    import goodput_agent.tools as pkg

    found: dict[str, Tool] = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        tool = getattr(module, "TOOL", None)
        if isinstance(tool, Tool):
            found[tool.name] = tool
    return found


# --- shared mechanics for the evidence-reading tools -------------------------------------


class EventsOutput(BaseModel):
    """What an evidence tool returns: events on one clock plus the layout facts it found."""

    events: list[Event] = Field(default_factory=list)
    rank_hosts: dict[int, str] = Field(default_factory=dict)
    rank_gpus: dict[int, str] = Field(default_factory=dict)
    facts: dict[str, dict] = Field(default_factory=dict)  # per file
    files_read: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def summary(self) -> dict[str, object]:
        kinds: dict[str, int] = {}
        for e in self.events:
            kinds[e.kind.value] = kinds.get(e.kind.value, 0) + 1
        return {"files": len(self.files_read), "events": len(self.events), "by_kind": kinds}


def read_events(ctx: ToolContext, formats: Collection[str], node: str | None = None,
                rank: int | None = None) -> EventsOutput:
    if ctx.bundle is None:
        raise ToolUnavailable("no incident bundle is open")
    out = EventsOutput()
    for f, result in ctx.bundle.parse_many(ctx.bundle.inventory.of_format(*formats),
                                               ctx.progress):
        out.files_read.append(f.rel_path)
        out.events.extend(e for e in result.events
                          if (node is None or e.node == node) and (rank is None or e.rank == rank))
        for r, h in result.rank_hosts.items():
            out.rank_hosts.setdefault(r, h)
        for r, g in result.rank_gpus.items():
            out.rank_gpus.setdefault(r, g)
        if result.facts:
            out.facts[f.rel_path] = result.facts
        out.warnings.extend(result.warnings)
    out.events.sort(key=Event.sort_key)
    return out
