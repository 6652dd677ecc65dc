"""Run Holistic Trace Analysis on Kineto traces and print its results as JSON.

Run by the HTA environment's python (tests/reference/hta_env.py makes it), never imported by
Goodput: HTA is not a dependency of the product.

    python hta_runner.py [--one-job] [--analyses temporal,idle,overlap] TRACE...

Each trace is its own job unless --one-job (then all traces are the ranks of one job). Each job
gets its own folder of symlinks, loaded the way HTA's users do: `TraceAnalysis(trace_dir=...)`,
which reads each file's rank from `"rank": N` in its text. Output, on stdout:

    {"hta_version": ..., "jobs": [{"files": {rank: path}, "error": null | "...",
      "seconds": {"load": s, "temporal": s, ...},
      "temporal": [{"rank", "idle_us", "compute_us", "non_compute_us", "kernel_us", ...}],
      "idle": [{"rank", "stream", "category", "idle_us", "ratio"}],
      "overlap": [{"rank", "overlap_pct"}],
      "overlap_steps": [{"rank", "step", "overlap_pct"}]}]}   (HTA's overlap per iteration)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import math
import os
import sys
import tempfile
import time
import traceback
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ANALYSES = ("temporal", "idle", "overlap", "overlap_steps")


def _num(x: Any) -> float | None:
    v = float(x)
    return None if math.isnan(v) else v


def _temporal(ta: Any) -> list[dict[str, Any]]:
    df = ta.get_temporal_breakdown(visualize=False)
    return [{"rank": int(r["rank"]), "idle_us": _num(r["idle_time(us)"]),
             "compute_us": _num(r["compute_time(us)"]),
             "non_compute_us": _num(r["non_compute_time(us)"]),
             "kernel_us": _num(r["kernel_time(us)"]),
             "idle_pct": _num(r["idle_time_pctg"]), "compute_pct": _num(r["compute_time_pctg"]),
             "non_compute_pct": _num(r["non_compute_time_pctg"])}
            for r in df.to_dict("records")]


def _idle(ta: Any) -> list[dict[str, Any]]:
    df, _ = ta.get_idle_time_breakdown(ranks=ta.t.get_ranks(), visualize=False)
    return [{"rank": int(r["rank"]), "stream": int(r["stream"]),
             "category": str(r["idle_category"]), "idle_us": _num(r["idle_time"]),
             "ratio": _num(r["idle_time_ratio"])}
            for r in df.to_dict("records")]


def _overlap(ta: Any) -> list[dict[str, Any]]:
    df = ta.get_comm_comp_overlap(visualize=False)
    return [{"rank": int(r["rank"]), "overlap_pct": _num(r["comp_comm_overlap_pctg"])}
            for r in df.to_dict("records")]


def _overlap_steps(ta: Any) -> list[dict[str, Any]]:
    """HTA's overlap function on each iteration's events alone, by HTA's iteration column."""
    import copy

    from hta.analyzers.communication_analysis import CommunicationAnalysis

    rows = []
    for rank in ta.t.get_ranks():
        df = ta.t.get_trace(rank)
        for it in ta.t.get_iterations(rank):
            one = copy.copy(ta.t)
            one.traces = {rank: df[df["iteration"] == it]}
            r = CommunicationAnalysis.get_comm_comp_overlap(one, visualize=False)
            rows.append({"rank": int(rank), "step": int(it),
                         "overlap_pct": _num(r["comp_comm_overlap_pctg"].iloc[0])})
    return rows


RUN = {"temporal": _temporal, "idle": _idle, "overlap": _overlap, "overlap_steps": _overlap_steps}


def run_job(files: list[Path], analyses: list[str], workdir: Path) -> dict[str, Any]:
    from hta.trace_analysis import TraceAnalysis

    job: dict[str, Any] = {"files": {}, "error": None, "seconds": {}}
    for i, f in enumerate(files):
        # HTA only accepts names ending in .json or .gz; the index keeps equal names apart
        os.symlink(f.resolve(), workdir / f"{i}_{f.name}")
    t = time.perf_counter()
    try:
        ta = TraceAnalysis(trace_dir=str(workdir))
    except Exception as e:  # HTA's own failure is the result here, not a crash of the runner
        job["error"] = f"load: {type(e).__name__}: {e}".splitlines()[0][:300]
        return job
    job["seconds"]["load"] = time.perf_counter() - t
    job["files"] = {str(r): Path(p).name.split("_", 1)[1] for r, p in ta.t.trace_files.items()}
    for name in analyses:
        t = time.perf_counter()
        try:
            job[name] = RUN[name](ta)
        except Exception as e:
            last = traceback.extract_tb(e.__traceback__)[-1]
            job[name] = None
            job.setdefault("errors", {})[name] = (
                f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''} "
                f"({Path(last.filename).name}:{last.lineno})")
        job["seconds"][name] = time.perf_counter() - t
    return job


def _job(args: tuple[int, list[Path], list[str], str]) -> dict[str, Any]:
    i, group, analyses, tmp = args
    workdir = Path(tmp) / f"job{i}"
    workdir.mkdir()
    job = run_job(group, analyses, workdir)
    job["paths"] = [str(p.resolve()) for p in group]
    return job


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--one-job", action="store_true")
    ap.add_argument("--analyses", default=",".join(ANALYSES))
    ap.add_argument("--workers", type=int, default=1, help="jobs analysed at once")
    args = ap.parse_args()
    analyses = [a for a in args.analyses.split(",") if a]
    unknown = set(analyses) - set(ANALYSES)
    if unknown:
        sys.exit(f"unknown analyses: {sorted(unknown)}")
    logging.disable(logging.WARNING)  # HTA logs every parse at WARNING
    warnings.simplefilter("ignore")  # and pandas/numpy warn on its empty divisions
    version = importlib.metadata.version("holistictraceanalysis")

    groups = [args.traces] if args.one_job else [[t] for t in args.traces]
    with tempfile.TemporaryDirectory(prefix="hta-runner-") as tmp:
        work = [(i, g, analyses, tmp) for i, g in enumerate(groups)]
        if args.workers > 1 and len(work) > 1:
            with ProcessPoolExecutor(args.workers) as pool:
                jobs = list(pool.map(_job, work))
        else:
            jobs = [_job(w) for w in work]
    json.dump({"hta_version": version, "jobs": jobs}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
