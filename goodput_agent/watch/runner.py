"""The watch loop: poll each source on its interval, store what it saw (with its cursor, in one
transaction), plan the queue (storm groups), and investigate with at most `concurrency`
workers; each investigation is linked to its trigger as it starts.

A source that fails (SourceDown, or any exception) is recorded as its health and asked again
after an exponential backoff with jitter; it resumes from its stored cursor, so nothing it
reported while it was away is lost. The queue is bounded: with `max_queued` triggers waiting,
sources are not polled (their cursors stay put) until the workers catch up.

Stopping (SIGTERM, `stop()`): no new poll or investigation starts; the running ones finish.
A hard kill leaves them `running`: the next start re-runs them (`WatchStore.recover`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel
from tenacity import wait_exponential_jitter

from goodput_agent.ledger import Ledger
from goodput_agent.ledger.watch import WatchRun
from goodput_agent.report import Report
from goodput_agent.watch.grouping import GroupRule, open_group_for, plan
from goodput_agent.watch.store import QueuedTrigger, WatchStore
from goodput_agent.watch.trigger import Trigger, WatchSource

log = logging.getLogger(__name__)
PLAN_AHEAD = 8  # triggers planned per free worker at a time

Investigate = Callable[[Trigger, Ledger], Report]
# called after each investigation: (trigger, report, number of triggers it answers)
Notify = Callable[[Trigger, Report, int], "NotifyResult"]


class GiveUp(Exception):
    """An investigation that no retry can help (nothing to collect for this trigger)."""


class NotifyResult(BaseModel):
    ok: bool
    attempts: int
    error: str | None = None


class WatchOptions(BaseModel):
    interval_s: float = 30.0
    concurrency: int = 2
    max_attempts: int = 3
    max_queued: int = 10_000
    backoff_max_s: float = 300.0
    tick_s: float = 0.5
    group: GroupRule = GroupRule()


class RunLedger(Ledger):
    """A worker's handle on the watch's ledger (its own staging; sessions are per call): each
    investigation it starts is linked to the trigger at once."""

    def __init__(self, base: Ledger, on_start: Callable[[str], None]):  # noqa: D107
        super().__init__(base.path)
        self._on_start = on_start

    def start_investigation(self, *args: Any, **kwargs: Any) -> str:
        inv_id = super().start_investigation(*args, **kwargs)
        self._on_start(inv_id)
        return inv_id


@dataclass
class _SourceClock:
    next_at: float = 0.0
    failures: int = 0


class RunSummary(BaseModel):
    polls_failed: int = 0
    investigated: int = 0
    failed: int = 0


class Watch:
    def __init__(self, ledger: Ledger, sources: list[WatchSource], investigate: Investigate,
                 options: WatchOptions | None = None, notify: Notify | None = None):
        self.ledger = ledger
        self.store = WatchStore(ledger)
        self.sources = sources
        self.investigate = investigate
        self.options = options or WatchOptions()
        self.notify = notify
        self.stopping = threading.Event()
        self._clocks = {s.name: _SourceClock() for s in sources}
        self._assign = open_group_for(self.options.group)
        self.summary = RunSummary()
        self._planned: list[Trigger] = []  # planned to run, next last

    def stop(self) -> None:
        self.stopping.set()

    # --- sources -----------------------------------------------------------------------

    def poll(self, source: WatchSource) -> bool:
        """One poll of one source, stored; False when the source failed."""
        clock = self._clocks[source.name]
        try:
            result = source.poll(self.store.cursor(source.name))
            self.store.enqueue(source.name, result.triggers, result.cursor, self._assign)
        except Exception as exc:  # noqa: BLE001 - any source failure is its health, not ours
            clock.failures += 1
            delay = wait_exponential_jitter(multiplier=self.options.interval_s,
                                            max=self.options.backoff_max_s,
                                            jitter=self.options.interval_s)(
                SimpleNamespace(attempt_number=clock.failures))
            clock.next_at = time.monotonic() + delay
            self.store.record_poll(source.name, f"{type(exc).__name__}: {exc}", None)
            self.summary.polls_failed += 1
            log.warning("watch source %s failed (%d in a row), next try in %.0f s",
                        source.name, clock.failures, delay)
            return False
        clock.failures = 0
        # a source may poll on its own interval (the live source: every 10 s)
        clock.next_at = time.monotonic() + getattr(source, "interval_s", self.options.interval_s)
        newest = max((t.occurred_at for t in result.triggers), default=None)
        self.store.record_poll(source.name, None, newest)
        return True

    def sink(self, source: str) -> Callable[[list[Trigger]], None]:
        """A push source's TriggerSink: returns once the triggers are stored."""
        def receive(triggers: list[Trigger]) -> None:
            self.store.enqueue(source, triggers, None, self._assign)
            newest = max((t.occurred_at for t in triggers), default=None)
            self.store.record_poll(source, None, newest)
        return receive

    def poll_due(self) -> None:
        if self.store.counts()["queued"] >= self.options.max_queued:
            return  # bounded: the cursors wait until the workers catch up
        now = time.monotonic()
        for s in self.sources:
            if self.stopping.is_set():
                return
            if self._clocks[s.name].next_at <= now:
                self.poll(s)

    # --- workers -----------------------------------------------------------------------

    def _work(self, queued: QueuedTrigger) -> None:
        t = queued.trigger
        lg = RunLedger(self.ledger, lambda inv: self.store.link_run(t.key, queued.attempts, inv))
        try:
            report = self.investigate(t, lg)
        except Exception as exc:  # noqa: BLE001 - recorded on the trigger, retried
            retry = queued.attempts < self.options.max_attempts and not isinstance(exc, GiveUp)
            self.store.fail(t.key, f"{type(exc).__name__}: {exc}", retry)
            if not retry:
                self.summary.failed += 1
            log.warning("watch: %s failed (attempt %d): %s", t.key, queued.attempts, exc)
            return
        finally:
            lg.close()
        inv_id = report.investigation_id or ""
        self.store.finish(t.key, inv_id)
        self.summary.investigated += 1
        if self.notify is not None:
            self._notify(t, report, inv_id)

    def _notify(self, t: Trigger, report: Report, inv_id: str) -> None:
        size = self.store.group_size(t.key)
        try:
            result = self.notify(t, report, size) if self.notify else None
        except Exception as exc:  # noqa: BLE001 - a notification never loses the incident
            result = NotifyResult(ok=False, attempts=1, error=f"{type(exc).__name__}: {exc}")
        if result is not None:
            self.store.record_notification(t.key, inv_id, result.ok, result.attempts,
                                           result.error)

    def _dispatch(self, pool: ThreadPoolExecutor, running: dict[Future[None], str],
                  hold: bool) -> None:
        while len(running) < self.options.concurrency and not self.stopping.is_set():
            if not self._planned:  # planned a few at a time: planning reads the queue
                self._planned = plan(self.store, self.options.group, datetime.now(UTC), hold,
                                     limit=self.options.concurrency * PLAN_AHEAD)[::-1]
                if not self._planned:
                    return
            queued = self.store.claim(self._planned.pop().key)  # None: grouped since
            if queued is not None:
                running[pool.submit(self._work, queued)] = queued.trigger.key

    # --- the loop ----------------------------------------------------------------------

    def run(self, once: bool = False) -> RunSummary:
        """Until stopped; `once`: one poll of each source, then the queue drained (no hold)."""
        import os
        import socket

        self.store.queue.record_start(WatchRun(
            pid=os.getpid(), host=socket.gethostname(), started_at=datetime.now(UTC),
            interval_s=self.options.interval_s, once=once,
            sources=[s.name for s in self.sources]))
        try:
            return self._run(once)
        finally:
            self.store.queue.record_stop()

    def _run(self, once: bool) -> RunSummary:
        recovered = self.store.recover(self.options.max_attempts)
        if recovered:
            log.warning("watch: %d investigations interrupted by the last stop run again",
                        recovered)
        running: dict[Future[None], str] = {}
        with ThreadPoolExecutor(max_workers=self.options.concurrency,
                                thread_name_prefix="watch") as pool:
            if once:
                for s in self.sources:
                    self.poll(s)
            while True:
                if not once:
                    self.poll_due()
                self._dispatch(pool, running, hold=not once)
                if self.stopping.is_set() and not running:
                    break
                if once and not running and not self.store.counts()["queued"]:
                    break
                if running:
                    done, _ = wait(list(running), timeout=self.options.tick_s,
                                   return_when=FIRST_COMPLETED)
                    for f in done:
                        running.pop(f)
                        f.result()
                else:
                    self.stopping.wait(self.options.tick_s)
        return self.summary
