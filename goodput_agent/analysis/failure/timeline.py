"""The picture of a failure's cascade: each node's and rank's first notable event on one clock,
the part of it a report keeps, and which of its events are the culprit's own chain."""

from __future__ import annotations

from goodput_agent.core.events import Event, EventKind, Role

from .model import FailureVerdict

TIMELINE_LIMIT = 40  # entries a report keeps; it counts the rest (timeline_left_out)


def timeline(events: list[Event], limit: int = TIMELINE_LIMIT) -> list[Event]:
    """Each node's and rank's first notable event, on one clock: the picture of the cascade
    (every one: the verdict keeps the first `limit` and counts the rest)."""
    firsts: dict[tuple[str | None, int | None, str], Event] = {}
    for e in sorted(events, key=Event.sort_key):
        if e.role == Role.context and e.kind not in (EventKind.job_state, EventKind.node_fail):
            continue
        key = (e.node, e.rank, e.role.value)
        firsts.setdefault(key, e)
    ordered = sorted(firsts.values(), key=Event.sort_key)
    return ordered if limit <= 0 else ordered[:limit]


def set_timeline(verdict: FailureVerdict, events: list[Event]) -> FailureVerdict:
    """The verdict's timeline: the first TIMELINE_LIMIT entries, and how many more there were."""
    every = timeline(events, 0)
    verdict.timeline = every[:TIMELINE_LIMIT]
    verdict.timeline_left_out = len(every) - len(verdict.timeline)
    return verdict


def on_culprit_chain(e: Event, verdict: FailureVerdict) -> bool:
    """Whether an event that can start a failure is the culprit's own: one the verdict cites,
    or one on the verdict's node (and rank, when both name one). Others started no failure
    the verdict explains: another node's fault, a pre-existing condition, the job's end; a
    peer's error the verdict cites (a socket to the culprit failed) is evidence, not a cause."""
    if e.node is not None and verdict.node is not None and e.node != verdict.node:
        return False
    if any(e is x or e == x for x in verdict.evidence):
        return True
    if verdict.node is None or e.node != verdict.node:
        return False
    return e.rank is None or verdict.rank is None or e.rank == verdict.rank
