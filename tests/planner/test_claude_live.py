"""The Claude planner against the real Messages API, on the demo incident. Skipped unless a key
is configured AND GOODPUT_LIVE_CLAUDE=1 (it costs money): the scripted-server tests cover the
mechanics; this checks that a real model reaches the demo's verdict through the same loop."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not (os.environ.get("ANTHROPIC_API_KEY") and os.environ.get("GOODPUT_LIVE_CLAUDE") == "1"),
    reason="needs ANTHROPIC_API_KEY and GOODPUT_LIVE_CLAUDE=1")


def test_real_model_finds_the_demo_xid(tmp_path: Path, demo_bundle: Path) -> None:
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger
    from goodput_agent.planner.claude_config import load_settings

    settings = load_settings({"budgets": {"max_tool_calls": 20}})
    with Ledger(tmp_path / "l.duckdb") as lg:
        report = investigate_bundle(demo_bundle, lg, claude=settings)
        calls = lg.rows("SELECT * FROM llm_calls WHERE investigation_id = ?",
                        [report.investigation_id])
    assert report.root_cause.category == "gpu_hardware"
    assert report.root_cause.node == "gpu-node-03"
    assert report.root_cause.evidence
    assert calls and all(c["request_id"] for c in calls)
