"""slurmstepd names its log lines `slurmstepd-<node>:` on Slurm versions that print the node
(real lines from DataBiosphere/toil#4706 and nextflow-io/nextflow#5332, kept verbatim under
evals/realworld/incidents/): a file holding only such lines is a job log, not unread."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.events import EventKind, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER
from goodput_agent.parsing.registry import identify
from goodput_agent.parsing.timefmt import ClockPolicy

INCIDENTS = Path(__file__).resolve().parents[2] / "evals" / "realworld" / "incidents"
TIME_LIMIT = (INCIDENTS / "toil4706_vg_index_job_time_limit_phoenix07"
              / "logs/batchLogs/slurm-1449736.err")
OOM_KILL = INCIDENTS / "nextflow5332_awk_count_reads_oom_kill_ignored/work/.command.log"


@pytest.mark.parametrize("path", [TIME_LIMIT, OOM_KILL], ids=["time_limit", "oom_kill"])
def test_a_slurmstepd_line_with_the_node_in_its_name_is_a_job_log(path: Path) -> None:
    head = path.read_text()
    parser = identify(head, path.name)
    assert parser is not None and parser.format == PARSER.format


def _events(path: Path):
    ctx = ParseContext(rel_path=path.name, clock=ClockPolicy(tz_name="UTC", year=2023))
    return PARSER.parse(path, ctx).events


def test_the_named_slurmstepd_time_limit_line_is_read_as_the_time_limit() -> None:
    [event] = [e for e in _events(TIME_LIMIT) if e.role == Role.primary]
    assert event.kind == EventKind.time_limit and event.category == "time_limit"
    assert event.node == "phoenix-07"
    assert event.ts is not None and event.ts.isoformat().startswith("2023-12-03T12:47:09")


def test_the_named_slurmstepd_oom_kill_line_is_a_host_oom() -> None:
    [event] = [e for e in _events(OOM_KILL) if e.role == Role.primary]
    assert event.category == "host_oom"


def test_a_word_that_only_starts_like_slurmstepd_is_not_taken_for_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("slurmstepdaemon: error: this is not Slurm\n")
    parser = identify(path.read_text(), path.name)
    assert parser is None or parser.format != PARSER.format
