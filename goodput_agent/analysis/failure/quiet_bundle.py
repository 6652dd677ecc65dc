"""How sure an `unknown` is when nothing in the bundle started a failure and nothing failed:
every line read and none reads as a failure (NOTHING_READS_AS_FAILURE), lines that read as a
failure that no parser understood (UNEXPLAINED: the answer is likely in them, and the report
names them), or not known whether every line was read (SILENCE).

NOTHING_READS_AS_FAILURE, measured on the real corpus's decisive entries (2026-12-05) before it
was set: of the 28 answered `unknown` with nothing started and nothing failed, the 12 without
such a line were all right (healthy runs: warnings, progress, a running job, a benchmark table);
the 16 with one held the 7 wrong answers (a shell's Killed, an IB completion error, a quoted
CUDA OOM, an eviction, a PBS memory limit) — 12 of 12, 95 % Wilson lower bound 0.76. Later
the same day, with corrected errors' detail lines read and a second fresh held-out set in (two
such answers there, scored once, both right): 19 of 19. With a third fresh set in (two more,
scored once, both right): 21 of 21, lower bound 0.845, so 0.8 (record_levels.py says how a
level follows its measurement). A fourth fresh set (scored once) held four such answers: three
right, and one wrong, a lone torch_xla "Resource exhausted: ... That was not possible" line
that held no word the scan knew ("exhausted" is one since): 24 of 25, lower bound 0.80. A
fifth (scored once) held two: one right, one wrong, a sacct table in markdown backticks whose
OUT_OF_ME+ no word matched (both read since): 25 of 27, lower bound 0.766, so 0.75. On fresh
sets alone it was right 4 of 6 times: a format nobody here has seen may state its failure in
words the scan does not know yet, and this level is what the record keeps. A sixth (scored
once, at 0.75): five such answers, all right: 30 of 32, lower bound 0.80, rounded down 0.75.
"""

from __future__ import annotations

from typing import NamedTuple

from goodput_agent.analysis.abstention import NOTHING_READS_AS_FAILURE, SILENCE, UNEXPLAINED
from goodput_agent.analysis.read_whole import BUNDLE_FACTS, loud_files, not_read_whole, where
from goodput_agent.core.events import EventKind

from .observations import Observations

NOT_ENOUGH = "Not enough evidence for a verdict"


class Quiet(NamedTuple):
    """The confidence of the `unknown`, its summary, and what the report should say is unknown."""

    confidence: float
    summary: str
    unknowns: list[str]


def quiet_bundle(obs: Observations) -> Quiet:
    bundle = obs.facts.get(BUNDLE_FACTS) or {}
    files = int(bundle.get("bundle_files") or 0)
    others = bundle.get("not_read_for_failure") or []
    asked = bundle.get("other_questions") or []  # kinds.asked_instead_of_failure
    if not_read_whole(obs.facts) or asked:
        why = "no failure evidence in the bundle"
        if others:
            why += f" (no failure tool reads {', '.join(others)})"
        if asked:  # what answers that question may be in lines read only for a failure's words
            why += f" (the question asks about {' or '.join(asked)}, not a failure)"
        return Quiet(SILENCE, f"{NOT_ENOUGH}: {why}", [])
    if unquiet := _ended_or_stuck(obs):
        return Quiet(SILENCE, f"{NOT_ENOUGH}: no failure evidence in the bundle, though "
                              f"{unquiet}", [])
    loud = loud_files(obs.facts)
    if not loud:
        return Quiet(NOTHING_READS_AS_FAILURE, (
            f"Nothing in the bundle reads as a failure: every line of its {files} file"
            f"{'s' if files != 1 else ''} was read, and no line with a failure's words "
            "(killed, error, out of memory, evicted, ...) went unexplained"), [])
    total = sum(int(f["unexplained"]) for f in loud.values())
    lines = where(loud)
    return Quiet(UNEXPLAINED, (
        f"{NOT_ENOUGH}: {total} line{'s' if total != 1 else ''} read as a failure and no "
        f"parser understood {'them' if total != 1 else 'it'} ({lines})"), [
        f"what failed is likely in the lines that read as a failure and were not understood "
        f"({lines}): read them; Goodput does not know their format"])


def _ended_or_stuck(obs: Observations) -> str | None:
    """What says the job did not just run: an end other than success that the scheduler or a
    launcher recorded (a user's cancel, a signal), or stack dumps taken of its processes (a
    person takes them when it looks stuck). Then something is left unexplained."""
    for e in obs.events:
        if e.kind in _END_KINDS:
            state = str(e.detail.get("state") or "?").split()[0].upper()
            if state not in _HEALTHY_STATES:
                return f"{e.summary} ({e.locator})"
    dumps = sorted(p for p, f in obs.facts.items() if f.get("report") == "pyspy")
    return f"stack dumps of its processes were taken ({', '.join(dumps[:3])})" if dumps \
        else None


_END_KINDS = (EventKind.job_state, EventKind.step_state, EventKind.exit_status)
_HEALTHY_STATES = frozenset({"RUNNING", "PENDING", "CONFIGURING", "COMPLETING", "COMPLETED",
                             "SUCCEEDED"})
