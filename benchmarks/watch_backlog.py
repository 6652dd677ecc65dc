"""The watch core under load: a backlog of 1,000 ended jobs, a storm of 300 jobs ending within
a minute on one switch, and a soak. Drives the real store, queue, grouping and worker pool
with a synthetic source (a WatchSource that hands out generated triggers through the cursor
protocol) and a stub investigation step (one investigation started and concluded in the
ledger per trigger), whose own time is measured apart and taken out of the throughput.

Prints: enqueue throughput against a naive baseline (one transaction per trigger, cursor
included); triggers/s through store + queue + workers; investigations for the storm against
investigating each job separately; RSS over the soak; duplicate investigations (must be 0).

Usage: python benchmarks/watch_backlog.py [--soak-s 1800] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from goodput_agent.core.logs import configure
from goodput_agent.ledger import Ledger
from goodput_agent.report import Report, Retry, RootCause
from goodput_agent.watch.grouping import GroupRule
from goodput_agent.watch.runner import Watch, WatchOptions
from goodput_agent.watch.store import WatchStore
from goodput_agent.watch.trigger import Poll, Trigger

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def job(n: int, at: datetime, nodes: list[str], switch: str) -> Trigger:
    return Trigger(source="slurm", key=f"slurm:bench:{n}:0", question="failure", subject=str(n),
                   state="FAILED", occurred_at=at, nodes=nodes, collect={"slurm_job": str(n)},
                   labels={"switches": switch, "partition": "gpu"}, detail="exit 1:0")


def backlog(n: int = 1000) -> list[Trigger]:
    """Jobs ending 10 s apart, each on its own node and switch: nothing to group."""
    return [job(i, T0 + timedelta(seconds=10 * i), [f"b{i}"], f"leaf-b{i}") for i in range(n)]


def storm(n: int = 300, start: int = 100_000) -> list[Trigger]:
    """Jobs on one leaf switch, two nodes each, ending within 55 s."""
    at = T0 + timedelta(days=1)
    return [job(start + i, at + timedelta(seconds=(i * 37) % 55), [f"s{2 * i}", f"s{2 * i + 1}"],
                "leaf-storm") for i in range(n)]


class SyntheticSource:
    name = "slurm"

    def __init__(self, triggers: list[Trigger], page: int = 250):
        self.triggers, self.page = triggers, page

    def poll(self, cursor: str | None) -> Poll:
        start = int(cursor or 0)
        chunk = self.triggers[start:start + self.page]
        return Poll(triggers=chunk, cursor=str(start + len(chunk)))


class StubInvestigation:
    """One investigation per trigger, started and concluded; its time is kept apart."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, trigger: Trigger, ledger: Ledger) -> Report:
        t = time.perf_counter()
        inv = ledger.start_investigation("q", "failure", trigger.subject, "bench", "0")
        ledger.record_conclusion(inv, "application_error", 0.5, 0, "{}")
        report = Report(investigation_id=inv, kind="failure",
                        root_cause=RootCause(category="application_error", summary="x",
                                             confidence=0.5),
                        retry=Retry(useful=False, why="x"))
        with self.lock:
            self.calls[trigger.key] = self.calls.get(trigger.key, 0) + 1
            self.seconds += time.perf_counter() - t
        return report


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def duckdb_mib(w: Watch) -> float:
    """Memory DuckDB's buffer manager holds (the ledger's pages cached, its indexes)."""
    with w.store.lock:
        row = w.store.con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()")\
            .fetchone()
    return (row[0] or 0) / 2**20


def duplicates(ledger: Ledger, stub: StubInvestigation) -> int:
    twice = sum(1 for n in stub.calls.values() if n > 1)
    per_trigger = ledger.rows(
        "SELECT count(*) AS n FROM (SELECT r.trigger_key FROM watch_runs r JOIN conclusions c "
        "ON c.investigation_id = r.investigation_id GROUP BY r.trigger_key HAVING count(*) > 1)")
    return twice + int(per_trigger[0]["n"])


def bench_enqueue(tmp: Path) -> None:
    triggers = backlog()
    with Ledger(tmp / "batch.duckdb") as led:
        store = WatchStore(led)
        t = time.perf_counter()
        for i in range(0, len(triggers), 250):  # one poll's page, one transaction
            store.enqueue("slurm", triggers[i:i + 250], str(i + 250))
        batched = time.perf_counter() - t
    with Ledger(tmp / "naive.duckdb") as led:
        store = WatchStore(led)
        t = time.perf_counter()
        for i, trig in enumerate(triggers):  # baseline: a transaction per trigger
            store.enqueue("slurm", [trig], str(i + 1))
        naive = time.perf_counter() - t
    print(f"enqueue 1,000: {len(triggers) / batched:,.0f} triggers/s (a transaction per poll "
          f"page of 250) vs {len(triggers) / naive:,.0f}/s naive (one per trigger): "
          f"{naive / batched:.1f}x")


def bench_run(tmp: Path, name: str, triggers: list[Trigger], concurrency: int) -> None:
    stub = StubInvestigation()
    with Ledger(tmp / f"{name}.duckdb") as led:
        w = Watch(led, [SyntheticSource(triggers)], stub,
                  WatchOptions(concurrency=concurrency, tick_s=0.01, interval_s=0.01,
                               group=GroupRule(window_s=60, min_size=3)))
        t = time.perf_counter()
        while w.store.cursor("slurm") != str(len(triggers)) or w.store.counts()["queued"]:
            w.run(once=True)
        wall = time.perf_counter() - t
        dup = duplicates(led, stub)
        counts = w.store.counts()
    core = wall - stub.seconds / concurrency
    print(f"{name}: {len(triggers)} triggers, {len(stub.calls)} investigations "
          f"({counts['grouped']} grouped), wall {wall:.2f} s, stub investigation "
          f"{stub.seconds:.2f} s of work; core {len(triggers) / core:,.0f} triggers/s; "
          f"duplicate investigations {dup}")
    if name == "storm":
        print(f"storm: {len(stub.calls)} investigation(s) vs {len(triggers)} investigating each "
              f"job separately: {len(triggers) / max(1, len(stub.calls)):.0f}x fewer")


def bench_soak(tmp: Path, seconds: float, concurrency: int) -> None:
    """New failures arrive every poll (a storm every 60 polls), repeats of seen ones too."""
    stub = StubInvestigation()
    made = 0

    class Arrivals:
        name = "slurm"

        def poll(self, cursor: str | None) -> Poll:
            nonlocal made
            n = int(cursor or 0)
            at = T0 + timedelta(seconds=5 * n)
            batch = [job(n * 10 + i, at, [f"k{n}-{i}"], f"leaf-{n}-{i}") for i in range(5)]
            if n % 60 == 59:
                batch += [job(n * 10_000 + 5000 + i, at, [f"st{n}-{i}"], f"storm-{n}")
                          for i in range(50)]
            made += len(batch)
            repeat = [job((n - 1) * 10 + i, at - timedelta(seconds=5), [f"k{n - 1}-{i}"],
                          f"leaf-{n - 1}-{i}") for i in range(5)] if n else []
            return Poll(triggers=batch + repeat, cursor=str(n + 1))

    samples: list[tuple[float, float, float]] = []
    with Ledger(tmp / "soak.duckdb") as led:
        w = Watch(led, [Arrivals()], stub,
                  WatchOptions(concurrency=concurrency, tick_s=0.02, interval_s=1.0,
                               group=GroupRule(window_s=1, min_size=3)))
        runner = threading.Thread(target=w.run)
        t0 = time.monotonic()
        runner.start()
        while time.monotonic() - t0 < seconds:
            time.sleep(min(10.0, seconds / 20))
            samples.append((time.monotonic() - t0, rss_mib(), duckdb_mib(w)))
        w.stop()
        runner.join()
        dup = duplicates(led, stub)
        counts = w.store.counts()
    ledger_mib = (tmp / "soak.duckdb").stat().st_size / 2**20
    rss = [r for _, r, _ in samples]
    other = [r - d for _, r, d in samples]  # what is not DuckDB's buffer manager
    half = len(rss) // 2
    print(f"soak {seconds:.0f} s: {made} triggers made, {counts['done']} investigated, "
          f"{counts['grouped']} grouped, {counts['queued']} queued at the end; RSS MiB first "
          f"{rss[0]:.0f}, median of first half {statistics.median(rss[:half] or rss):.0f}, "
          f"median of second half {statistics.median(rss[half:]):.0f}, max {max(rss):.0f}; "
          f"RSS less DuckDB's buffers: first {other[0]:.0f}, last {other[-1]:.0f}, max "
          f"{max(other):.0f}; DuckDB buffers last {samples[-1][2]:.0f} (the ledger grew to "
          f"{ledger_mib:.0f} MiB); duplicate investigations {dup}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--soak-s", type=float, default=1800.0)
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()
    configure("error", json_logs=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bench_enqueue(tmp)
        bench_run(tmp, "backlog", backlog(), args.concurrency)
        bench_run(tmp, "storm", storm(), args.concurrency)
        bench_soak(tmp, args.soak_s, args.concurrency)


if __name__ == "__main__":
    main()
