"""The unknowns every planner's report carries whatever the planner concluded: the evidence
`goodput collect` could not collect (the bundle manifest's errors, one line each)."""

from __future__ import annotations

from goodput_agent.bundle import Inventory


def with_missing_evidence(unknowns: list[str], inv: Inventory | None) -> list[str]:
    """`unknowns`, then each "missing evidence: ..." line of the bundle's manifest that
    `unknowns` does not already say word for word."""
    said = set(unknowns)
    return [*unknowns, *(m for m in (inv.missing if inv is not None else []) if m not in said)]
