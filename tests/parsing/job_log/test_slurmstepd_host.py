"""slurmstepd names its log lines `slurmstepd-<node>:` on Slurm versions that print the node
(format as printed in https://github.com/DataBiosphere/toil/issues/4706 and
https://github.com/nextflow-io/nextflow/issues/5332; node, job and times changed): a file
holding only such lines is a job log, not unread."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER
from goodput_agent.parsing.registry import identify
from goodput_agent.parsing.timefmt import ClockPolicy

TIME_LIMIT = ("slurm-2203417.err", "slurmstepd-cn-113: error: *** JOB 2203417 ON cn-113 "
              "CANCELLED AT 2023-11-18T04:22:51 DUE TO TIME LIMIT ***\n")
# the thread elided part of the node name and step id itself
OOM_KILL = (".command.log", "slurmstepd-gpu-...: error: Detected 1 oom_kill event in "
            "StepId=55xxxx\n")


@pytest.fixture
def write(tmp_path: Path):
    def _write(specimen: tuple[str, str]) -> Path:
        path = tmp_path / specimen[0]
        path.write_text(specimen[1])
        return path
    return _write


@pytest.mark.parametrize("specimen", [TIME_LIMIT, OOM_KILL], ids=["time_limit", "oom_kill"])
def test_a_slurmstepd_line_with_the_node_in_its_name_is_a_job_log(write, specimen) -> None:
    path = write(specimen)
    head = path.read_text()
    parser = identify(head, path.name)
    assert parser is not None and parser.format == PARSER.format


def _events(path: Path):
    ctx = ParseContext(rel_path=path.name, clock=ClockPolicy(tz_name="UTC", year=2023))
    return PARSER.parse(path, ctx).events


def test_the_named_slurmstepd_time_limit_line_is_read_as_the_time_limit(write) -> None:
    [event] = [e for e in _events(write(TIME_LIMIT)) if e.role == Role.primary]
    assert event.kind == EventKind.time_limit and event.category == "time_limit"
    assert event.node == "cn-113"
    assert event.ts is not None and event.ts.isoformat().startswith("2023-11-18T04:22:51")


def test_the_named_slurmstepd_oom_kill_line_is_a_host_oom(write) -> None:
    [event] = [e for e in _events(write(OOM_KILL)) if e.role == Role.primary]
    assert event.category == "host_oom"


def test_a_word_that_only_starts_like_slurmstepd_is_not_taken_for_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("slurmstepdaemon: error: this is not Slurm\n")
    parser = identify(path.read_text(), path.name)
    assert parser is None or parser.format != PARSER.format
