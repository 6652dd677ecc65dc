"""Which trace file and which step a command or a page means: a named file loaded (BadInput,
one line naming it, when it cannot be), a step picked by number or the median one. Shared by
`goodput trace` and the review pages' step pictures."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.core.errors import BadInput
from goodput_agent.parsing.kineto.model import Step, Trace

from .model import StepBreakdown


def load_one(path: Path, rel_path: str | None = None, node_hint: str | None = None) -> Trace:
    """One trace file; BadInput (one line naming it) when it cannot be loaded."""
    from goodput_agent.parsing.base import ParseError
    from goodput_agent.parsing.kineto.load import load_trace

    name = rel_path or str(path)
    if not path.exists():
        raise BadInput(f"{name}: no such file or directory")
    if path.is_dir():
        raise BadInput(f"{name}: a directory, not a trace file")
    try:
        return load_trace(path, rel_path=name, node_hint=node_hint)
    except ParseError as exc:
        raise BadInput(str(exc).splitlines()[0] if str(exc) else f"{name}: not a trace") from None


def pick_step(tr: Trace, number: int | None) -> tuple[Step, StepBreakdown]:
    """Step `number`, or the median step (by duration), with its breakdown."""
    from .trace_steps import rank_breakdown, step_breakdown, steps_of

    steps = steps_of(tr)
    if not steps:
        raise BadInput(f"{tr.meta.path}: no steps to draw (no ProfilerStep spans, no GPU ops)")
    if number is None:
        median = rank_breakdown(tr).median_step
        assert median is not None  # there are steps
        return next(s for s in steps if s.number == median.step), median
    step = next((s for s in steps if s.number == number), None)
    if step is None:
        raise BadInput(f"{tr.meta.path}: no step {number} (its steps: "
                       f"{steps[0].number}..{steps[-1].number})")
    return step, step_breakdown(tr, step)
