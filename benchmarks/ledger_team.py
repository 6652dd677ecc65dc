"""A team on one ledger: while a watch (its own process) works through a backlog of 1,000
triggers on a ledger of 100,000 investigations, people run `goodput ledger list`, `goodput
approve` (whole commands, Python's start included) and load review pages. Prints p50/p99 of
each against the goals (a command's p99 <= 2 s, a page's p99 <= 300 ms) and the watch's
throughput beside its throughput alone on the same ledger (goal >= 80 %), in two layouts:
the pages from a separate `goodput serve`, and from the watch's own process as `goodput watch
--serve` serves them (what deploy/ runs: one process, one pod).

The watch alone runs before and after the team's runs and the team's runs are compared with
the mean of the two (the machine's other load drifts); the load average and the CPU time the
team's commands used are printed beside the figures (on a small machine they compete with the
watch for its cores).

The backlog's investigations are the watch benchmark's stub (each starts, records 20 evidence
rows and a claim, and concludes: the ledger's real writes, no parsing), so what is measured is
the ledger shared between processes, not the analyses.

    python benchmarks/ledger_team.py [--investigations 100000] [--backlog 1000]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from goodput_agent.ledger import Ledger

WATCH = """
import sys, time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from goodput_agent.ledger import Ledger
from goodput_agent.core.logs import configure
from goodput_agent.report import Report, Retry, RootCause
from goodput_agent.watch.grouping import GroupRule
from goodput_agent.watch.runner import Watch, WatchOptions
from goodput_agent.watch.trigger import Poll, Trigger

configure("error", json_logs=True)
N, T0 = int(sys.argv[2]), datetime(2026, 1, 1, tzinfo=UTC)

class Source:
    name = "slurm"
    def poll(self, cursor):
        s = int(cursor or 0)
        return Poll(triggers=[Trigger(source="slurm", key=f"bench:{i}", question="failure",
                    subject=str(i), state="FAILED", occurred_at=T0 + timedelta(seconds=10 * i),
                    nodes=[f"n{i}"], collect={"slurm_job": str(i)}, labels={}, detail="x")
                    for i in range(s, min(N, s + 250))], cursor=str(min(N, s + 250)))

def investigate(trigger, ledger):
    inv = ledger.start_investigation("why?", "failure", trigger.subject, "bench", "0")
    ev = [ledger.record_evidence(inv, None, "job.log", f"job.log:{k}", "x" * 120, None)
          for k in range(20)]
    ledger.record_claim(inv, "verdict", "application_error", 0.8, "supported", ev[:3], [])
    ledger.record_conclusion(inv, "application_error", 0.8, 0, "{}")
    return Report(investigation_id=inv, kind="failure", retry=Retry(useful=False, why="x"),
                  root_cause=RootCause(category="application_error", summary="x",
                                       confidence=0.8))

with Ledger(Path(sys.argv[1])) as led:
    w = Watch(led, [Source()], investigate,
              WatchOptions(concurrency=2, tick_s=0.01, interval_s=0.01,
                           group=GroupRule(window_s=0, min_size=10**6)))
    stop = None
    if len(sys.argv) > 3:  # the pages in this process, as `goodput watch --serve` runs them
        from goodput_agent.cli.serve import start_pages
        from goodput_agent.web.app import ServeConfig
        stop = start_pages(ServeConfig(ledger=Path(sys.argv[1]),
                                       policy_path=Path(sys.argv[4])), int(sys.argv[3]))
        import urllib.request
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[3]}/", timeout=30).read()
                break
            except OSError:
                time.sleep(0.1)
    print("started", flush=True)
    t = time.perf_counter()
    while w.store.cursor("slurm") != str(N) or w.store.counts()["queued"]:
        w.run(once=True)
    elapsed = time.perf_counter() - t
    if stop is not None:
        stop()
    print(f"{elapsed:.3f}", flush=True)
"""


def build(path: Path, investigations: int, actions: int, jobs: Path) -> list[int]:
    """A ledger of `investigations` concluded investigations (bulk SQL), and config changes
    proposed on the first `actions` of them for people to approve."""
    with Ledger(path) as led, led.writing() as con:
        con.execute(f"""
            INSERT INTO investigations SELECT 'inv-t-' || i, TIMESTAMPTZ '2026-11-01 00:00+00'
                + i * INTERVAL 1 SECOND, 'why?', 'failure', 'bundle-' || i, 'offline', 'b',
                NULL FROM range({investigations}) t(i);
            INSERT INTO evidence SELECT i, 'inv-t-' || (i // 10), NULL, 'kern.log',
                'kern.log:' || i, 'NVRM: Xid 79', NULL, 'sha256:0', now()
                FROM range({investigations * 10}) t(i);
            INSERT INTO claims SELECT 100000000 + i, 'inv-t-' || i, 'verdict', 'host_oom', 0.9,
                'supported', NULL, NULL, NULL, '[' || (i * 10) || ']', '[]', now()
                FROM range({investigations}) t(i);
            INSERT INTO conclusions SELECT 'inv-t-' || i, now(), 'host_oom', 0.9, 0, '{{}}'
                FROM range({investigations}) t(i);
            SELECT setval('row_ids', {investigations * 10 + 1});
        """)
    ids = []
    with Ledger(path) as led:
        for i in range(actions):
            script = jobs / f"job{i}.sbatch"
            script.write_text("#SBATCH --mem=64G\nsrun train.py\n")
            ids.append(led.record_action(
                f"inv-t-{i}", "config_change",
                {"path": str(script), "edits": [{"old": "--mem=64G", "new": "--mem=96G"}]},
                True, "more memory", [100000000 + i]))
        led.release()  # checkpointed, so that copying the file copies everything
    return ids


def policy(root: Path, jobs: Path) -> Path:
    me = __import__("getpass").getuser()
    p = root / "policy.yaml"
    p.write_text(f"version: 1\ntools:\n  config_change:\n    enabled: true\n    approvers: [{me}]"
                 f"\n    scope: {{paths: [\"{jobs}/*\"]}}\n    preconditions: "
                 "{claim_names_target: false}\n")
    return p


def watch(ledger: Path, backlog: int, pages: tuple[int, Path] | None = None
          ) -> subprocess.Popen[str]:
    more = [str(pages[0]), str(pages[1])] if pages else []
    return subprocess.Popen([sys.executable, "-c", WATCH, str(ledger), str(backlog), *more],
                            stdout=subprocess.PIPE, text=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(argv: list[str], cpu: list[float]) -> float:
    """The command's wall time; its CPU time is added to `cpu`."""
    t, used = time.perf_counter(), _children_cpu()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - t
    cpu.append(_children_cpu() - used)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[3:5]}: {proc.stderr.strip()[-300:]}")
    return elapsed


def page(url: str) -> float:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as resp:
        resp.read()
    return time.perf_counter() - t


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def watch_alone(base: Path, root: Path, backlog: int) -> float:
    alone_ledger = root / "alone.duckdb"
    shutil.copy(base, alone_ledger)
    w = watch(alone_ledger, backlog)
    w.stdout.readline()
    return float(w.communicate()[0].strip())


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def serve(ledger: Path, pol: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "goodput_agent.cli", "serve", "--ledger",
                             str(ledger), "--port", str(port), "--policy", str(pol)],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            page(url + "/static/style.css")
            return proc, url
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"goodput serve did not start: {log.read_text()[-500:]}")


@dataclass
class TeamRun:
    layout: str
    shared: float  # the watch's seconds for the backlog
    cpu: float  # the commands' CPU seconds
    load: float  # the load average at the end
    lists: list[float]
    approves: list[float]
    pages: list[float]

    def report(self, alone: float, args: argparse.Namespace) -> None:
        print(f"{self.layout} pages, watch with the team (a request every {args.pace:g} s): "
              f"{args.backlog} triggers in {self.shared:.1f} s "
              f"({args.backlog / self.shared:.1f}/s) = {alone / self.shared:.0%} of alone "
              f"(goal >= 80 %); the commands used {self.cpu:.1f} s of CPU; load average "
              f"{self.load:.1f}")
        for name, xs, goal in (("  ledger list", self.lists, 2.0),
                               ("  approve", self.approves, 2.0),
                               ("  page load", self.pages, 0.3)):
            print(f"{name}: n={len(xs)} p50 {statistics.median(xs) * 1000:.0f} ms, p99 "
                  f"{pct(xs, 0.99) * 1000:.0f} ms (goal p99 <= {goal * 1000:.0f} ms)")


def team_run(team: Path, layout: str, actions: list[int], pol: Path, root: Path,
             args: argparse.Namespace) -> TeamRun:
    """The watch with people beside it: pages from `goodput serve` (separate) or from the
    watch's own process (`goodput watch --serve`, in-watch)."""
    cli = [sys.executable, "-m", "goodput_agent.cli"]
    srv = None
    if layout == "separate":
        srv, url = serve(team, pol, root / "serve.log")
        w = watch(team, args.backlog)
    else:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        w = watch(team, args.backlog, (port, pol))
    lists, approves, pages, cpu = [], [], [], []
    try:
        w.stdout.readline()
        for path in ("/", "/inv/inv-t-0", f"/actions/{actions[0]}"):  # a long-running
            page(url + path)  # server's templates are compiled: not measured
        i, start = 0, time.monotonic()
        while w.poll() is None:  # the team's requests, one every `pace` seconds
            kind = i % 5
            if kind == 0:
                lists.append(timed([*cli, "ledger", "list", "--ledger", str(team)], cpu))
            elif kind == 1 and len(approves) < len(actions):
                approves.append(timed([*cli, "approve", str(actions[len(approves)]), "--yes",
                                       "--policy", str(pol), "--ledger", str(team)], cpu))
            else:
                path = ("/", f"/inv/inv-t-{i}", f"/actions/{actions[i % len(actions)]}")[kind % 3]
                try:
                    pages.append(page(url + path))
                except OSError:  # the watch finished and its pages with it (in-watch)
                    break
            i += 1
            time.sleep(max(0.0, start + i * args.pace - time.monotonic()))
        shared = float(w.communicate()[0].strip())
    finally:
        if srv is not None:
            srv.terminate()
            srv.wait()
    return TeamRun(layout, shared, sum(cpu), os.getloadavg()[0], lists, approves, pages)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--investigations", type=int, default=100_000)
    ap.add_argument("--backlog", type=int, default=1000)
    ap.add_argument("--pace", type=float, default=1.0,
                    help="seconds between the team's requests (0: back to back); 1.0 is ten "
                         "people each running a command or loading a page every 10 s")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="goodput-team-"))
    jobs = root / "jobs"
    jobs.mkdir()
    base = root / "base.duckdb"
    t = time.perf_counter()
    actions = build(base, args.investigations, 40, jobs)
    print(f"ledger: {args.investigations:,} investigations, "
          f"{base.stat().st_size / 2**20:.0f} MiB, built in {time.perf_counter() - t:.1f} s")
    pol = policy(root, jobs)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    before = watch_alone(base, root, args.backlog)
    print(f"watch alone (before): {args.backlog} triggers in {before:.1f} s "
          f"({args.backlog / before:.1f}/s)")
    runs = []
    for layout in ("separate", "in-watch"):
        team = root / f"team-{layout}.duckdb"
        shutil.copy(base, team)
        for script in jobs.glob("*.sbatch"):  # as proposed: each run approves the same edits
            script.write_text("#SBATCH --mem=64G\nsrun train.py\n")
        runs.append(team_run(team, layout, actions, pol, root, args))
    after = watch_alone(base, root, args.backlog)
    alone = (before + after) / 2
    print(f"watch alone (after): {args.backlog} triggers in {after:.1f} s "
          f"({args.backlog / after:.1f}/s); compared below with the mean, {alone:.1f} s")
    for run in runs:
        run.report(alone, args)
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("GOODPUT_LOG_LEVEL", "error")
    main()
