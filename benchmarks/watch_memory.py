"""The watch's memory over a long run: real investigations of the demo bundle (parsers, the
analysis, the report, its pictures, the ledger's sessions) through the real watch (queue,
worker pool, grouping), one per trigger of a synthetic source. RSS is read after a warm-up and
then every 100 investigations: as `ps` shows it (the current DuckDB instance included: the
ledger's sessions open a new one at least every MAX_OPEN_S), and held, after the file is let go,
a garbage collection and malloc_trim (what accumulates, not what the allocator keeps for reuse).

Goal: after warm-up, <= 5 MiB of RSS growth over 1,000 investigations.

    python benchmarks/watch_memory.py [--warm 200] [--investigations 1000] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import shutil
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from goodput_agent.core.arenas import cap_malloc_arenas
from goodput_agent.core.logs import configure
from goodput_agent.demo import demo_bundle_path
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.report import Report
from goodput_agent.watch.grouping import GroupRule
from goodput_agent.watch.runner import Watch, WatchOptions
from goodput_agent.watch.trigger import Poll, Trigger

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def rss_mib(trim: bool, ledger: Ledger | None = None) -> float:
    gc.collect()
    if ledger is not None:
        ledger.release()  # the current DuckDB instance's memory is not what accumulates
    if trim:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Failures:
    """A source of failed jobs, 50 a poll."""

    name = "slurm"

    def __init__(self, total: int):
        self.total = total

    def poll(self, cursor: str | None) -> Poll:
        start = int(cursor or 0)
        end = min(self.total, start + 50)
        return Poll(cursor=str(end), triggers=[
            Trigger(source="slurm", key=f"mem:{i}", question="failure", subject=str(i),
                    state="FAILED", occurred_at=T0 + timedelta(seconds=10 * i),
                    nodes=[f"n{i}"], collect={"slurm_job": str(i)}, labels={}, detail="x")
            for i in range(start, end)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warm", type=int, default=200)
    ap.add_argument("--investigations", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--arenas", type=int, default=1,
                    help="cap glibc's malloc arenas as `goodput watch` does (0: glibc's default)")
    args = ap.parse_args()
    if args.arenas:
        cap_malloc_arenas(args.arenas)
    configure("error", json_logs=True)
    tmp = Path(tempfile.mkdtemp(prefix="goodput-memory-"))
    bundle = tmp / "bundle"
    shutil.copytree(demo_bundle_path(), bundle)
    done = [0]

    def investigate(trigger: Trigger, ledger: Ledger) -> Report:
        report = investigate_bundle(bundle, ledger, pictures_dir=tmp / "pictures")
        done[0] += 1
        return report

    total = args.warm + args.investigations
    samples: list[tuple[int, float, float]] = []
    with Ledger(tmp / "ledger.duckdb") as led:
        w = Watch(led, [Failures(total)], investigate,
                  WatchOptions(concurrency=args.concurrency, tick_s=0.02, interval_s=0.05,
                               group=GroupRule(window_s=0, min_size=10**6)))
        runner = threading.Thread(target=w.run)
        started = time.monotonic()
        runner.start()
        mark = args.warm
        while mark <= total:
            while done[0] < mark:
                time.sleep(0.05)
            samples.append((done[0], rss_mib(trim=False), rss_mib(trim=True, ledger=led)))
            mark += 100
        w.stop()
        runner.join()
    elapsed = time.monotonic() - started
    (_, raw0, held0), (n, raw1, held1) = samples[0], samples[-1]
    xs, ys = [k for k, _, _ in samples], [h for _, _, h in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / \
        sum((x - mx) ** 2 for x in xs)  # MiB per investigation, through every sample
    print(f"{n - samples[0][0]} investigations after a warm-up of {args.warm} "
          f"({elapsed:.0f} s in all, {args.concurrency} workers, malloc arenas "
          f"{args.arenas or 'glibc default'})")
    print("  investigations: " + "  ".join(f"{k}:{h:.1f}" for k, _, h in samples) + " MiB held")
    print(f"RSS held (file let go, gc, malloc_trim): {held0:.1f} -> {held1:.1f} MiB "
          f"({held1 - held0:+.1f}); the trend through all samples {slope * 1000:+.1f} MiB per "
          f"1,000 investigations (goal <= +5); as ps shows it: {raw0:.1f} -> {raw1:.1f} MiB "
          f"({raw1 - raw0:+.1f})")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
