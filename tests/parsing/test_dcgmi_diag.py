"""`dcgmi diag` result tables in the two layouts DCGM prints (fixtures written in the shapes of
public outputs: DCGM 3.3 in IBM/autopilot#68 and NVIDIA/go-dcgm#52, DCGM 4.2 in
NVIDIA/DCGM#253): a failed hardware test is the GPU's own health record, a setup check is not."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.registry import identify
from goodput_agent.parsing.tool_reports import PARSER

TOP = """Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
"""
DCGM3_FIXTURE = TOP + """\
|-----  Deployment  --------+------------------------------------------------|
| Persistence Mode          | Fail                                           |
+-----  Integration  -------+------------------------------------------------+
| PCIe                      | Pass - All                                     |
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPUs: 0, 1, 3                           |
|                           | Fail - GPUs: 2, 5                              |
| Warning                   | GPU 2 had uncorrectable memory errors and row  |
|                           |  remapping failed.                             |
| Info                      | GPU 0 took 12 s                                |
+-----  Stress  ------------+------------------------------------------------+
| Targeted Stress           | Pass - All                                     |
+---------------------------+------------------------------------------------+
"""
DCGM4_FIXTURE = TOP + """\
|-----  Deployment  --------+------------------------------------------------|
| software                  | Fail                                           |
|                           | GPU0: Fail                                     |
+-----  Hardware  ----------+------------------------------------------------+
| memory                    | Fail                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Fail                                     |
+-----  Integration  -------+------------------------------------------------+
| pcie                      | Fail                                           |
+---------------------------+------------------------------------------------+
"""
PASSING_FIXTURE = TOP + """\
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - All                                     |
+---------------------------+------------------------------------------------+
"""


def _read(tmp_path: Path, text: str) -> list:
    path = tmp_path / "dcgmi_diag.txt"
    path.write_text(text)
    assert identify(text, path.name) is PARSER
    res = PARSER.parse(path, ParseContext(rel_path="nodes/gpu-7/dcgmi_diag.txt",
                                          node_hint="gpu-7"))
    assert res.facts["report"] == "dcgmi"
    return res.events


def test_dcgm3_names_each_failed_gpu_with_the_warning_and_skips_setup_checks(
        tmp_path: Path) -> None:
    events = _read(tmp_path, DCGM3_FIXTURE)
    assert [(e.node, e.gpu, e.category) for e in events] == [
        ("gpu-7", "2", "gpu_hardware"), ("gpu-7", "5", "gpu_hardware")]
    assert "uncorrectable memory errors and row remapping failed" in events[0].summary
    assert all(e.ts is None and e.detail["weight"] < 1 for e in events)
    assert events[0].locator.line_start == 11  # the row that names it


def test_dcgm4_per_gpu_rows_replace_the_overall_fail(tmp_path: Path) -> None:
    events = _read(tmp_path, DCGM4_FIXTURE)
    assert [(e.gpu, e.detail["dcgmi_test"]) for e in events] == [("1", "memory"),
                                                                 (None, "pcie")]


def test_a_passing_diagnostic_says_nothing(tmp_path: Path) -> None:
    assert _read(tmp_path, PASSING_FIXTURE) == []
