"""Scale benchmark: the slowdown analysis of N ranks on this machine and on a two-node Ray
cluster (started here, on this host), the same verdict, the driver's memory against N.

    python benchmarks/ray_scale.py [--ranks 16,32,64] [--size-mb 50] [--keep DIR]
                                   [--address HOST:PORT] [--logs-scale 0.1]

Traces come from evals/kineto_writer.py (`write_large_job`: one synchronized DDP job, rank r
computing 1 + r/50 slower). Each run is its own process: `local` loads the whole traces (on
every core, as `goodput trace diff` does) and analyses them; `ray` digests each rank in a Ray
task and analyses the digests on the driver. Printed per N: wall time, the driver's peak RSS,
the verdict (and whether both agree), the digests' size; then the constants of the scaling
model in benchmarks/README.md: per-rank digest cost (one rank, in-process), the driver's
alignment + verdict cost per rank, and Ray's per-task overhead (no-op tasks).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.servers.ray_cluster (the cluster) and evals
NOOP_TASKS = 256


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def side_local(folder: Path) -> dict:
    from goodput_agent.analysis.slowdown.analyze import analyse
    from goodput_agent.cli.trace import load_run

    t0 = time.perf_counter()
    traces = load_run(folder)
    t1 = time.perf_counter()
    _, verdict = analyse(traces)
    return {"wall_s": time.perf_counter() - t0, "load_s": t1 - t0,
            "verdict": verdict.model_dump(mode="json"), "driver_rss_mb": _maxrss_mb()}


def side_ray(folder: Path, address: str) -> dict:
    from goodput_agent.analysis.slowdown.rank_digest import analyse_digests
    from goodput_agent.cli.trace import load_runs
    from goodput_agent.core.ray_exec import RayRunner

    t0 = time.perf_counter()
    runner = RayRunner(address, progress=False)
    t1 = time.perf_counter()
    digests = load_runs([folder], runner)[0]
    t2 = time.perf_counter()
    _, verdict = analyse_digests(digests)
    t3 = time.perf_counter()
    return {"wall_s": t3 - t1, "connect_s": t1 - t0, "digest_s": t2 - t1, "align_s": t3 - t2,
            "verdict": verdict.model_dump(mode="json"), "driver_rss_mb": _maxrss_mb(),
            "digest_bytes": sum(len(pickle.dumps(d)) for d in digests)}


def side_one(trace: Path) -> dict:
    from goodput_agent.analysis.slowdown.rank_digest import digest_trace

    t0 = time.perf_counter()
    d = digest_trace(str(trace), trace.name)
    return {"digest_s": time.perf_counter() - t0, "mb": trace.stat().st_size / 1e6,
            "digest_bytes": len(pickle.dumps(d))}


def side_noop(address: str) -> dict:
    from goodput_agent.core.parallel import biggest_first
    from goodput_agent.core.ray_exec import RayRunner

    runner = RayRunner(address, progress=False)
    runner.map_files(biggest_first, [(0, None)] * 8)  # workers started
    t0 = time.perf_counter()
    runner.map_files(biggest_first, [(0, None)] * NOOP_TASKS)  # a no-op task each
    return {"per_task_s": (time.perf_counter() - t0) / NOOP_TASKS}


def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--side", *args], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{args[0]} run failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _investigate(bundle: Path, ledger: Path, address: str | None) -> tuple[float, float, str]:
    """`goodput investigate --json` as its own process: wall s, its peak RSS MB, root cause."""
    argv = [sys.executable, "-m", "goodput_agent.cli", "investigate", str(bundle), "--json",
            "--ledger", str(ledger), *(["--ray", address] if address else [])]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    report = json.loads(out) if out.strip() else {}
    cause = report.get("root_cause", {})
    return wall, usage.ru_maxrss / 1024, json.dumps(
        {k: cause.get(k) for k in ("category", "node", "rank", "gpu", "summary")})


def run_logs(scale: float, root: Path, address: str) -> None:
    """The failure side: scan_scale.py's bundle (1,024 rank logs, 128 kernel logs) at `scale`,
    investigated here and with --ray."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from scan_scale import generate

    bundle = root / f"logs-{scale:g}"
    if not bundle.exists():
        size = generate(bundle, scale)
        print(f"generated a failure bundle of {size / 1e9:.2f} GB", flush=True)
    local = _investigate(bundle, root / "local.duckdb", None)
    ray = _investigate(bundle, root / "ray.duckdb", address)
    print(f"failure bundle: local {local[0]:.1f} s, {local[1]:.0f} MB; ray {ray[0]:.1f} s, "
          f"{ray[1]:.0f} MB (driver); root cause {json.loads(local[2])['category']} "
          f"({'same' if local[2] == ray[2] else 'DIFFERENT'})", flush=True)


def _subset(job: Path, n: int, root: Path) -> Path:
    """The first n ranks of the job, hard-linked (a scan does not follow symbolic links)."""
    folder = root / f"n{n}"
    folder.mkdir(exist_ok=True)
    for r in range(n):
        src = job / f"rank{r}.pt.trace.json"
        if not (folder / src.name).exists():
            os.link(src, folder / src.name)
    return folder


def run(ranks: list[int], size_mb: float, root: Path, address: str) -> None:
    from goodput_agent.evals.kineto_writer import write_large_job

    job = root / "job"
    if not (job / f"rank{max(ranks) - 1}.pt.trace.json").exists():
        job.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        write_large_job(job, ranks=max(ranks), size_bytes=int(size_mb * 1e6))
        print(f"generated {max(ranks)} ranks x {size_mb:g} MB in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    print(f"{'ranks':>5} {'local s':>8} {'local MB':>9} {'ray s':>7} {'ray MB':>7} "
          f"{'align s':>8} {'digests MB':>10}  verdict (same?)", flush=True)
    align_per_rank = []
    for n in ranks:
        folder = _subset(job, n, root)
        local, ray = _child("local", str(folder)), _child("ray", str(folder), address)
        same = local["verdict"] == ray["verdict"]
        align_per_rank.append(ray["align_s"] / n)
        print(f"{n:>5} {local['wall_s']:>8.1f} {local['driver_rss_mb']:>9.0f} "
              f"{ray['wall_s']:>7.1f} {ray['driver_rss_mb']:>7.0f} {ray['align_s']:>8.2f} "
              f"{ray['digest_bytes'] / 1e6:>10.1f}  {local['verdict']['category']} "
              f"({'same' if same else 'DIFFERENT'})", flush=True)
    one = _child("one", str(job / "rank0.pt.trace.json"))
    noop = _child("noop", address)
    print(f"constants: digest {one['digest_s'] / one['mb'] * 1e3:.1f} ms per trace MB "
          f"({one['digest_s']:.2f} s for {one['mb']:.0f} MB, digest "
          f"{one['digest_bytes'] / 1e3:.0f} kB); driver alignment + verdict "
          f"{max(align_per_rank) * 1e3:.1f} ms per rank (worst N); Ray "
          f"{noop['per_task_s'] * 1e3:.2f} ms per task ({NOOP_TASKS} no-op tasks)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="16,32,64", help="comma-separated rank counts")
    ap.add_argument("--size-mb", type=float, default=50.0, help="each rank's trace")
    ap.add_argument("--keep", type=Path, default=None, help="generate into (and reuse) DIR")
    ap.add_argument("--address", default=None, help="a running Ray cluster (else one is "
                    "started here: two nodes, one CPU each)")
    ap.add_argument("--logs-scale", type=float, default=0.0, help="also scan_scale.py's failure "
                    "bundle at this scale (1: ~2 GB), here and with --ray")
    ap.add_argument("--side", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.side:
        kind, *rest = a.side
        out = {"local": lambda: side_local(Path(rest[0])),
               "ray": lambda: side_ray(Path(rest[0]), rest[1]),
               "one": lambda: side_one(Path(rest[0])),
               "noop": lambda: side_noop(rest[0])}[kind]()
        print(json.dumps(out))
        return
    ranks = sorted(int(x) for x in a.ranks.split(","))
    root = a.keep or Path(tempfile.mkdtemp(prefix="goodput-ray-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    if a.address:
        run(ranks, a.size_mb, root, a.address)
        if a.logs_scale:
            run_logs(a.logs_scale, root, a.address)
        return
    from tests.servers.ray_cluster import two_node_cluster

    with two_node_cluster(root) as cluster:
        run(ranks, a.size_mb, root, cluster.address)
        if a.logs_scale:
            run_logs(a.logs_scale, root, cluster.address)


if __name__ == "__main__":
    main()
