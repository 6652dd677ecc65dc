"""A slowdown question over a bundle with job logs and no profiler trace is answered as a
slowdown from the log's own series; a bundle with traces is answered from them, unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from goodput_agent.analysis.abstention import NOTHING_NAMES_A_CAUSE, SILENCE
from goodput_agent.analysis.record_levels import SILENCE_CEILING
from goodput_agent.analysis.slowdown.log_clocks import NO_SIGN, WITH_ONE_SIGN
from goodput_agent.evals.scorer import suite_dir
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.report import CATEGORIES

NCCL = ("node-{n:02d}:1{r:04d}:2{r:04d} [{d}] NCCL INFO comm 0xabc rank {r} nranks 8 "
        "cudaDev {d} busId 1b000 commId 0x1 - Init COMPLETE\n")
# who printed a line, as each launcher marks it: torchrun's --tee prefix, srun --label's task id
PREFIXES = {"torchrun": "[rank{r}]:", "srun_label": "{r}: "}


def _straggler_log(root: Path, prefix: str = PREFIXES["torchrun"]) -> None:
    lines = [prefix.format(r=r) + NCCL.format(r=r, n=r // 4, d=r % 4) for r in range(8)]
    for step in range(10, 410, 10):
        for r in range(8):
            fwd = 1300 if (r == 5 and step > 200) else 800
            wait = 20 if (r == 5 or step <= 200) else 520
            lines.append(f"{prefix.format(r=r)}2024-05-01 10:{step // 10:02d}:00,000 - train - "
                         f"step {step} | step_time {840 if step <= 200 else 1340} ms | fwd_bwd "
                         f"{fwd} ms | allreduce_wait {wait} ms\n")
    (root / "train-77.out").write_text("".join(lines))
    (root / "incident.yaml").write_text("question: step time went up on job 77, why?\n"
                                        "job: '77'\n")


@pytest.mark.parametrize("launcher", sorted(PREFIXES))
def test_a_slowdown_question_with_only_a_log_is_answered_from_its_series(
        tmp_path, launcher: str) -> None:
    """Whichever launcher marked who printed each line, the straggler is the same rank."""
    _straggler_log(tmp_path, PREFIXES[launcher])
    with Ledger(tmp_path / "l.duckdb") as led:
        report = investigate_bundle(tmp_path, led)
    assert report.kind == "slowdown"
    rc = report.root_cause
    assert (rc.category, rc.rank) == ("straggler", 5) and rc.node == "node-01"
    assert rc.confidence <= 0.6 and "trace" in rc.summary
    assert any("no profiler trace" in u for u in report.unknowns)
    assert rc.category in CATEGORIES["slowdown"]
    # who is slow is known, why is not: no drain or requeue of the node is proposed
    assert not report.actions and any(a.topic == "collect_diagnostics" for a in report.advice)
    json.loads(report.model_dump_json(by_alias=True))


def test_a_bundle_with_traces_is_answered_from_them_as_before(tmp_path) -> None:
    """A job log with a rising series beside the traces moves nothing: the traces answer."""
    case = tmp_path / "case"
    shutil.copytree(suite_dir("slowdown") / "s01-input-stall", case)
    expected = json.loads((case / "expected.json").read_text())
    with Ledger(tmp_path / "l.duckdb") as led:
        before = investigate_bundle(case, led)
        (case / "train.log").write_text("".join(
            f" iteration {i:>8}/  500 | elapsed time per iteration (ms): "
            f"{900 if i < 20 else 2100} |\n" for i in range(1, 31)))
        after = investigate_bundle(case, led)
    assert after.kind == "slowdown" and after.root_cause.category == expected["category"]
    keep = ("category", "confidence", "summary", "node", "rank")
    assert after.root_cause.model_dump(include=set(keep)) == \
        before.root_cause.model_dump(include=set(keep))
    assert after.breakdown == before.breakdown
    assert not any("log's own" in u for u in after.unknowns)


def _rising_log(root: Path, extra: str = "") -> None:
    """Every rank's iteration time rises by half; nothing else in the log."""
    lines = [f"[rank{r}]:" + NCCL.format(r=r, n=r // 4, d=r % 4) for r in range(8)]
    lines += [f" iteration {i:>8}/  500 | elapsed time per iteration (ms): "
              f"{900 if i < 40 else 1800} | lm loss: 2.1\n" for i in range(1, 81)]
    lines.insert(60, extra)
    (root / "train-78.out").write_text("".join(lines))
    (root / "incident.yaml").write_text("question: step time went up on job 78, why?\n"
                                        "job: '78'\n")


# a line a careful reader could name a cause from, in words no parser here understands, and
# one that a parser reads as a fault: either leaves the claim "no cause in the bundle" a guess
FAULT_LINES = {
    "unexplained": "storage: shard reader failed to open /data/shard-12, retrying\n",
    "parsed": "node-01:10005:20005 [1] NCCL WARN NET/IB : Got async event : port error\n",
}


def test_a_rise_nothing_names_is_unknown_resting_on_every_line_read(tmp_path) -> None:
    (case := tmp_path / "case").mkdir()
    _rising_log(case)
    with Ledger(tmp_path / "l.duckdb") as led:
        rc = investigate_bundle(case, led).root_cause
    assert (rc.category, rc.confidence) == ("unknown", NOTHING_NAMES_A_CAUSE)
    assert "every line of the bundle was read" in rc.summary
    assert SILENCE < NOTHING_NAMES_A_CAUSE <= SILENCE_CEILING


@pytest.mark.parametrize("kind", sorted(FAULT_LINES))
def test_a_line_that_reads_as_a_fault_never_raises_the_unknown(tmp_path, kind: str) -> None:
    """Metamorphic: one line that may name the cause added to the quiet log; the `unknown`
    falls to a guess's confidence or the line is read as the cause, never above."""
    (case := tmp_path / "case").mkdir()
    _rising_log(case, FAULT_LINES[kind])
    with Ledger(tmp_path / "l.duckdb") as led:
        rc = investigate_bundle(case, led).root_cause
    assert rc.category != "unknown" or rc.confidence == SILENCE, rc
    assert "every line of the bundle was read" not in rc.summary


def _dcgm(case: Path, host: str) -> None:
    """The DCGM series of a shipped throttling case (GPU 3 slows down), moved to `host`."""
    src = suite_dir("slowdown") / "s25-gpu-throttling" / "metrics" / "dcgm.om"
    (case / "metrics").mkdir()
    (case / "metrics" / "dcgm.om").write_text(src.read_text().replace("nid00012", host))


def test_the_logs_straggler_on_a_throttled_gpu_is_throttling(tmp_path) -> None:
    (case := tmp_path / "case").mkdir()
    _straggler_log(case)
    _dcgm(case, "node-01")
    with Ledger(tmp_path / "l.duckdb") as led:
        rc = investigate_bundle(case, led).root_cause
    assert (rc.category, rc.rank, rc.node) == ("gpu_throttling", 5, "node-01")
    assert rc.confidence == WITH_ONE_SIGN and "HwThermalSlowdown" in rc.summary
    assert {e.source for e in rc.evidence} >= {"metrics/dcgm.om", "train-77.out"}


def test_throttled_gpus_beside_a_quiet_log_are_named_weakly(tmp_path) -> None:
    """Metamorphic: DCGM metrics of a throttled GPU beside the quiet log. Its `unknown` must
    not claim that nothing names a cause: throttling is named, at the level of a sign not tied
    to the rise in time."""
    (case := tmp_path / "case").mkdir()
    _rising_log(case)
    _dcgm(case, "node-01")
    with Ledger(tmp_path / "l.duckdb") as led:
        rc = investigate_bundle(case, led).root_cause
    assert (rc.category, rc.confidence) == ("gpu_throttling", NO_SIGN)
    assert "every line of the bundle was read" not in rc.summary


def test_a_metrics_file_the_log_path_does_not_read_keeps_the_unknown_a_guess(tmp_path) -> None:
    """Metamorphic: a metrics file with no clock series beside the quiet log: not read for a
    slowdown without a trace, so the `unknown` must not claim every file was read."""
    (case := tmp_path / "case").mkdir()
    _rising_log(case)
    (case / "metrics").mkdir()
    (case / "metrics" / "util.om").write_text("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization.\n"
                                              "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n" + "".join(
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="node-01"}} 97 {1780062780 + 20 * i}\n'
        for i in range(30)) + "# EOF\n")
    with Ledger(tmp_path / "l.duckdb") as led:
        report = investigate_bundle(case, led)
    rc = report.root_cause
    assert (rc.category, rc.confidence) == ("unknown", SILENCE), rc
    assert "every line of the bundle was read" not in rc.summary
    assert any("metrics/util.om" in u for u in report.unknowns)
