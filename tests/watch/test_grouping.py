"""Storm grouping: 300 jobs on one switch ending within a minute are one investigation;
unrelated failures at the same moment are not grouped."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from goodput_agent.ledger import Ledger
from goodput_agent.watch.grouping import GroupRule, signals
from goodput_agent.watch.runner import Watch, WatchOptions
from goodput_agent.watch.store import group_rows
from tests.watch.fakes import T0, ListSource, RecordingInvestigation, job_trigger


def _run(tmp_path: Path, triggers: list, page: int = 1000, rule: GroupRule | None = None):  # noqa: ANN202
    ledger = Ledger(tmp_path / "ledger.duckdb")
    inv = RecordingInvestigation()
    watch = Watch(ledger, [ListSource(triggers, page=page)], inv,
                  WatchOptions(interval_s=0.01, tick_s=0.01, concurrency=4,
                               group=rule or GroupRule(window_s=60, min_size=3)))
    for _ in range(len(triggers) // page + 1):
        watch.run(once=True)
    return ledger, inv, watch


def _storm(n: int = 300, switch: str = "leaf-7") -> list:
    # 300 jobs, each on its own two nodes under one leaf switch, ending within 50 s, delivered
    # in an order that is not time order
    jobs = [job_trigger(i, nodes=[f"n{2 * i}", f"n{2 * i + 1}"],
                        at=T0 + timedelta(seconds=(i * 7919) % 50), switch=switch,
                        state="NODE_FAIL" if i % 3 else "FAILED") for i in range(n)]
    return jobs


def test_300_jobs_on_one_switch_are_one_group(tmp_path: Path) -> None:
    storm = _storm()
    ledger, inv, watch = _run(tmp_path, storm)
    assert len(inv.calls) == 1
    (group,) = group_rows(ledger)
    assert group["members"] == 300 and "switch:leaf-7" in group["signals"]
    earliest = min(storm, key=lambda t: (t.occurred_at, t.key))
    assert group["representative_key"] == earliest.key and list(inv.calls) == [earliest.key]
    counts = watch.store.counts()
    assert counts["grouped"] == 299 and counts["done"] == 1
    assert group["investigation_id"] is not None


def test_the_representative_does_not_depend_on_delivery_order(tmp_path: Path) -> None:
    storm = _storm(40)
    _, inv_a, _ = _run(tmp_path / "a", storm)
    _, inv_b, _ = _run(tmp_path / "b", list(reversed(storm)))
    assert list(inv_a.calls) == list(inv_b.calls)


def test_late_members_join_the_open_group(tmp_path: Path) -> None:
    storm = _storm(30)
    ordered = sorted(storm, key=lambda t: t.occurred_at)
    ledger, inv, watch = _run(tmp_path, ordered, page=10)
    assert len(inv.calls) == 1
    assert group_rows(ledger)[0]["members"] == 30


def test_unrelated_concurrent_failures_are_not_grouped(tmp_path: Path) -> None:
    # same minute, same state, different nodes and switches: nothing shared
    jobs = [job_trigger(i, nodes=[f"host-{i}"], at=T0, switch=f"leaf-{i}") for i in range(20)]
    ledger, inv, _ = _run(tmp_path, jobs)
    assert len(inv.calls) == 20 and group_rows(ledger) == []


def test_a_storm_outside_the_window_is_not_one_group(tmp_path: Path) -> None:
    jobs = [job_trigger(i, nodes=[f"n{i}"], at=T0 + timedelta(minutes=5 * i), switch="leaf-1")
            for i in range(5)]
    _, inv, _ = _run(tmp_path, jobs)
    assert len(inv.calls) == 5


def test_two_failures_sharing_a_node_stay_separate_below_the_minimum(tmp_path: Path) -> None:
    jobs = [job_trigger(i, nodes=["gpu-01"], at=T0) for i in range(2)]
    _, inv, _ = _run(tmp_path, jobs)
    assert len(inv.calls) == 2


def test_signals() -> None:
    t = job_trigger(1, nodes=["a", "b"], switch="s1", state="NODE_FAIL")
    t.detail = "Not responding"
    assert signals(t) == {"node:a", "node:b", "switch:s1", "reason:NODE_FAIL:Not responding"}
    plain = job_trigger(2, nodes=["a"], state="FAILED")
    plain.detail = "exit 1:0"
    assert signals(plain) == {"node:a"}  # an exit code is no shared cause
