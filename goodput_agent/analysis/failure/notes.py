"""What a failure verdict says beside its answer: the clock assumptions, the sources missing
from the bundle, what the logs' own rhythm adds when nothing failed, a mostly unread bundle said
first; and how a verdict names a place and a time. (The cascade's picture is timeline.py, the
confidence ceilings of thin evidence ceilings.py.)"""

from __future__ import annotations

from datetime import datetime

from goodput_agent.analysis.abstention import unknown_confidence
from goodput_agent.core.events import Clock, Event

from .ceilings import UNCORROBORATED
from .model import Alternative, FailureVerdict
from .observations import BUNDLE_FACTS, Observations, unread_share
from .progress_series import HANG_CONFIDENCE, series_note, silent_end, stalled_before


def where(node: str | None, rank: int | None) -> str:
    parts = [f"node {node}" if node else None, f"rank {rank}" if rank is not None else None]
    return " / ".join(p for p in parts if p) or "an unidentified node"


def fmt_time(ts: datetime | None) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S UTC") if ts else "an unplaced time"


def note_missing_sources(v: FailureVerdict, obs: Observations) -> None:
    if v.node is None and v.rank is not None:
        v.unknowns.append(f"no file names the host of rank {v.rank} (no NCCL line, torchelastic "
                          "summary or nodes/<node>/ folder): its node is not known")
    if v.node and obs.kernel_log_nodes is not None and v.node not in obs.kernel_log_nodes:
        v.unknowns.append(f"no kernel log for node {v.node}: GPU Xids and OOM kills there "
                          "cannot be checked")
    if not obs.scheduler_kind:
        v.unknowns.append("no scheduler output (sacct/scontrol or kubectl): job and node "
                          "states are not known")
    if not obs.job_log_nodes and not any(e.rank is not None for e in obs.events):
        v.unknowns.append("no rank logs: which rank failed first cannot be seen")


def after_the_verdict(v: FailureVerdict, events: list[Event],
                      obs: Observations) -> FailureVerdict:
    """What the logs' own rhythm adds when nothing failed: a hang told by a long silent end,
    a slowdown or straggler in the iteration times; then a mostly-unread bundle said first."""
    stalled = stalled_before(v.primary.ts, obs) \
        if v.category == "time_limit" and v.primary and v.primary.ts else None
    if stalled:
        # the limit ended a job that had stopped making progress long before: the job did
        # not need more time, it hung, and the limit only ended the hang
        v = ended_a_hang(v, stalled)
    if v.category == "unknown" and not any(e.detail.get("never_started") for e in v.evidence):
        if why := silent_end(events, obs):
            v = v.model_copy(update={"category": "hang", "confidence": HANG_CONFIDENCE,
                                     "summary": f"No rank failed on its own: {why}"})
            v.unknowns.append("the hang is told by the log's silence alone: which rank or "
                              "call was stuck is not in the bundle")
        elif note := series_note(obs):
            v.summary += f"; {note}"
            v.unknowns.append(note)
        if v.category == "unknown":  # a file left unread may hold the answer
            v.confidence = unknown_confidence(v.confidence, unread_share(obs)[0])
    mostly_unread(v, obs)
    return v


def ended_a_hang(v: FailureVerdict, stalled: str) -> FailureVerdict:
    """The time limit's verdict turned into the hang it ended; the limit stays an alternative."""
    limit = Alternative(category=v.category, confidence=0.1, evidence=v.evidence[:1],
                        why_not=f"{v.summary}: the job had stopped making progress long "
                                f"before ({stalled}); more time would not have finished it")
    hang = v.model_copy(update={
        "category": "hang", "confidence": min(v.confidence, HANG_CONFIDENCE),
        "summary": f"No rank failed on its own: {stalled}; then: {v.summary}",
        "alternatives": [limit, *v.alternatives]})
    hang.unknowns.append("the hang is told by the log's silence alone: which rank or call was "
                         "stuck is not in the bundle (a py-spy dump would show where)")
    return hang


def mostly_unread(v: FailureVerdict, obs: Observations) -> None:
    """A bundle whose files were mostly unread is said so first: whatever the verdict, it rests
    on the part that could be read, and an `unknown` from it is no judgement of the rest."""
    unread, total = unread_share(obs)
    if not total or unread * 2 <= total:
        return
    note = (f"Most of the bundle could not be read ({unread} of {total} files, e.g. "
            f"{(obs.facts[BUNDLE_FACTS]['bundle_unread'] or ['?'])[0]}): ")
    v.summary = note + v.summary[:1].lower() + v.summary[1:]
    v.unknowns.insert(0, note.rstrip(": ") + "; the verdict weighs only the rest")
    if v.category != "unknown":
        v.confidence = min(v.confidence, UNCORROBORATED)


def clock_notes(obs: Observations, events: list[Event]) -> list[str]:
    counts: dict[str, int] = {}
    for e in events:
        counts[e.clock.value] = counts.get(e.clock.value, 0) + 1
    notes = [f"times without a zone are taken as {obs.clock.tz_name}"
             + (" (incident.yaml timezone)" if obs.incident.timezone else " (no timezone given)"),
             f"times without a year are taken as {obs.clock.year}",
             f"events within {obs.clock.skew_tolerance_s:g} s are treated as simultaneous "
             "(clock skew between nodes)"]
    if counts.get(Clock.carried.value):
        notes.append(f"{counts[Clock.carried.value]} lines without a time took the previous "
                     "timestamped line's time")
    if counts.get(Clock.none.value):
        notes.append(f"{counts[Clock.none.value]} events have no usable time (e.g. dmesg "
                     "uptime without a boot anchor); they are ordered last")
    return notes
