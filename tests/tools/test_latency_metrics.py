"""The latency question with nothing to compare: one benchmark result, every file read, is a
confident `unknown` (abstention.NOTHING_TO_COMPARE); a second window, or a file left unread,
takes that confidence away."""

from pathlib import Path

from goodput_agent.analysis.abstention import NOTHING_TO_COMPARE, UNREAD
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.report import Report

BENCH = """\
============ Serving Benchmark Result ============
Successful requests:                     {n}
Benchmark duration (s):                  262.00
Total input tokens:                      {tokens}
Total generated tokens:                  260000
Request throughput (req/s):              3.82
Mean TTFT (ms):                          {ttft}
Median TTFT (ms):                        1058.78
Mean ITL (ms):                           22.09
==================================================
"""
QUESTION = "question: TTFT looks high on our sglang deployment, why?\n"


def _investigate(bundle: Path, files: dict[str, str], tmp: Path) -> Report:
    for name, text in {"incident.yaml": QUESTION, **files}.items():
        (bundle / name).parent.mkdir(parents=True, exist_ok=True)
        (bundle / name).write_text(text)
    with Ledger(tmp / "ledger.duckdb") as ledger:
        return investigate_bundle(bundle, ledger)


def test_one_benchmark_result_alone_is_a_confident_unknown(tmp_path: Path) -> None:
    r = _investigate(tmp_path / "lone", {
        "bench.txt": BENCH.format(n=1000, tokens=1143000, ttft=1203.15)}, tmp_path)
    assert r.kind == "latency"
    assert (r.root_cause.category, r.root_cause.confidence) == ("unknown", NOTHING_TO_COMPARE)
    assert "nothing" in r.root_cause.summary.lower() or "no earlier run" in r.root_cause.summary


def test_two_results_or_an_unread_file_are_not_nothing_to_compare(tmp_path: Path) -> None:
    two = _investigate(tmp_path / "two", {
        "bench/before.txt": BENCH.format(n=1000, tokens=381000, ttft=80.2),
        "bench/after.txt": BENCH.format(n=1000, tokens=1143000, ttft=310.5)}, tmp_path)
    assert two.root_cause.confidence != NOTHING_TO_COMPARE or two.root_cause.category != "unknown"
    unread = _investigate(tmp_path / "unread", {
        "bench.txt": BENCH.format(n=1000, tokens=1143000, ttft=1203.15),
        "notes.bin": "\x00\x01\x02 not a format anyone reads\n"}, tmp_path)
    assert unread.root_cause.category == "unknown"
    assert unread.root_cause.confidence <= UNREAD
