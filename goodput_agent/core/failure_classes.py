"""The classes a failure investigation can conclude, in one table.

Adding a class is one row here, the parser line that recognises it (it sets `Event.category` to
the row's name) and its remedy function (`@remedy_for(name)` in `analysis/failure/remedy.py`).
Everything else derives from the table when it is imported: the report's categories (and its
JSON schema), the analysis' weights and base confidences, the classes that name the node at
fault (fleet accounting's node causes, verify's drained-node check, the policy's exclusion
rule), the external stops that end the whole job, and the approval policy's retry rules
(`policies/default.yaml` leaves them to this table). tests/core/test_failure_classes.py adds a
throwaway row and follows it through each of these.
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
    # what must change before a retry can pass: the node excluded (the node is at fault), the
    # job's memory or code, nothing but resuming from the checkpoint (an external stop of the
    # whole job), or first a diagnosis (where it was stuck)
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


def names() -> tuple[str, ...]:
    """Every class, in table order (the order the report's schema lists them in)."""
    return tuple(c.name for c in FAILURE_CLASSES)


def names_where(**match: object) -> tuple[str, ...]:
    """The classes whose fields equal `match`, in table order: names_where(on_node=True)."""
    return tuple(c.name for c in FAILURE_CLASSES
                 if all(getattr(c, k) == v for k, v in match.items()))


def node_at_fault() -> tuple[str, ...]:
    """The classes that blame the node they happened on: a retry must exclude it, fleet
    accounting counts them against it, and verify expects it drained."""
    return names_where(retry_needs="exclusion")


def job_level() -> tuple[str, ...]:
    """External stops of the whole job (a time limit, a preemption): no node or rank is at
    fault, and resuming from the checkpoint is the retry."""
    return names_where(retry_needs="checkpoint")
