"""One Kubernetes JSON document's events, and the value helpers its readers share."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from goodput_agent.core.events import Clock, Event
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.json_positions import (
    JsonPath,
    JsonPositions,
    json_path_text,
    locator_for,
)
from goodput_agent.parsing.k8s.verdicts import (
    Verdict,
)
from goodput_agent.parsing.timefmt import parse_iso

_KEEP_KEYS = frozenset({
    "items", "metadata", "name", "status", "containerStatuses", "initContainerStatuses",
    "ephemeralContainerStatuses", "state", "lastState", "terminated", "waiting", "reason",
    "message", "exitCode", "conditions", "spec", "nodeName", "taints", "involvedObject",
    "regarding", "note", "type",
})


def keep_path(path: JsonPath) -> bool:
    return len(path) <= 9 and all(isinstance(p, int) or p in _KEEP_KEYS for p in path)


def k8s_time(value: Any, ctx: ParseContext) -> tuple[datetime | None, Clock]:
    if not isinstance(value, str) or not value:
        return None, Clock.none
    hit = parse_iso(value, ctx.clock)
    return (hit[0], hit[1]) if hit else (None, Clock.none)


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class DocumentEvents:
    """Accumulates events for one document."""

    def __init__(self, positions: JsonPositions, ctx: ParseContext):
        self.positions = positions
        self.ctx = ctx
        self.events: list[Event] = []

    def add(self, verdict: Verdict, path: JsonPath, summary: str, *, node: str | None,
            ts_value: Any, detail: dict[str, Any], rank: int | None = None) -> None:
        ts, clock = k8s_time(ts_value, self.ctx)
        detail = {k: v for k, v in detail.items() if v is not None and v != ""}
        detail["json_path"] = json_path_text(path)
        detail.update(verdict.detail)
        if verdict.weight:
            detail["weight"] = verdict.weight
        self.events.append(Event(
            kind=verdict.kind, role=verdict.role, category=verdict.category, ts=ts, clock=clock,
            node=node or None, rank=rank, summary=summary[:300],
            locator=locator_for(self.positions, self.ctx, path),
            excerpt=self.positions.excerpt(path), detail=detail))
