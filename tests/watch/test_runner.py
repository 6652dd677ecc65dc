from __future__ import annotations

import time
from pathlib import Path

import pytest

from goodput_agent.ledger import Ledger
from goodput_agent.watch.grouping import GroupRule
from goodput_agent.watch.runner import Watch, WatchOptions
from goodput_agent.watch.store import WatchStore
from tests.watch.fakes import ListSource, RecordingInvestigation, job_trigger

NO_GROUPS = GroupRule(window_s=0, min_size=10**6)


def _watch(tmp_path: Path, source: ListSource, inv: RecordingInvestigation,
           **opts: object) -> tuple[Ledger, Watch]:
    ledger = Ledger(tmp_path / "ledger.duckdb")
    options = WatchOptions(interval_s=0.05, tick_s=0.02, group=NO_GROUPS, **opts)
    return ledger, Watch(ledger, [source], inv, options)


def test_each_trigger_is_investigated_once_and_linked(tmp_path: Path) -> None:
    triggers = [job_trigger(n) for n in range(12)]
    source = ListSource(triggers + triggers[:5], page=4)  # the source repeats five of them
    inv = RecordingInvestigation()
    ledger, watch = _watch(tmp_path, source, inv, concurrency=3)
    for _ in range(6):
        watch.run(once=True)
    assert inv.calls == {t.key: 1 for t in triggers}
    counts = watch.store.counts()
    assert counts["done"] == 12 and counts["queued"] == counts["running"] == 0
    linked = ledger.rows("SELECT t.key, t.investigation_id, c.category FROM watch_triggers t "
                         "JOIN conclusions c ON c.investigation_id = t.investigation_id")
    assert len(linked) == 12
    assert watch.store.cursor("slurm") == "17"


def test_enqueue_and_cursor_are_one_transaction(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.duckdb")
    store = WatchStore(ledger)
    # the cursor cannot be stored (not text): the triggers written before it are undone
    with pytest.raises(Exception):  # noqa: B017, PT011 - DuckDB's own error type
        store.enqueue("slurm", [job_trigger(1), job_trigger(2)], object())  # type: ignore[arg-type]
    assert store.counts()["queued"] == 0 and store.cursor("slurm") is None


def test_a_failing_investigation_is_retried_then_failed(tmp_path: Path) -> None:
    triggers = [job_trigger(n) for n in range(3)]
    inv = RecordingInvestigation(fail_keys={triggers[1].key})
    ledger, watch = _watch(tmp_path, ListSource(triggers), inv, max_attempts=2)
    summary = watch.run(once=True)
    assert inv.calls[triggers[1].key] == 2 and summary.failed == 1
    row = ledger.rows("SELECT status, attempts, error FROM watch_triggers WHERE key = ?",
                      [triggers[1].key])[0]
    assert row["status"] == "failed" and row["attempts"] == 2
    assert "collector broke" in row["error"]
    # both attempts are linked; neither concluded
    runs = ledger.rows("SELECT investigation_id FROM watch_runs WHERE trigger_key = ?",
                       [triggers[1].key])
    assert len(runs) == 2


def test_source_outage_is_health_not_a_crash_and_it_catches_up(tmp_path: Path) -> None:
    triggers = [job_trigger(n) for n in range(6)]
    source = ListSource(triggers, page=3)
    inv = RecordingInvestigation()
    ledger, watch = _watch(tmp_path, source, inv)
    watch.run(once=True)
    source.down = True
    watch.run(once=True)
    watch.run(once=True)
    health = watch.store.health()[0]
    assert health["ok"] is False and health["consecutive_failures"] == 2
    assert "controller not answering" in health["last_error"]
    assert health["last_ok_at"] is not None
    source.down = False
    watch.run(once=True)
    health = watch.store.health()[0]
    assert health["ok"] is True and health["consecutive_failures"] == 0
    assert sorted(inv.calls) == sorted(t.key for t in triggers)


def test_backoff_grows_while_the_source_is_down(tmp_path: Path) -> None:
    source = ListSource([])
    source.down = True
    _, watch = _watch(tmp_path, source, RecordingInvestigation())
    delays = []
    for _ in range(5):
        watch.poll(source)
        delays.append(watch._clocks["slurm"].next_at)
    gaps = [b - a for a, b in zip(delays, delays[1:], strict=False)]
    assert gaps[-1] > gaps[0]  # exponential: the fifth wait is longer than the second


def test_recover_requeues_running_and_keeps_concluded(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.duckdb")
    store = WatchStore(ledger)
    a, b = job_trigger(1), job_trigger(2)
    store.enqueue("slurm", [a, b], "2")
    for t in (a, b):
        store.claim(t.key)
    inv_a = ledger.start_investigation("q", "failure", "1", "test", "0")  # killed mid-way
    store.link_run(a.key, 1, inv_a)
    inv_b = ledger.start_investigation("q", "failure", "2", "test", "0")  # concluded, then killed
    store.link_run(b.key, 1, inv_b)
    ledger.record_conclusion(inv_b, "application_error", 0.5, 0, "{}")
    assert store.recover(max_attempts=3) == 2
    rows = {r["key"]: r for r in ledger.rows("SELECT * FROM watch_triggers")}
    assert rows[a.key]["status"] == "queued"
    assert rows[b.key]["status"] == "done" and rows[b.key]["investigation_id"] == inv_b


def test_a_trigger_that_kills_the_process_every_time_is_parked(tmp_path: Path) -> None:
    """Each start counts: claimed, then the process dies (the trigger stays running), then
    the next start recovers it. Before the fix it was requeued forever (16 attempts seen
    with a maximum of 3)."""
    ledger = Ledger(tmp_path / "ledger.duckdb")
    store = WatchStore(ledger)
    poison = job_trigger(1)
    store.enqueue("slurm", [poison], "1")
    starts = 0
    while store.claim(poison.key) is not None:  # a start that crashes the process
        starts += 1
        assert starts <= 3, "requeued past max_attempts"
        store.recover(max_attempts=3)  # the restart
    row = ledger.rows("SELECT status, attempts, error FROM watch_triggers")[0]
    assert starts == 3 and row["status"] == "failed" and row["attempts"] == 3
    assert "parked: the process died during each of its 3 attempts" in row["error"]


def test_stop_lets_running_investigations_finish(tmp_path: Path) -> None:
    import threading

    triggers = [job_trigger(n) for n in range(6)]
    inv = RecordingInvestigation(delay_s=0.5)
    ledger, watch = _watch(tmp_path, ListSource(triggers), inv, concurrency=2)
    watch.options.group = GroupRule(window_s=0, min_size=10**6)
    runner = threading.Thread(target=watch.run)
    runner.start()
    deadline = time.monotonic() + 20
    while not inv.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    watch.stop()
    runner.join(20)
    assert not runner.is_alive()
    counts = watch.store.counts()
    assert counts["running"] == 0 and counts["done"] == len(inv.calls) >= 1
    assert counts["queued"] == len(triggers) - len(inv.calls)


def test_a_trigger_with_nothing_to_collect_is_not_retried(tmp_path: Path) -> None:
    from goodput_agent.watch.investigator import CollectSettings, investigate_trigger

    t = job_trigger(1)
    t.collect = {"unknown_kind": "x"}
    ledger, watch = _watch(tmp_path, ListSource([t]), RecordingInvestigation())
    watch.investigate = lambda trig, lg: investigate_trigger(trig, lg, CollectSettings())
    assert watch.run(once=True).failed == 1
    row = ledger.rows("SELECT status, attempts, error FROM watch_triggers")[0]
    assert (row["status"], row["attempts"]) == ("failed", 1) and "no collector" in row["error"]


def test_a_push_source_sink_stores_once_and_reports_health(tmp_path: Path) -> None:
    inv = RecordingInvestigation()
    ledger, watch = _watch(tmp_path, ListSource([]), inv)
    receive = watch.sink("alertmanager")
    alert = job_trigger(7).model_copy(update={"source": "alertmanager", "key": "alert:fp:1"})
    receive([alert])
    receive([alert])  # Alertmanager re-sends until it is resolved
    assert watch.store.counts()["queued"] == 1
    (health,) = [h for h in watch.store.health() if h["source"] == "alertmanager"]
    assert health["ok"] is True and health["newest_event_at"] == alert.occurred_at
    watch.run(once=True)
    assert inv.calls == {"alert:fp:1": 1}
