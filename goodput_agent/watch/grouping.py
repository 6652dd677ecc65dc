"""Storm grouping: many incidents with one cause become one investigation.

The rule. A trigger's cause signals are the nodes it ran on (`node:<name>`), the leaf switches
of those nodes where Slurm's topology names them (`switch:<name>`, from the trigger's
`switches` label), and, for an infrastructure state (a node down or drained, NODE_FAIL,
BOOT_FAIL, NotReady, Evicted), the reason the system gave (`reason:<state>:<text>`). A job's
plain exit code or state is never a signal: two unrelated programs failing at once share
nothing.

Triggers form a group when, taking the oldest queued trigger T, at least `min_size` queued
triggers (T included) that happened within `window_s` after T are connected to T through shared
signals. The representative is T, the earliest member (by time, then key): deterministic
whatever the order the sources delivered them. T is investigated once; the other members are
`grouped` (linked, never investigated on their own). A trigger arriving later that happened
within the window of an open group and shares one of the group's signals (those held by two
members or more: the common cause) joins it at once. Fewer than `min_size` connected triggers
are investigated one by one.

A trigger is held `window_s` after it happened before it may run (so a storm's members are in
the queue when the group is decided); `--once` does not wait: what one poll saw is all there is.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta

from pydantic import BaseModel

from goodput_agent.ledger.watch import OpenGroup
from goodput_agent.watch.store import WatchStore
from goodput_agent.watch.trigger import Trigger

INFRA_STATES = frozenset({"NODE_FAIL", "BOOT_FAIL", "DOWN", "DRAIN", "DRAINED", "DRAINING",
                          "FAIL", "NOT_RESPONDING", "NotReady", "Evicted"})


class GroupRule(BaseModel):
    window_s: float = 60.0
    min_size: int = 3


def signals(t: Trigger) -> set[str]:
    found = {f"node:{n}" for n in t.nodes}
    found |= {f"switch:{s}" for s in t.labels.get("switches", "").split(",") if s}
    states = set(t.state.replace("+", " ").split())
    if t.detail and (states & INFRA_STATES or t.question == "node"):
        reason = " ".join(t.detail.split())[:120]
        found.add(f"reason:{min(states) if states else ''}:{reason}")
    return found


def _component(anchor: Trigger, pool: list[Trigger], window: timedelta) -> list[Trigger]:
    """The triggers of `pool` within `window` after `anchor`, reachable through shared
    signals."""
    near = [t for t in pool if anchor.occurred_at <= t.occurred_at <= anchor.occurred_at + window]
    by_signal: dict[str, list[Trigger]] = defaultdict(list)
    for t in near:
        for s in signals(t):
            by_signal[s].append(t)
    seen, todo = {anchor.key}, [anchor]
    found = [anchor]
    while todo:
        for s in signals(todo.pop()):
            for t in by_signal.get(s, []):
                if t.key not in seen:
                    seen.add(t.key)
                    found.append(t)
                    todo.append(t)
    return found


def shared_signals(members: list[Trigger]) -> list[str]:
    counts = Counter(s for t in members for s in signals(t))
    return sorted(s for s, n in counts.items() if n >= 2)


def group_key_of(representative: Trigger) -> str:
    return f"group:{representative.key}"


def plan(store: WatchStore, rule: GroupRule, now: datetime, hold: bool,
         limit: int = 1000) -> list[Trigger]:
    """The queued triggers to run now, oldest first; storms found among them become groups
    (their members leave the queue as `grouped`)."""
    window = timedelta(seconds=rule.window_s)
    ready = store.queued(ready_before=now - window if hold else None, limit=limit)
    if not ready:
        return []
    # every queued trigger that could share a group with these (the queue is bounded)
    pool = store.queued(ready_before=ready[-1].occurred_at + window,
                        since=ready[0].occurred_at, limit=None)
    taken: set[str] = set()
    run: list[Trigger] = []
    for t in ready:
        if t.key in taken:
            continue
        members = _component(t, [p for p in pool if p.key not in taken], window)
        if len(members) >= rule.min_size:
            make_group(store, t, members)
            taken |= {m.key for m in members}
        taken.add(t.key)
        run.append(t)
    return run


def make_group(store: WatchStore, representative: Trigger, members: list[Trigger]) -> None:
    store.queue.make_group(group_key_of(representative), representative.key,
                           shared_signals(members), representative.occurred_at,
                           [m.key for m in members])


def open_group_for(rule: GroupRule) -> GroupAssigner:
    return GroupAssigner(rule)


class GroupAssigner:
    """For WatchStore.enqueue: the open group each new trigger belongs to, if any."""

    def __init__(self, rule: GroupRule):
        self.window_s = rule.window_s

    def __call__(self, triggers: list[Trigger], groups: list[OpenGroup]) -> dict[str, str]:
        window = timedelta(seconds=self.window_s)
        found: dict[str, str] = {}
        for t in triggers if groups else []:
            mine = signals(t)
            for g in groups:
                if g.first_at <= t.occurred_at <= g.first_at + window and mine & set(g.signals):
                    found[t.key] = g.group_key
                    break
        return found
