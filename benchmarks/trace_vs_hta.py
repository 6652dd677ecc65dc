"""Speed and memory benchmark: Goodput vs Holistic Trace Analysis on large Kineto traces.

    python benchmarks/trace_vs_hta.py [--size-mb 100] [--ranks 2] [--keep DIR]

Generates one job of `--ranks` traces of `--size-mb` MB each (uncompressed JSON), then, each side
in its own subprocess on the same files:
- Goodput: load_trace per rank + hta_metrics (temporal, idle-time and overlap breakdowns, per
  step too) + the whole slowdown analysis (analysis/slowdown.analyse: every rank's per-step
  breakdown, collective waits, the verdict);
- HTA 0.5.0 (its own environment, tests/reference/hta_env.py): TraceAnalysis(trace_dir) +
  get_temporal_breakdown + get_comm_comp_overlap.
Prints wall time and peak memory of each and the ratios (targets: Goodput >= 25x faster,
<= 1/5 of HTA's peak memory): the time ratio for the same analyses (Goodput's wall time less
its slowdown analysis, which HTA has no counterpart of) and with it, with the CPU time of each
side's process tree beside the wall time (on a shared machine it moves less). Peak memory is
sampled every 20 ms as the summed PSS of the side's process tree (HTA parses ranks in forked
workers), beside the largest peak RSS (VmHWM) of one process.

Traces come from evals/kineto_writer.py when it is there; otherwise the events of a real shared
trace (../shared/traces/hta/trace_diff_control_control.json.gz) are replicated with shifted
timestamps and renumbered steps and correlation ids.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.reference (HTA's environment) and evals

SEED_TRACE = REPO.parent / "shared" / "traces" / "hta" / "trace_diff_control_control.json.gz"
SAMPLE_S = 0.02


# ---------------------------------------------------------------------------------------------
# traces


def _replicate(seed: Path, out: Path, rank: int, ranks: int, size: int) -> str:
    """Copies of the seed trace's events, each shifted past the previous copy, until `size`
    bytes; step numbers, correlation, External id and flow ids renumbered per copy so that
    they stay unique (HTA joins on correlation)."""
    with gzip.open(seed) as f:
        top = orjson.loads(f.read())
    events = top.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), int | float) and e.get("ph") != "M"]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - t0 + 1000
    max_corr = max((e.get("args") or {}).get("correlation", 0) for e in events) + 1
    max_ext = max((e.get("args") or {}).get("External id", 0) for e in events) + 1
    max_id = max((e.get("id", 0) for e in events if isinstance(e.get("id"), int)), default=0) + 1
    steps = sorted({int(e["name"].split("#")[1]) for e in events
                    if str(e.get("name", "")).startswith("ProfilerStep#")})
    top["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": ranks}
    # json.dumps writes `"rank": 0` with the space HTA's rank regex needs
    head = json.dumps(top)[:-1].encode() + b', "traceEvents": ['
    jitter = 7 * rank  # ranks a little apart, as real ones are
    written, copy = 0, 0
    with open(out, "wb") as f:
        f.write(head)
        first = True
        for e in events:
            if e.get("ph") == "M":
                f.write((b"" if first else b",") + orjson.dumps(e))
                first = False
        while written < size:
            shift = copy * span + jitter
            chunk = []
            for e in events:
                if e.get("ph") == "M" or e.get("cat") == "Trace":
                    continue
                e = dict(e)
                if "ts" in e:
                    e["ts"] = e["ts"] + shift
                if isinstance(e.get("id"), int):
                    e["id"] += copy * max_id
                if isinstance(args := e.get("args"), dict):
                    args = dict(args)
                    if "correlation" in args:
                        args["correlation"] += copy * max_corr
                    if "External id" in args:
                        args["External id"] += copy * max_ext
                    e["args"] = args
                name = e.get("name", "")
                if isinstance(name, str) and name.startswith("ProfilerStep#"):
                    e["name"] = f"ProfilerStep#{int(name[13:]) + copy * len(steps)}"
                chunk.append(orjson.dumps(e))
            blob = b",".join(chunk)
            f.write((b"" if first else b",") + blob)
            first = False
            written += len(blob)
            copy += 1
        f.write(b"]}")
    return f"{copy} copies of {seed.name}"


def _generate_with_writer(root: Path, size: int, ranks: int) -> tuple[list[Path], str] | None:
    try:
        from evals import kineto_writer  # H4's generator, when it is there
    except ImportError:
        return None
    write = getattr(kineto_writer, "write_large_job", None)
    if write is None:
        return None
    paths = write(root, ranks=ranks, size_bytes=size)
    return [Path(p) for p in paths], "evals/kineto_writer.py"


def generate(root: Path, size_mb: float, ranks: int) -> tuple[list[Path], str]:
    size = int(size_mb * 1e6)
    made = _generate_with_writer(root, size, ranks)
    if made is not None:
        return made
    if not SEED_TRACE.exists():
        sys.exit(f"no evals/kineto_writer.py and no seed trace at {SEED_TRACE}")
    paths, how = [], ""
    for r in range(ranks):
        p = root / f"rank{r}.json"
        how = _replicate(SEED_TRACE, p, r, ranks, size)
        paths.append(p)
    return paths, how


# ---------------------------------------------------------------------------------------------
# measuring a process tree


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _field_kb(path: str, field: str) -> int:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += _children(p)
    return out


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(cmd: list[str]) -> tuple[float, float, float, float, str]:
    """(wall s, CPU s of the whole tree, peak summed PSS of the tree MB, largest peak RSS of one
    process MB, stdout) of one command. ru_maxrss is not used: a child inherits its parent's."""
    cpu = _cpu_s()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errors:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=errors)
        peak, hwm = 0, 0
        while proc.poll() is None:
            pids = _tree(proc.pid)
            peak = max(peak, sum(_field_kb(f"/proc/{p}/smaps_rollup", "Pss:") for p in pids))
            hwm = max([hwm] + [_field_kb(f"/proc/{p}/status", "VmHWM:") for p in pids])
            time.sleep(SAMPLE_S)
        wall = time.perf_counter() - t
        errors.seek(0)
        err = errors.read().decode(errors="replace")
        out.seek(0)
        text = out.read().decode()
    if proc.returncode != 0:
        sys.exit(f"{Path(cmd[1]).name} exited {proc.returncode}: {err[-800:]}")
    return wall, _cpu_s() - cpu, peak / 1024, hwm / 1024, text


# ---------------------------------------------------------------------------------------------
# the Goodput side (run as a subprocess of this script)


def goodput_side(paths: list[Path]) -> None:
    from goodput_agent.analysis.slowdown.hta_metrics import hta_job_metrics
    from goodput_agent.parsing.kineto.load import load_traces

    t = time.perf_counter()
    traces = load_traces([(p, p.name, None) for p in paths])  # on every core, as HTA does
    assert all(not isinstance(tr, Exception) for tr in traces), traces
    loaded = time.perf_counter() - t
    metrics = hta_job_metrics(traces)
    analysed = time.perf_counter() - t - loaded
    steps, slowdown_s = None, None
    t = time.perf_counter()  # its import is the slowdown analysis's cost, not the HTA metrics'
    try:  # the product's whole slowdown analysis: per-step breakdowns of every rank + verdict
        from goodput_agent.analysis.slowdown.analyze import analyse
    except ImportError:
        analyse = None
    if analyse is not None:
        breakdown, _ = analyse(traces)
        slowdown_s = time.perf_counter() - t
        steps = sum(len(r.steps) for r in breakdown.incident.ranks)
    print(json.dumps({"ranks": [tr.meta.rank for tr in traces], "load_s": loaded,
                      "analyse_s": analysed, "slowdown_s": slowdown_s,
                      "step_breakdowns": steps, "gpu_ops": sum(len(tr.gpu) for tr in traces),
                      "temporal": [m.temporal.model_dump() if m.temporal else None
                                   for m in metrics],
                      "overlap_pct": [m.overlap.overlap_pct for m in metrics]}))


# ---------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=100.0, help="size of each rank's trace")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="generate into (and reuse) DIR")
    ap.add_argument("--side", choices=["goodput", "generate"], help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side == "goodput":
        goodput_side(args.paths)
        return
    if args.side == "generate":
        paths, how = generate(args.paths[0], args.size_mb, args.ranks)
        print(json.dumps({"paths": [str(p) for p in paths], "how": how}))
        return
    from tests.reference.hta_env import RUNNER, hta_python

    hta = hta_python()
    root = args.keep or Path(tempfile.mkdtemp(prefix="goodput-hta-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    paths = sorted(root.glob("rank*.json"))
    if len(paths) != args.ranks:
        for p in paths:
            p.unlink()
        t = time.perf_counter()
        # in a process of its own, so that this one stays small while it measures the others
        made = json.loads(subprocess.run(
            [sys.executable, __file__, "--side", "generate", "--size-mb", str(args.size_mb),
             "--ranks", str(args.ranks), str(root)], check=True, capture_output=True,
            text=True).stdout)
        paths, how = [Path(p) for p in made["paths"]], made["how"]
        print(f"generated {len(paths)} traces, {sum(p.stat().st_size for p in paths) / 1e6:.0f} MB"
              f" ({how}) in {time.perf_counter() - t:.1f} s at {root}")
    sizes = ", ".join(f"{p.name} {p.stat().st_size / 1e6:.0f} MB" for p in paths)
    print(f"traces: {sizes}")
    subprocess.run(["cat", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)

    g_wall, g_cpu, g_pss, g_rss, g_out = measure([sys.executable, __file__, "--side", "goodput",
                                           *map(str, paths)])
    h_wall, h_cpu, h_pss, h_rss, h_out = measure([str(hta), str(RUNNER), "--one-job", "--analyses",
                                           "temporal,overlap", *map(str, paths)])
    g, h = json.loads(g_out), json.loads(h_out)["jobs"][0]
    slow = (f", slowdown analysis {g['slowdown_s']:.2f} s ({g['step_breakdowns']} step "
            "breakdowns)") if g["slowdown_s"] is not None else ""
    print(f"goodput: {g_wall:7.2f} s, CPU {g_cpu:7.2f} s (load {g['load_s']:.2f} s, HTA metrics "
          f"{g['analyse_s']:.2f} s{slow}), peak PSS {g_pss:6.0f} MB (largest process "
          f"{g_rss:6.0f} MB), {g['gpu_ops']} GPU ops")
    if h["error"] or h.get("errors"):  # Goodput's side is printed: it can still be compared
        sys.exit(f"HTA failed: {h['error'] or h['errors']}")
    print(f"HTA:     {h_wall:7.2f} s, CPU {h_cpu:7.2f} s (load {h['seconds']['load']:.2f} s), "
          f"peak PSS {h_pss:6.0f} MB (largest process {h_rss:6.0f} MB)")
    same_work_s = g_wall - (g["slowdown_s"] or 0.0)  # the analyses HTA runs too, nothing more
    print(f"ratio HTA/goodput time, same analyses (load + temporal/idle/overlap): "
          f"{h_wall / same_work_s:6.1f}x  (target >= 25x)")
    print(f"ratio HTA/goodput time, plus Goodput's whole slowdown analysis:      "
          f"{h_wall / g_wall:6.1f}x  (CPU time {h_cpu / g_cpu:.1f}x)")
    print(f"ratio goodput/HTA memory: {g_pss / h_pss:6.2f}   (target <= 0.2)")
    theirs = {r["rank"]: r for r in h["temporal"]}
    same = len(theirs) == len(g["ranks"]) and all(
        t is not None and r in theirs
        and abs(t["kernel_us"] - theirs[r]["kernel_us"]) <= 0.01 * theirs[r]["kernel_us"]
        and abs(t["compute_us"] - theirs[r]["compute_us"]) <= 0.01 * theirs[r]["kernel_us"]
        for r, t in zip(g["ranks"], g["temporal"], strict=True))
    print(f"temporal breakdowns agree within 1% of the range: {'yes' if same else 'NO'}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
