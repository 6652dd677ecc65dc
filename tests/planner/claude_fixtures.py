"""Shared pieces of the Claude planner tests: scripted model turns (fixtures) and a runner that
points the real anthropic SDK at the scripted Messages API server."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goodput_agent.bundle import open_bundle
from goodput_agent.ledger import InvestigationRecord, Ledger
from goodput_agent.planner.claude_client import MessagesClient
from goodput_agent.planner.claude_config import ClaudeSettings, RetryPolicy
from goodput_agent.planner.model_run import investigate
from goodput_agent.report import Report
from goodput_agent.toolkit import ToolContext
from tests.servers.messages_api import (
    FixtureReply,
    Recorded,
    Script,
    last_tool_results,
    scripted_messages_api,
    tool_use,
)

FIXTURE_KEY = "sk-ant-fixture-key"


def fast_retry() -> RetryPolicy:
    return RetryPolicy(attempts=4, initial_s=0.01, max_s=0.02, jitter_s=0.0)


def settings_for(url: str, **over: Any) -> ClaudeSettings:
    return ClaudeSettings(api_key=FIXTURE_KEY, base_url=url, retry=fast_retry(),
                          model="claude-sonnet-4-5", **over)


def cite(body: dict[str, Any], pattern: str) -> int:
    """The evidence id of the first shown line matching `pattern` in the last tool results."""
    for block in last_tool_results(body):
        for line in str(block["content"]).splitlines():
            m = re.match(r"\[E(\d+)\]", line)
            if m and re.search(pattern, line):
                return int(m.group(1))
    raise AssertionError(f"no shown evidence line matches {pattern!r}")


def claim_id(body: dict[str, Any]) -> int:
    for block in last_tool_results(body):
        m = re.search(r"recorded claim (\d+)", str(block["content"]))
        if m:
            return int(m.group(1))
    raise AssertionError("the last tool results recorded no claim")


def xid_claim(body: dict[str, Any]) -> FixtureReply:
    return FixtureReply([tool_use("record_claim", {
        "statement": "GPU 0000:9b:00 on gpu-node-03 fell off the bus (Xid 79) first",
        "category": "gpu_hardware", "confidence": 0.85, "status": "supported",
        "supporting": [cite(body, r"Xid.*79|79.*Xid")], "node": "gpu-node-03"})])


def finish_on_claim(body: dict[str, Any]) -> FixtureReply:
    return FixtureReply([tool_use("finish_investigation", {
        "kind": "failure", "category": "gpu_hardware", "confidence": 0.85,
        "summary": "Xid 79 on gpu-node-03 started it; the NCCL timeouts are symptoms",
        "verdict_claim_id": claim_id(body), "node": "gpu-node-03",
        "alternatives": [{"category": "network_fault", "confidence": 0.1,
                          "why_not": "NCCL timeouts follow the Xid"}],
        "retry": {"useful": True, "why": "after draining gpu-node-03"}})])


def happy_script() -> Script:
    return [FixtureReply([tool_use("bundle_inventory", {})]),
            FixtureReply([tool_use("kernel_log_events", {})]),
            xid_claim, finish_on_claim]


@dataclass
class Run:
    report: Report
    record: InvestigationRecord
    requests: list[Recorded]
    sleeps: list[float]
    ledger_path: Path

    def rows(self, sql: str) -> list[dict[str, Any]]:
        with Ledger(self.ledger_path, read_only=True) as lg:
            return lg.rows(sql, [self.report.investigation_id])


def run_claude(script: Script, tmp_path: Path, bundle: Path, **over: Any) -> Run:
    path = tmp_path / "ledger.duckdb"
    sleeps: list[float] = []
    with scripted_messages_api(script) as api, open_bundle(bundle) as b, Ledger(path) as lg:
        settings = settings_for(api.url, **over)
        client = MessagesClient(settings, sleep=sleeps.append)
        report = investigate(settings, ToolContext(bundle=b), lg, question="why did it fail?",
                             kind="failure", target=str(bundle), unread=dict, client=client)
        record = lg.investigation(report.investigation_id or "")
        assert record is not None
        requests = list(api.requests)
    return Run(report, record, requests, sleeps, path)
