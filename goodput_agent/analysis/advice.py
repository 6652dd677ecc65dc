"""Advice: what a person should do that no tool executes (service a GPU, fix the code, collect
stacks, add capacity), or a change Goodput could not make exact. Advice is its own kind: it
names no tool, gets no action id and can never be approved.

A remedy that rests on a measured fact states it as a `Premise`: a comparison of numbers the
report itself holds (its `latency` object: each window's numbers and configuration, the
verdict's deciding numbers). `premise_holds` checks one against a report's numbers, so advice
is never given against the facts it cites (more replicas when the arrivals fell).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

Op = Literal[">=", "<=", ">", "<", "==", "!="]
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
    "==": operator.eq, "!=": operator.ne}


class Premise(BaseModel):
    """`left op factor * right`, each side a dotted path into the report's latency object
    (`incident.arrival_rate_est`, `baseline.config.max_num_seqs`) or, on the right, a number.
    Configuration values compare as numbers where both sides are numbers, else as text."""

    left: str
    op: Op
    right: str | float
    factor: float = 1.0
    text: str  # the fact in words, with the numbers as measured


class Advice(BaseModel):
    topic: str  # what kind of change: gpu_service, code_fix, collect_stacks, engine_setting, ...
    text: str  # what a person does
    rationale: str = ""
    details: dict[str, Any] = Field(default_factory=dict)  # node, gpu, file, key, from, to ...
    # what would make it an executable proposal; None: no tool does this kind of thing
    missing: str | None = None
    premises: list[Premise] = Field(default_factory=list)


def lookup(data: Mapping[str, Any] | None, path: str) -> Any:
    """The value at a dotted path (`incident.config.max_num_seqs`), None when absent."""
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    try:
        return float(str(v))
    except (TypeError, ValueError):
        return None


def premise_holds(p: Premise, numbers: Mapping[str, Any] | None) -> bool:
    """Whether the report's numbers bear the premise out; a number that is absent does not."""
    left = lookup(numbers, p.left)
    right = p.right if isinstance(p.right, float | int) else lookup(numbers, p.right)
    if left is None or right is None:
        return False
    a, b = _number(left), _number(right)
    if a is not None and b is not None:
        return _OPS[p.op](a, p.factor * b)
    if p.op in ("==", "!=") and p.factor == 1.0:
        return _OPS[p.op](str(left), str(right))
    return False


def all_hold(premises: list[Premise], numbers: Mapping[str, Any] | None) -> bool:
    return all(premise_holds(p, numbers) for p in premises)
