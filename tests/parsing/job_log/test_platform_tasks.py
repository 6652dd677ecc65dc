"""A training platform's exit diagnostics with its task list (OpenPAI-style job status): the
platform's memory verdict names no node; the one FAILED task's row does."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.core.events import Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER

DIAGNOSTICS = """Job: vit-giant-227    User: mlops    State: FAILED    Retries: 0
Created: 2026-09-27 17:09:26  Completed: 2026-09-27 17:35:13

Exit Code: -1200
Exit Type: USER_FAILURE
Exit Reason: User Container killed by docker due to it exceeded the request memory
Pod failed: PodPattern matched: containers: - name: app reason: OOMKilled message: "Killed" code: 137

Task role  Index State     Node    IP
  worker    0     {first}    gpu-node-57    10.244.15.223
  worker    1     {second}   gpu-node-60    10.244.33.96
  ps        0     STOPPED   cpu-node-02    10.244.40.2
"""  # noqa: E501


def _verdicts(tmp_path: Path, first: str, second: str):
    text = DIAGNOSTICS.format(first=first, second=second)
    (tmp_path / "job_status.txt").write_text(text)
    assert PARSER.sniff(text, "job_status.txt")
    res = PARSER.parse(tmp_path / "job_status.txt", ParseContext(rel_path="job_status.txt"))
    return res, [e for e in res.events if e.role == Role.primary]


def test_the_platforms_memory_verdict_is_the_one_failed_tasks_on_its_node(tmp_path) -> None:
    res, verdicts = _verdicts(tmp_path, "STOPPED", "FAILED ")
    assert verdicts and {e.category for e in verdicts} == {"host_oom"}
    assert {e.node for e in verdicts} == {"gpu-node-60"}
    assert [t["node"] for t in res.facts["platform_tasks"]] == ["gpu-node-57", "gpu-node-60",
                                                                "cpu-node-02"]


@pytest.mark.parametrize(("first", "second"), [("FAILED ", "FAILED "), ("STOPPED", "STOPPED")])
def test_no_single_failed_task_locates_nothing(tmp_path, first: str, second: str) -> None:
    _, verdicts = _verdicts(tmp_path, first, second)
    assert verdicts and {e.node for e in verdicts} == {None}
