"""failure_verdict: the failure analysis as a read-only tool gives exactly the offline planner's
verdict (category, node, rank, GPU, confidence) on shipped cases, shows its evidence with
evidence ids to a model, and carries the typed scheduler facts it used."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.bundle import open_bundle
from goodput_agent.evals.scorer import ANSWER_KEYS, suite_dir
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.planner.base import StepResult, ToolCall
from goodput_agent.planner.model_evidence import present
from goodput_agent.planner.scheduler_facts import JobFact
from goodput_agent.toolkit import ToolContext, registry

CASES = ["c01-gpu-hardware-xid79", "c03-host-oom-slurm-memcg"]


def _verdict(bundle: Path):  # noqa: ANN202
    tool = registry()["failure_verdict"]
    assert tool.read_only
    with open_bundle(bundle, ANSWER_KEYS) as b:
        return tool.run(ToolContext(bundle=b), tool.input_model())


@pytest.mark.parametrize("case", CASES)
def test_the_tool_gives_the_offline_planners_verdict(case: str, tmp_path: Path) -> None:
    bundle = suite_dir("failure") / case
    out = _verdict(bundle)
    with Ledger(tmp_path / "l.duckdb") as lg:
        offline = investigate_bundle(bundle, lg, ignore=ANSWER_KEYS,
                                     pictures_dir=tmp_path / "p").root_cause
    assert (out.category, out.node, out.rank, out.gpu, out.confidence) == (
        offline.category, offline.node, offline.rank, offline.gpu, offline.confidence)
    assert out.events and out.analysis is not None


def test_the_model_sees_the_verdict_with_evidence_ids_and_typed_facts(demo_bundle: Path,
                                                                      tmp_path: Path) -> None:
    out = _verdict(demo_bundle)
    assert all(isinstance(j, JobFact) for j in out.scheduler.jobs)
    assert out.scheduler.job_nodes("48213")[:1] == ["gpu-node-01"]
    assert "analysis" not in out.model_dump()  # the planner's own copy is never stored or sent
    with Ledger(tmp_path / "l.duckdb") as lg:
        inv = lg.start_investigation("q", "failure", "t", "test", "0")
        row = lg.record_tool_call(inv, 1, "failure_verdict", True, {}, None, None, 0.0, None,
                                  __import__("datetime").datetime.now())
        text, shown = present(StepResult(call=ToolCall(tool="failure_verdict"), output=out,
                                         tool_call_id=row, duration_ms=1.0), lg, inv, 3000)
    assert text.splitlines()[1].startswith("verdict: gpu_hardware node=gpu-node-03 rank=29")
    assert any(x.startswith("rejected: network_fault") for x in text.splitlines())
    assert len(shown) > 1 and f"[E{shown[1]}]" in text  # its evidence lines are citable
