"""A slowdown question over a bundle with job logs and no profiler trace is answered as a
slowdown from the log's own series; a bundle with traces is answered from them, unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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
