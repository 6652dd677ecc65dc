"""Two serving benchmark results compared: the factor that moved while the others held
decides, whichever file is named first; a mixed change names nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.analysis.latency.bench_compare import (
    ENGINE_ONLY,
    BenchResult,
    compare_benchmarks,
)
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.tool_reports import BENCH_PARSER

BLOCK = """\
============ Serving Benchmark Result ============
Backend:                                 sglang
Successful requests:                     {n}
Benchmark duration (s):                  126.65
Total input tokens:                      {inp}
Total generated tokens:                  {out}
Request throughput (req/s):              {rate}
---------------Time to First Token----------------
Mean TTFT (ms):                          {ttft}
---------------Inter-Token Latency----------------
Mean ITL (ms):                           {itl}
----------------End-to-End Latency----------------
Mean E2E Latency (ms):                   {e2e}
==================================================
"""
BASE = {"n": 500, "inp": 464500, "out": 103500, "rate": 3.95, "ttft": 60.1, "itl": 25.0,
        "e2e": 5567.0}


def _result(tmp_path: Path, name: str, **changed: float) -> BenchResult:
    path = tmp_path / name
    path.write_text(BLOCK.format(**{**BASE, **changed}))
    res = BENCH_PARSER.parse(path, ParseContext(rel_path=name))
    return BenchResult(path=name, values=res.facts["benchmark"],
                       lines=res.facts["benchmark_lines"])


@pytest.mark.parametrize(("changed", "category"), [
    ({"inp": 3 * 464500, "ttft": 320.0}, "prompt_length"),
    ({"out": 3 * 103500, "e2e": 16000.0}, "output_length"),
    ({"rate": 9.1, "ttft": 240.0}, "queueing"),
    ({"inp": 3 * 464500, "rate": 9.1, "ttft": 400.0}, "unknown"),  # two factors at once
    ({"inp": 3 * 464500, "ttft": 320.0, "itl": 60.0}, "unknown"),  # decode slowed too
    # a factor that shrank cannot have raised the latency: no rival
    ({"inp": 3 * 464500, "ttft": 320.0, "out": 0.7 * 103500}, "prompt_length"),
    ({"rate": 9.1, "ttft": 240.0, "inp": 0.6 * 464500}, "queueing"),
    # a factor that grew less than a cause would contests only through the latency it drives:
    # outputs x1.3 with the inter-token latency flat added no load, so no queue before prefill
    ({"inp": 3 * 464500, "ttft": 320.0, "out": 1.3 * 103500}, "prompt_length"),
    ({"inp": 3 * 464500, "ttft": 320.0, "out": 1.3 * 103500, "itl": 40.0}, "unknown"),
    # prompts x1.3 with TTFT flat added nothing to the end-to-end time
    ({"out": 3 * 103500, "e2e": 16000.0, "inp": 1.3 * 464500}, "output_length"),
    ({"out": 3 * 103500, "e2e": 16000.0, "inp": 1.3 * 464500, "ttft": 120.0}, "unknown"),
    # one that grew as a cause would (x1.5 or more) is a rival whatever else held
    ({"inp": 3 * 464500, "ttft": 320.0, "out": 1.6 * 103500}, "unknown"),
])
def test_the_factor_that_moved_alone_decides_in_either_order(
        tmp_path: Path, changed: dict, category: str) -> None:
    before, after = _result(tmp_path, "before.txt"), _result(tmp_path, "after.txt", **changed)
    for pair in ([before, after], [after, before]):
        got = compare_benchmarks(pair)
        assert got is not None and got.verdict.category == category, (changed, pair[0].path)
        assert got.verdict.confidence <= ENGINE_ONLY
    cited = {e.locator.path for e in compare_benchmarks([before, after]).verdict.evidence}
    assert cited == {"before.txt", "after.txt"}


def test_one_result_is_nothing_to_compare(tmp_path: Path) -> None:
    assert compare_benchmarks([_result(tmp_path, "only.txt")]) is None
