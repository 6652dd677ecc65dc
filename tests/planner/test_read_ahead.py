"""The failure playbook's files are parsed ahead in one fan-out (Bundle.read_ahead): every file
read ahead is asked for by one of its tools, and the report is the one without read-ahead."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from goodput_agent.bundle import open_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.planner.loop import run_investigation
from goodput_agent.planner.offline import PLAYBOOK_FORMATS, OfflinePlanner
from goodput_agent.report import Report
from goodput_agent.toolkit import ToolContext


def _investigate(bundle_dir: Path, ledger_path: Path, ahead: bool) -> tuple[Report, int, int]:
    with open_bundle(bundle_dir) as b, Ledger(ledger_path) as lg:
        if ahead:
            b.read_ahead(PLAYBOOK_FORMATS["failure"])
        read_ahead = len(b._ahead)
        report = run_investigation(
            OfflinePlanner("failure"), ToolContext(bundle=b), lg, question="q", kind="failure",
            target="t", unread=lambda: {u.path: u.reason for u in b.inventory.unread})
        return report, read_ahead, len(b._ahead)


def _comparable(report: Report) -> dict:
    return report.model_dump(mode="json", exclude={"investigation_id"})


def test_every_file_read_ahead_is_asked_for(tmp_path: Path, demo_bundle: Path) -> None:
    _, read_ahead, left = _investigate(demo_bundle, tmp_path / "l.duckdb", ahead=True)
    assert read_ahead > 1
    assert left == 0


def test_the_report_is_the_same_with_or_without_read_ahead(tmp_path: Path,
                                                          demo_bundle: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(demo_bundle, bundle)
    # a kernel log whose gzip stream is cut short: its head reads, the whole does not, so it
    # joins `unread` when the kernel-log tool asks for it
    text = (bundle / "nodes" / "gpu-node-01" / "kern.log").read_bytes()
    packed = gzip.compress(text * (400_000 // len(text) + 1))
    (bundle / "nodes" / "gpu-node-02" / "kern.log.gz").write_bytes(packed[: len(packed) // 2])
    without, _, _ = _investigate(bundle, tmp_path / "a.duckdb", ahead=False)
    with_ahead, _, _ = _investigate(bundle, tmp_path / "b.duckdb", ahead=True)
    assert "nodes/gpu-node-02/kern.log.gz" in without.unread
    assert _comparable(with_ahead) == _comparable(without)
