"""An `unknown` with nothing started and nothing failed says how sure it is from what was read:
every line read and none reads as a failure (NOTHING_READS_AS_FAILURE), lines that read as a
failure that no parser understood (UNEXPLAINED, and the report names them), or not known
(SILENCE). Checked over Observations, then end to end on bundles written here, as properties:
adding a failure-looking line no parser knows never raises the confidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.analysis.abstention import (
    NOTHING_READS_AS_FAILURE,
    READ_NEGATIVE,
    SILENCE,
    UNEXPLAINED,
)
from goodput_agent.analysis.failure.analyze import diagnose
from goodput_agent.analysis.failure.observations import BUNDLE_FACTS, Observations
from goodput_agent.core.events import Event, EventKind, Locator, Role
from goodput_agent.core.incident import IncidentSpec
from goodput_agent.investigate import investigate_bundle
from goodput_agent.kinds import asked_instead_of_failure
from goodput_agent.ledger import Ledger
from goodput_agent.parsing.failure_words import FACT


def observed(scans: dict[str, int], *, files: int | None = None, free_text: int | None = None,
             unread: tuple[str, ...] = (), others: tuple[str, ...] = (),
             question: str | None = None) -> Observations:
    facts: dict[str, dict] = {p: {FACT: {"unexplained": n, "lines": [7] * min(n, 1)}}
                              for p, n in scans.items()}
    facts[BUNDLE_FACTS] = {
        "bundle_files": len(scans) if files is None else files, "bundle_unread": list(unread),
        "free_text_files": len(scans) if free_text is None else free_text,
        "not_read_for_failure": list(others),
        "other_questions": asked_instead_of_failure(IncidentSpec(question=question))}
    return Observations(facts=facts, incident=IncidentSpec(question=question))


def test_every_line_read_and_none_a_failure_is_a_read_negative_unknown() -> None:
    # a third file of a structured format (read field by field) is read whole by its parser
    v = diagnose(observed({"a.log": 0, "b.log": 0}, files=3))
    assert (v.category, v.confidence) == ("unknown", NOTHING_READS_AS_FAILURE)
    assert NOTHING_READS_AS_FAILURE > READ_NEGATIVE  # it rests on every line, measured
    assert "every line of its 3 files was read" in v.summary


def test_lines_that_read_as_a_failure_unexplained_are_named_and_hold_the_doubt() -> None:
    v = diagnose(observed({"a.log": 0, "b.log": 3}))
    assert (v.category, v.confidence) == ("unknown", UNEXPLAINED)
    assert "3 lines read as a failure" in v.summary and "b.log: line 7" in v.summary
    assert any("b.log: line 7" in u and "read them" in u for u in v.unknowns)


@pytest.mark.parametrize("obs", [
    observed({"a.log": 0}, files=2, free_text=2),  # a free-text file whose scan is missing
    observed({"a.log": 0}, files=2, unread=("x.bin",)),
    observed({"a.log": 0}, files=2, others=("profile/trace.json",)),
    observed({"a.log": 0}, question="training got slower since Tuesday, why?"),
    Observations(),  # nothing told about the bundle at all
], ids=["not-scanned", "unread", "not-read-for-failure", "another-question", "nothing"])
def test_when_every_line_was_not_read_for_this_question_it_stays_at_most_silence(
        obs: Observations) -> None:
    v = diagnose(obs)
    assert v.category == "unknown" and 0 < v.confidence <= SILENCE


def _state(state: str) -> Event:
    return Event(kind=EventKind.job_state, role=Role.context, summary=f"job 7 {state}",
                 excerpt=state, locator=Locator(path="sacct.txt", line_start=2, line_end=2),
                 detail={"state": state})


@pytest.mark.parametrize(("state", "quiet"), [
    ("RUNNING", True), ("PENDING", True), ("CANCELLED by 1201", False), ("TIMEOUT", False)])
def test_an_end_other_than_success_is_left_unexplained_not_called_quiet(
        state: str, quiet: bool) -> None:
    obs = observed({"a.log": 0})
    obs.events.append(_state(state))
    v = diagnose(obs)
    assert v.category == "unknown" and (v.confidence == NOTHING_READS_AS_FAILURE) == quiet, v


def test_stack_dumps_taken_of_its_processes_are_not_a_quiet_run() -> None:
    obs = observed({"a.log": 0, "dumps/n1_41.txt": 0})
    obs.facts["dumps/n1_41.txt"]["report"] = "pyspy"
    assert diagnose(obs).confidence <= SILENCE


# a healthy run's output: warnings, informational lines, progress, a corrected error
HEALTHY = """\
/opt/venv/lib/python3.11/site-packages/torch/amp.py:12: FutureWarning: `custom_fwd` is deprecated
  warnings.warn(
gpu-1:2340:2384 [4] NCCL INFO Failed to open libibverbs.so[.1]
gpu-1:2340:2384 [4] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
step 10 loss 2.41
step 20 loss 2.27
EDAC MC0: 1 CE error on CPU#0Channel#2_DIMM#0 (channel:2 slot:0 page:0x0 offset:0x0)
step 30 loss 2.13
"""
# failures printed in forms no parser here reads (what an unknown format looks like)
UNREAD_FAILURES = [
    "/bin/bash: line 27:   318 Killed                  sh start.sh",
    "uploader: write of shard 12 failed: bucket quota reached",
    "Evicted",
    "warden: task 7 terminated after a quota breach",
]


def _confidence(tmp_path: Path, name: str, text: str) -> tuple[str, float, str]:
    b = tmp_path / name
    b.mkdir()
    (b / "train.log").write_text(text)
    with Ledger(tmp_path / f"{name}.duckdb") as lg:
        rc = investigate_bundle(b, lg).root_cause
    return rc.category, rc.confidence, rc.summary


@pytest.mark.parametrize("failure", UNREAD_FAILURES)
def test_a_failure_line_no_parser_knows_never_raises_the_confidence(
        tmp_path: Path, failure: str) -> None:
    healthy = _confidence(tmp_path, "healthy", HEALTHY)
    assert healthy[:2] == ("unknown", NOTHING_READS_AS_FAILURE), healthy
    lines = HEALTHY.splitlines()
    for at in (0, 4, len(lines)):  # wherever it sits
        text = "\n".join([*lines[:at], failure, *lines[at:]]) + "\n"
        got = _confidence(tmp_path, f"at{at}", text)
        assert got[0] == "unknown" or got[1] <= healthy[1]  # unread, or read: never a guess
        if got[0] == "unknown":
            assert got[1] == UNEXPLAINED and f"train.log: line {at + 1}" in got[2], got
