"""Issue 26's acceptance on the generated suites: across the independent generator's held-out
cases (every kind, every class) no proposal fails its tool's argument check and no remedy's
stated premise is contradicted by the report's numbers; what no tool runs is advice, which
has no action id (so no page, and no Approve button, exists for it)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from goodput_agent.analysis.advice import Advice
from goodput_agent.evals.scorer import ANSWER_KEYS, score_suite, suite_dir
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.planner import proposals
from goodput_agent.planner.base import ProposalDraft
from goodput_agent.toolkit import MutatingTool, registry

SHIPPED = Path(__file__).parents[2] / "evals"


def test_the_independent_suite_proposes_what_its_tools_accept_and_claims_what_it_keeps(
        monkeypatch) -> None:  # noqa: ANN001
    """Each draft an analysis makes, before the check at proposal time could turn it into
    advice, names a mutating tool Goodput has and says it mutates (issue 28); and on that
    held-out suite the confidence claims no more than the verdicts keep (issue 27)."""
    drafts: list[ProposalDraft] = []

    def recorded(p: ProposalDraft, refs: proposals.JobRefs) -> ProposalDraft | Advice:
        drafts.append(p)
        return checked(p, refs)

    checked = proposals.checked
    monkeypatch.setattr(proposals, "checked", recorded)
    scores = score_suite(suite_dir("independent"))
    assert len(scores.cases) >= 100
    # issue 27: the held-out latency verdicts claim what they keep; no case above its answer
    # key's ceiling; the whole suite no worse calibrated than measured when this was written
    # (0.061 at this seed; 0.061-0.063 at eleven others: caps of issue 24 hold the rest)
    assert scores.brier_by_kind["latency"] <= 0.05 and scores.over_ceiling == 0
    assert scores.brier <= 0.065, scores.brier_by_kind
    assert scores.remedy_problems == 0, [(c.case_id, c.remedy_problems) for c in scores.cases
                                         if c.remedy_problems]
    mutating = {n for n, t in registry().items() if isinstance(t, MutatingTool)}
    assert len(drafts) >= 20 and {d.tool for d in drafts} <= mutating, {d.tool for d in drafts}
    assert all(d.mutating for d in drafts)


def test_every_recorded_action_is_a_mutating_tool_and_advice_is_never_one() -> None:
    """The issue's cases: a job named, not numbered (s03); a GPU to service (c01); a
    max_num_seqs 128 -> 20 regression without a workload manifest (l03)."""
    cases = [SHIPPED / "slowdown_cases/s03-straggler", SHIPPED / "cases/c01-gpu-hardware-xid79",
             SHIPPED / "latency_cases/l03-queueing-max-num-seqs-lowered"]
    with tempfile.TemporaryDirectory() as tmp, Ledger(Path(tmp) / "l.duckdb") as lg:
        reports = [investigate_bundle(c, lg, ignore=ANSWER_KEYS) for c in cases]
        rows = lg.rows("SELECT tool, args_json FROM actions")
    mutating = {n for n, t in registry().items() if isinstance(t, MutatingTool)}
    assert rows and {r["tool"] for r in rows} <= mutating
    for r in rows:
        registry()[r["tool"]].input_model.model_validate(json.loads(r["args_json"]))
    straggler, xid, latency = reports
    # the job is named pretrain-8003 and no record gives its id: the drain stands, the
    # requeue is advice saying how to find the id
    assert [a.tool for a in straggler.actions] == ["slurm_drain_node"]
    requeue = next(a for a in straggler.advice if a.topic == "slurm_requeue_job")
    assert "squeue --name=pretrain-8003" in (requeue.missing or "")
    assert "gpu_service" in [a.topic for a in xid.advice]
    assert "gpu_service" not in [a.tool for a in xid.actions]
    # the exact revert, from the engine's arguments, and nothing that contradicts the data
    # (the request rate fell 4.99 -> 3.6/s: no "more replicas")
    assert latency.actions == []
    (revert,) = latency.advice
    assert revert.text.startswith("set --max-num-seqs back to 128 (it went 128 -> 20")
    assert revert.details["from"] == "20" and revert.details["to"] == "128"
    assert not any("replica" in a.text for a in latency.advice)
