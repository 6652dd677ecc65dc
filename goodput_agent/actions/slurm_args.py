"""Argument types and shared mechanics of the Slurm mutating tools."""

from __future__ import annotations

from abc import abstractmethod
from typing import Annotated, ClassVar, TypeVar

from pydantic import AfterValidator, BaseModel, StringConstraints

from goodput_agent.actions.runner import ActionOutput, command_line, run_all, slurm
from goodput_agent.parsing.nodelist import expand_exactly
from goodput_agent.toolkit import MutatingTool, ToolContext, ToolPreview

MAX_TARGET_NODES = 256  # one action names at most this many hosts


def hosts(expr: str) -> list[str]:
    """The hosts a node argument names: a hostlist (gpu-[01-04]) expanded as Slurm does."""
    return expand_exactly(expr, MAX_TARGET_NODES)


def _expandable(expr: str) -> str:
    hosts(expr)  # raises ValueError: refused at validation, before any check counts it
    return expr


# one hostname, or a hostlist expression (gpu-[01-04]); no spaces, no '=' (one argv token).
# Every check counts the expanded hosts, and the command names each of them.
NodeName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._\-\[\],]+$", max_length=200),
                     AfterValidator(_expandable)]


def all_hosts(exprs: list[str]) -> list[str]:
    out: list[str] = []
    for expr in exprs:
        out.extend(h for h in hosts(expr) if h not in out)
    return out


def slurm_hostnames(ctx: ToolContext, exprs: list[str]) -> list[str]:
    """Reasons the expansion above differs from Slurm's own (`scontrol show hostnames`)."""
    why: list[str] = []
    for expr in exprs:
        if "[" not in expr and "," not in expr:
            continue
        res = slurm(ctx).run(["scontrol", "show", "hostnames", expr])
        if res.rc != 0:
            why.append(f"Slurm cannot expand the host list {expr!r}: "
                       f"{res.stderr.strip()[:200]}")
        elif res.stdout.split() != hosts(expr):
            why.append(f"Slurm expands {expr!r} to {' '.join(res.stdout.split())}, not "
                       f"{' '.join(hosts(expr))}: refused")
    return why
JobId = Annotated[str, StringConstraints(pattern=r"^\d+(_\d+)?$", max_length=32)]


def _one_line(text: str) -> str:
    clean = " ".join(text.split())
    if not clean:
        raise ValueError("a reason is required")
    return clean[:200]


Reason = Annotated[str, AfterValidator(_one_line)]

OUT_OF_SERVICE = ("drain", "drng", "down", "fail", "maint", "inval")


def partitions_of(ctx: ToolContext, nodes: list[str]) -> list[tuple[str, list[str], list[str]]]:
    """(partition, its nodes, those already out of service) for each partition of `nodes`,
    from `sinfo -h -N -o %N|%P|%t`."""
    res = slurm(ctx).run(["sinfo", "-h", "-N", "-o", "%N|%P|%t"])
    if res.rc != 0:
        raise RuntimeError(f"sinfo failed: {res.stderr.strip()[:200]}")
    members: dict[str, set[str]] = {}
    out: dict[str, set[str]] = {}
    for line in res.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3:
            continue
        node, part, state = parts[0], parts[1].rstrip("*"), parts[2].rstrip("*~#!%$@^-+")
        members.setdefault(part, set()).add(node)
        if state.startswith(OUT_OF_SERVICE):
            out.setdefault(part, set()).add(node)
    return [(p, sorted(ns), sorted(out.get(p, set()))) for p, ns in sorted(members.items())
            if set(nodes) & ns]


def node_states(ctx: ToolContext, nodes: list[str]) -> dict[str, str] | None:
    """Each node's state as sinfo prints it (lower case: idle, drain, drng, down...); None
    when sinfo cannot answer or does not know every node."""
    res = slurm(ctx).run(["sinfo", "-h", "-N", "-n", ",".join(nodes), "-o", "%N|%t"])
    if res.rc != 0:
        return None
    states = {}
    for row in res.stdout.splitlines():
        node, _, state = row.strip().partition("|")
        states[node] = state.rstrip("*~#!%$@^-+").lower()
    return states if set(nodes) <= set(states) else None


def job_reason(ctx: ToolContext, job: str) -> str | None:
    """squeue's reason for a job (JobHeldUser, Resources, None...); None when it has left."""
    res = slurm(ctx).run(["squeue", "-h", "-j", job, "-o", "%r"])
    return res.stdout.strip() or None if res.rc == 0 else None


In = TypeVar("In", bound=BaseModel)


class ScontrolTool(MutatingTool[In, ActionOutput]):
    """A Slurm mutating tool that is one command line: the preview shows exactly it, `run` runs
    exactly it (through the gate: MutatingTool guards `run`)."""

    output_model = ActionOutput
    requires = ("slurm",)
    timeout_s = 60.0
    notes: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def argv(self, args: In) -> list[str]: ...

    def preview(self, ctx: ToolContext, args: In) -> ToolPreview:
        return ToolPreview(command=command_line(self.argv(args)), notes=list(self.notes))

    def run(self, ctx: ToolContext, args: In) -> ActionOutput:
        return run_all(ctx, self.argv(args))
