"""How mutating tools reach a cluster: a Slurm command runner and the result they return."""

from __future__ import annotations

import shlex
from typing import Any, Protocol

from pydantic import BaseModel

from goodput_agent.sources.command import CommandResult  # noqa: F401 - re-exported
from goodput_agent.toolkit import ToolContext, ToolUnavailable


class ActionOutput(BaseModel):
    """What an executed action returned: stored whole in the execution row."""

    ok: bool
    command: str
    results: list[CommandResult] = []
    response: Any = None  # an API response (Kubernetes)

    def summary(self) -> dict[str, object]:
        return {"ok": self.ok, "command": self.command}


class SlurmRunner(Protocol):
    """goodput_agent.sources.slurm.SlurmCLI: Slurm's commands with SLURM_CONF and a timeout."""

    def run(self, argv: list[str]) -> CommandResult: ...


def slurm(ctx: ToolContext) -> SlurmRunner:
    if ctx.slurm is None:
        raise ToolUnavailable("no Slurm cluster to act on (run where scontrol reaches it)")
    return ctx.slurm


def command_line(*argvs: list[str]) -> str:
    return " && ".join(shlex.join(a) for a in argvs)


def run_all(ctx: ToolContext, *argvs: list[str]) -> ActionOutput:
    """Run the commands in order, stopping at the first that fails."""
    runner = slurm(ctx)
    results: list[CommandResult] = []
    for argv in argvs:
        results.append(runner.run(argv))
        if results[-1].rc != 0:
            break
    ok = len(results) == len(argvs) and all(r.rc == 0 for r in results)
    return ActionOutput(ok=ok, command=command_line(*argvs), results=results)
