"""The classes a failure investigation can conclude, in one table.

Adding a class is one row here, the parser that recognises its lines (it sets `Event.category`
to the row's name), and its branch in `analysis/failure/remedy.py`. The report's categories, the
analysis' weights and the approval policy's retry rules all derive from this table.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

RetryNeeds = Literal["exclusion", "change", "checkpoint", "diagnosis"]


class FailureClass(NamedTuple):
    name: str
    # how decisive a first failure of this class is when two start within the skew tolerance;
    # None: never a first-failure candidate (a hang is concluded from the absence of one)
    strength: float | None
    base_confidence: float  # before the evidence's weight and the timing checks
    # a fault of the host it happened on: the node's own kernel log is expected to show it
    on_node: bool
    # what must change before a retry can pass: the node excluded, the job's memory or code,
    # nothing but resuming from the checkpoint, or first a diagnosis (where it was stuck)
    retry_needs: RetryNeeds


FAILURE_CLASSES: tuple[FailureClass, ...] = (
    FailureClass("gpu_hardware", 1.0, 0.85, True, "exclusion"),
    FailureClass("gpu_oom", 0.9, 0.9, False, "change"),
    FailureClass("host_oom", 0.95, 0.85, True, "change"),
    FailureClass("application_error", 0.7, 0.8, False, "change"),
    FailureClass("network_fault", 0.75, 0.72, True, "exclusion"),
    FailureClass("node_failure", 0.92, 0.82, True, "exclusion"),
    FailureClass("hang", None, 0.6, False, "diagnosis"),
    FailureClass("time_limit", 0.9, 0.9, False, "checkpoint"),
    FailureClass("preempted", 0.9, 0.9, False, "checkpoint"),
)

NAMES = tuple(c.name for c in FAILURE_CLASSES)


def names_where(**match: object) -> tuple[str, ...]:
    """The classes whose fields equal `match`, in table order: names_where(on_node=True)."""
    return tuple(c.name for c in FAILURE_CLASSES
                 if all(getattr(c, k) == v for k, v in match.items()))
