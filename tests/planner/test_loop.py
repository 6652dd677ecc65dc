"""The loop: every step recorded, mutating tools refused, errors kept, conclusion recorded."""

import json
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from goodput_agent.bundle import open_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.planner.base import ClaimDraft, Conclusion, StepResult, ToolCall
from goodput_agent.planner.loop import run_investigation
from goodput_agent.planner.offline import PLAYBOOKS, OfflinePlanner
from goodput_agent.report import Retry
from goodput_agent.toolkit import Tool, ToolContext, registry


class _Args(BaseModel):
    node: str


class _Drain(Tool[_Args, _Args]):
    name: ClassVar[str] = "fixture_drain_node"
    input_model = _Args
    output_model = _Args
    read_only = False
    ran: ClassVar[bool] = False

    def run(self, ctx: ToolContext, args: _Args) -> _Args:
        _Drain.ran = True
        return args


class _Scripted:
    name = "scripted"

    def __init__(self, calls: list[ToolCall]):
        self.calls = calls

    def next_step(self, history: list[StepResult]) -> ToolCall | None:
        return self.calls[len(history)] if len(history) < len(self.calls) else None

    def conclude(self, history: list[StepResult]) -> Conclusion:
        return Conclusion(kind="failure", retry=Retry(useful=None, why="n/a"),
                          claims=[ClaimDraft(statement="nothing", category="unknown",
                                             confidence=0.0, status="hypothesis")])


def test_mutating_and_unknown_tools_are_refused_and_recorded(tmp_path: Path, monkeypatch,
                                                            demo_bundle: Path) -> None:
    monkeypatch.setitem(registry(), "fixture_drain_node", _Drain())
    planner = _Scripted([ToolCall(tool="fixture_drain_node", args={"node": "gpu-1"}),
                         ToolCall(tool="no_such_tool"),
                         ToolCall(tool="kernel_log_events", args={"node": 5}),
                         ToolCall(tool="bundle_inventory")])
    with open_bundle(demo_bundle) as b, Ledger(tmp_path / "l.duckdb") as lg:
        report = run_investigation(planner, ToolContext(bundle=b), lg, question="q",
                                   kind="failure", target="t", unread=dict)
        rec = lg.investigation(report.investigation_id or "")
    assert not _Drain.ran
    assert rec is not None
    errors = [t["error"] for t in rec.tool_calls]
    assert "approval gate" in errors[0]
    assert "unknown tool" in errors[1]
    assert "invalid arguments" in errors[2]
    assert errors[3] is None and rec.tool_calls[3]["output_digest"].startswith("sha256:")
    assert rec.conclusion is not None and rec.conclusion["exit_code"] == 3


def test_offline_planner_walks_its_playbook_in_order(tmp_path: Path, demo_bundle: Path) -> None:
    with open_bundle(demo_bundle) as b, Ledger(tmp_path / "l.duckdb") as lg:
        report = run_investigation(OfflinePlanner("failure"), ToolContext(bundle=b), lg,
                                   question="q", kind="failure", target="t", unread=dict)
        rec = lg.investigation(report.investigation_id or "")
    assert rec is not None
    assert tuple(t["tool"] for t in rec.tool_calls) == PLAYBOOKS["failure"]
    assert all(t["read_only"] and t["duration_ms"] >= 0 for t in rec.tool_calls)
    # the verdict claim and one refuted claim per alternative
    assert rec.claims[0]["status"] == "supported"
    assert len(rec.claims) == 1 + len(report.alternatives)
    assert {c["status"] for c in rec.claims[1:]} <= {"refuted"}
    assert [a["status"] for a in rec.actions] == ["proposed"] * len(report.actions)
    # evidence rows name the tool call that produced them
    call_ids = {t["id"] for t in rec.tool_calls}
    assert all(e["tool_call_id"] in call_ids for e in rec.evidence)


def test_evidence_excerpts_are_redacted(tmp_path: Path, demo_bundle: Path) -> None:
    import shutil

    b = tmp_path / "b"
    shutil.copytree(demo_bundle, b)
    log = next(b.glob("nodes/gpu-node-03/train.log"))
    text = log.read_text().replace("CUDA error: unspecified launch failure",
                                   "CUDA error: unspecified launch failure HF_TOKEN=hf_"
                                   "abcdefghijklmnopqrstuvwxyz1234", 1)
    log.write_text(text)
    with open_bundle(b) as bundle, Ledger(tmp_path / "l.duckdb") as lg:
        report = run_investigation(OfflinePlanner("failure"), ToolContext(bundle=bundle), lg,
                                   question="q", kind="failure", target="t", unread=dict)
        rec = lg.investigation(report.investigation_id or "")
    assert rec is not None
    blob = report.to_json() + str(rec.evidence)
    assert "hf_abcdefghijklmnopqrstuvwxyz1234" not in blob


class _Broken(Tool[_Args, _Args]):
    name: ClassVar[str] = "fixture_broken"
    input_model = _Args
    output_model = _Args

    def run(self, ctx: ToolContext, args: _Args) -> _Args:
        raise RuntimeError("disk on fire")


def test_a_failing_tool_is_a_recorded_step_not_a_crash(tmp_path: Path, monkeypatch,
                                                       demo_bundle: Path) -> None:
    monkeypatch.setitem(registry(), "fixture_broken", _Broken())
    planner = _Scripted([ToolCall(tool="fixture_broken", args={"node": "x"}),
                         ToolCall(tool="bundle_inventory")])
    with open_bundle(demo_bundle) as b, Ledger(tmp_path / "l.duckdb") as lg:
        report = run_investigation(planner, ToolContext(bundle=b), lg, question="q",
                                   kind="failure", target="t", unread=dict)
        rec = lg.investigation(report.investigation_id or "")
    assert rec is not None
    assert "disk on fire" in rec.tool_calls[0]["error"]
    assert rec.tool_calls[1]["error"] is None


def test_pictures_are_drawn_before_the_conclusion_is_stored(tmp_path: Path,
                                                            demo_bundle: Path) -> None:
    """The picture hook sees the finished report and its files are in the stored report; a
    hook that fails leaves the conclusion recorded, saying so."""
    seen: list[str | None] = []

    def draw(report) -> list[str]:  # noqa: ANN001 - a Report
        seen.append(report.investigation_id)
        out = tmp_path / f"{report.investigation_id}.svg"
        out.write_text("<svg/>")
        return [str(out)]

    def broken(report) -> list[str]:  # noqa: ANN001 - a Report
        raise OSError("disk full")

    with open_bundle(demo_bundle) as b, Ledger(tmp_path / "l.duckdb") as lg:
        drawn = run_investigation(_Scripted([]), ToolContext(bundle=b), lg, question="q",
                                  kind="failure", target="t", unread=dict, pictures=draw)
        failed = run_investigation(_Scripted([]), ToolContext(bundle=b), lg, question="q",
                                   kind="failure", target="t", unread=dict, pictures=broken)
        stored = lg.investigation(drawn.investigation_id or "").conclusion["report_json"]
        stored_failed = lg.investigation(failed.investigation_id or "").conclusion
    assert seen == [drawn.investigation_id]
    assert json.loads(stored)["pictures"] == drawn.pictures == [
        str(tmp_path / f"{drawn.investigation_id}.svg")]
    assert stored_failed is not None and stored_failed["exit_code"] == 3
    assert json.loads(stored_failed["report_json"])["unknowns"][-1] == \
        "pictures not drawn: OSError: disk full"
