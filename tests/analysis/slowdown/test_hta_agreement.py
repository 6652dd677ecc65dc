"""Goodput's HTA numbers (analysis/slowdown/hta_metrics.py) agree with Holistic Trace
Analysis's own on the real traces in ../shared/traces: temporal breakdown, idle-time breakdown
per stream, and communication-computation overlap per rank and per iteration.

HTA runs in its own environment (tests/reference/hta_env.py); making it needs PyPI once, and a
failure to make it fails this test: it is the product's correctness reference.
Agreement: within 1% of HTA's range (kernel_time) for times, within 1 percentage point for
overlap ratios, unless a file below names a definition difference and its bound.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import orjson
import pytest

from goodput_agent.analysis.slowdown.hta_metrics import HtaMetrics, hta_metrics
from goodput_agent.core.errors import BadInput
from goodput_agent.parsing.base import ParseError
from tests.conftest import SHARED
from tests.reference.hta_env import HtaUnavailable, hta_python, run_hta_per_file

TRACES = SHARED / "traces"
ANALYSES = "temporal,idle,overlap,overlap_steps"
TIME_TOL = 0.01  # of HTA's range
PCT_TOL = 1.0  # percentage points

# HTA 0.5.0 cannot analyse these (checked below: it must fail on them too)
HTA_FAILS = {
    name: "no GPU kernel: get_temporal_breakdown raises IndexError on an empty timeline"
    for name in ("hta/cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                 "hta/cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz",
                 "hta/distributed_info_unavailable_distributed_info_not_found.json.gz",
                 "hta/mixed_files_rank_non_gpu.json.gz",
                 "hta/rank_non_gpu_rank_non_gpu.json.gz",
                 "hta/rank_unavailable_rank_not_found.json.gz")
}
NOT_KINETO = {
    "hta/execution_trace_benchmark_simple_add_et.json.gz": "a Chakra execution trace",
    "hta/memory_analysis_memory_timeline.raw.gz": "a memory-timeline export (a JSON list)",
}
# HTA analyses these; Goodput's trace model holds CUDA/ROCm GPU events only, not MTIA's
# `mtia_ccp_events`, so Goodput must report no GPU timeline rather than wrong numbers
NOT_GOODPUT = {
    name: "MTIA accelerator trace: mtia_ccp_events are outside Goodput's trace model"
    for name in ("hta/mtia_inference_trace_mtia_inference_rank_0.json.gz",
                 "hta/mtia_trace_single_rank_mtia_rank_0.json.gz")
}


def _events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        return orjson.loads(f.read())["traceEvents"]


def _spans(events: list[dict]) -> list[tuple[int, int]]:
    """On HTA's rounded clock: ceil(start) to floor(end)."""
    return [(math.ceil(e["ts"]), math.floor(e["ts"] + e["dur"])) for e in events]


def _allowance(spans: list[tuple[int, int]], ours: HtaMetrics) -> float:
    """What events Goodput leaves out can change: their own time, plus how far they stretch the
    range beyond Goodput's (the stretch is idle time to HTA)."""
    if not spans or ours.temporal is None:
        return 0.0
    lo, hi = ours.temporal.start_us, ours.temporal.start_us + ours.temporal.kernel_us
    own = sum(max(0, e - s) for s, e in spans)
    return own + max(0.0, lo - min(s for s, _ in spans)) + max(0.0, max(e for _, e in spans) - hi)


def _stream_cpu_ops(path: Path) -> list[tuple[int, int]]:
    """HTA's timeline is every event with a `stream` argument: Triton's launcher CPU op carries
    one, so HTA counts that CPU op's span as GPU compute; Goodput counts GPU events only."""
    return _spans([e for e in _events(path)
                   if e.get("cat") == "cpu_op" and "stream" in (e.get("args") or {})])


def _context_syncs(path: Path) -> list[tuple[int, int]]:
    """A Context Sync waits for the whole device; Kineto writes its stream as 2**32 - 1, which
    HTA's `stream != -1` takes for a stream, so HTA counts the CPU-side wait as GPU time."""
    return _spans([e for e in _events(path) if e.get("cat") == "cuda_sync"
                   and (e.get("args") or {}).get("stream") == 2**32 - 1])


_CONTEXT_SYNC = ("Context Sync events (stream 2**32-1) count as GPU time in HTA",
                 _context_syncs)
# file -> (why the numbers differ, the events HTA counts and Goodput does not)
EXPLAINED = {
    "hta/triton_example_triton_example.json.gz":
        ("a Triton launcher cpu_op with a `stream` argument counts as GPU compute in HTA",
         _stream_cpu_ops),
    "hta/critical_path_end_to_end_simple_add_input_trace.json.gz": _CONTEXT_SYNC,
    "hta/critical_path_end_to_end_simple_add_output_overlaid_critical_path_trace.json.gz":
        _CONTEXT_SYNC,
    "hta/critical_path_simple_add_benchmark_result_493459_1694039959_trace.json.gz":
        _CONTEXT_SYNC,
}


def _manifest() -> list[str]:
    if not (TRACES / "_traces_manifest.json").is_file():
        pytest.skip("../shared/traces is not beside this checkout (it is in CI)")
    return [e["file"] for e in json.loads((TRACES / "_traces_manifest.json").read_text())]


def _path(name: str) -> Path:
    """The manifest's file; it names kineto/test__gpu_metrics_input.json, which lies at the top."""
    p = TRACES / name
    return p if p.exists() else TRACES / Path(name).name


@pytest.fixture(scope="session")
def hta() -> Path:
    _manifest()
    try:
        return hta_python()
    except HtaUnavailable as e:
        pytest.fail(f"the HTA reference environment could not be made: {e}", pytrace=False)


def _load(path: Path):
    from goodput_agent.parsing.kineto.load import load_trace

    return load_trace(path, rel_path=path.name)


def _ours_or_reason(path: Path) -> HtaMetrics | str:
    try:
        return hta_metrics(_load(path))
    except (ParseError, BadInput) as e:
        return str(e)


def _check_close(what: str, ours: float | None, theirs: float | None, tol: float,
                 problems: list[str]) -> None:
    if ours is None or theirs is None:
        if ours != theirs:
            problems.append(f"{what}: ours {ours} vs HTA {theirs}")
    elif abs(ours - theirs) > tol:
        problems.append(f"{what}: ours {ours:.2f} vs HTA {theirs:.2f} (tolerance {tol:.2f})")


def _compare(name: str, ours: HtaMetrics, job: dict, extra_us: float) -> list[str]:
    problems: list[str] = []
    (h,) = job["temporal"]
    b = ours.temporal
    if b is None:
        return [f"{name}: Goodput found no GPU timeline, HTA a range of {h['kernel_us']} µs"]
    tol = TIME_TOL * h["kernel_us"] + extra_us
    for k in ("kernel_us", "idle_us", "compute_us", "non_compute_us"):
        _check_close(f"{name} {k}", getattr(b, k), h[k], tol, problems)
    theirs = {(r["stream"], r["category"]): r["idle_us"] for r in job["idle"]}
    mine = {(s.stream, c): v for s in ours.idle for c, v in
            (("host_wait", s.host_wait_us), ("kernel_wait", s.kernel_wait_us),
             ("other", s.other_us))}
    for key in sorted(set(theirs) | {k for k, v in mine.items() if v}):
        _check_close(f"{name} idle stream {key[0]} {key[1]}", mine.get(key, 0.0),
                     theirs.get(key, 0.0), tol, problems)
    (o,) = job["overlap"]
    _check_close(f"{name} overlap %", ours.overlap.overlap_pct, o["overlap_pct"], PCT_TOL,
                 problems)
    steps = {s.step: s.overlap_pct for s in ours.overlap.steps}
    hta_steps = {r["step"]: r["overlap_pct"] for r in job["overlap_steps"]}
    if set(steps) != set(hta_steps):
        problems.append(f"{name} iterations: ours {sorted(steps)} vs HTA {sorted(hta_steps)}")
    for step in sorted(set(steps) & set(hta_steps)):
        _check_close(f"{name} step {step} overlap %", steps[step], hta_steps[step], PCT_TOL,
                     problems)
    ranks = [int(r) for r in job["files"]]
    if ours.rank is not None and ranks != [ours.rank]:
        problems.append(f"{name} rank: ours {ours.rank} vs HTA {ranks}")
    return problems


def _row(name: str, ours: HtaMetrics, job: dict) -> str:
    (h,) = job["temporal"]
    b = ours.temporal
    assert b is not None
    return (f"{name[:48]:48s} range {b.kernel_us:>10.0f}/{h['kernel_us']:<10.0f} "
            f"idle {b.idle_pct:6.2f}/{h['idle_pct']:<6.2f} compute {b.compute_pct:6.2f}/"
            f"{h['compute_pct']:<6.2f} overlap {ours.overlap.overlap_pct}/"
            f"{job['overlap'][0]['overlap_pct']}")


def test_goodput_matches_hta_on_the_shared_traces(hta: Path) -> None:
    names = _manifest()
    compared = [n for n in names if n not in HTA_FAILS | NOT_KINETO | NOT_GOODPUT]
    assert len(compared) >= 15, compared  # the GPU traces are the point of this test
    jobs = run_hta_per_file([_path(n) for n in compared], ANALYSES, python=hta)
    problems, rows = [], []
    for name in compared:
        job = jobs[_path(name)]
        assert job["error"] is None and not job.get("errors"), (name, job)
        ours = _ours_or_reason(_path(name))
        assert isinstance(ours, HtaMetrics), f"{name}: {ours}"
        extra = _allowance(EXPLAINED[name][1](_path(name)), ours) if name in EXPLAINED else 0.0
        problems += _compare(name, ours, job, extra)
        rows.append(_row(name, ours, job))
    print("\nfile  ours/HTA: range µs, idle %, compute %, overlap %\n" + "\n".join(rows))
    assert not problems, "\n".join(problems)


def test_explained_differences_are_real(hta: Path) -> None:
    """Each explained file does differ without its allowance: the reason is not decoration."""
    for name in EXPLAINED:
        job = run_hta_per_file([_path(name)], ANALYSES, python=hta)[_path(name)]
        ours = _ours_or_reason(_path(name))
        assert isinstance(ours, HtaMetrics), f"{name}: {ours}"
        assert _compare(name, ours, job, 0.0), f"{name} agrees without its allowance"


def test_what_hta_cannot_analyse_goodput_refuses_in_one_line(hta: Path) -> None:
    names = set(_manifest())
    cases = {n: r for n, r in (HTA_FAILS | NOT_KINETO).items() if n in names}
    jobs = run_hta_per_file([_path(n) for n in cases], "temporal", python=hta)
    for name in cases:
        job = jobs[_path(name)]
        assert job["error"] or job.get("errors", {}).get("temporal"), (
            f"{name}: HTA analysed it after all; compare it instead")
        ours = _ours_or_reason(_path(name))
        if isinstance(ours, HtaMetrics):
            assert ours.temporal is None, f"{name}: Goodput found GPU time HTA did not"
        else:
            assert "\n" not in ours and Path(name).name in ours, ours


def test_mtia_traces_give_no_numbers_rather_than_wrong_ones() -> None:
    names = set(_manifest())
    for name in NOT_GOODPUT:
        if name not in names:
            continue
        ours = _ours_or_reason(_path(name))
        assert not isinstance(ours, HtaMetrics) or ours.temporal is None, name
