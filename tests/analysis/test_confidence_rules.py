"""Confidence is built from corroboration (issue 27, point 6), checked as properties over every
scenario below rather than case by case: an agreeing independent source never lowers a
verdict's confidence, removing an agreeing source never raises it, a verdict the scheduler's
end reason contradicts stays at most 0.45, and an `unknown` says how sure it is that the bundle
holds no answer (never 0)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from goodput_agent.analysis.abstention import NOTHING_TO_EXPLAIN, SILENCE, UNREAD
from goodput_agent.analysis.failure.analyze import diagnose
from goodput_agent.analysis.failure.ceilings import AMBIGUOUS, UNCORROBORATED
from goodput_agent.analysis.failure.corroboration import FIRST_HAND_OWN_WORDS
from goodput_agent.analysis.failure.model import CONTESTED_CONFIDENCE
from goodput_agent.analysis.failure.observations import BUNDLE_FACTS, Activity, Observations
from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role

T0 = datetime(2024, 5, 1, 10, tzinfo=UTC)
KERNEL = "nodes/gpu-1/kern.log"


def ev(kind: EventKind, category: str | None, *, t: float = 0.0, role: Role = Role.primary,
       node: str | None = "gpu-1", rank: int | None = None, path: str = "logs/rank0.log",
       **detail: object) -> Event:
    return Event(kind=kind, role=role, category=category, ts=T0 + timedelta(seconds=t),
                 clock=Clock.absolute, node=node, rank=rank, summary=kind.value, excerpt="x",
                 locator=Locator(path=path, line_start=1, line_end=1), detail=detail)


# the decisive line of each scenario: first-hand, second-hand, and ambiguous words
DECISIVE: dict[str, Event] = {
    "xid": ev(EventKind.xid, "gpu_hardware", path=KERNEL, xid=79),
    "kernel_oom": ev(EventKind.host_oom_kill, "host_oom", path=KERNEL),
    "traceback": ev(EventKind.python_exception, "application_error", rank=0,
                    exc_type="KeyError"),
    "cuda_oom": ev(EventKind.cuda_oom, "gpu_oom", rank=0),
    "bare_kill": ev(EventKind.signal, "host_oom", rank=0, weight=0.5,
                    kernel_record_missing=True),
    "smi_lost": ev(EventKind.gpu_device_unhealthy, "gpu_hardware", weight=0.85,
                   user_space="nvidia-smi", path="notes/smi.txt"),
    "launch_failure": ev(EventKind.cuda_error, "application_error", rank=0, weight=0.4),
}
# an independent record of the same class, in another file, per class
SAME_CLASS_ELSEWHERE: dict[str, Event] = {
    "gpu_hardware": ev(EventKind.xid, "gpu_hardware", t=-1, path="nodes/gpu-1/dmesg.txt",
                       xid=79),
    "host_oom": ev(EventKind.host_oom_kill, "host_oom", t=-1, path="nodes/gpu-1/dmesg.txt"),
    "application_error": ev(EventKind.python_exception, "application_error", t=-1, rank=0,
                            path="logs/rank0.err", exc_type="KeyError"),
    "gpu_oom": ev(EventKind.cuda_oom, "gpu_oom", t=-1, rank=0, path="logs/rank0.err"),
}
END_STATE = {"host_oom": "OUT_OF_MEMORY", "node_failure": "NODE_FAIL",
             "time_limit": "TIMEOUT", "preempted": "PREEMPTED"}


def kernel_log(path: str = KERNEL) -> Activity:
    return Activity(path=path, node="gpu-1", rank=None, first=T0 - timedelta(hours=1),
                    last=T0 + timedelta(minutes=5), format="kernel_log")


def observe(events: list[Event]) -> Observations:
    paths = {e.locator.path for e in events}
    return Observations(events=events, job_nodes=["gpu-1", "gpu-2"],
                        activity=[kernel_log(p) for p in sorted(paths) if p.startswith("nodes/")])


def end_state(state: str, category: str | None = None) -> Event:
    return ev(EventKind.job_state, category, t=120, role=Role.context, node=None,
              path="slurm/sacct.txt", state=state, end=(T0 + timedelta(seconds=120)).isoformat())


def peers_time_out(t: float = 60.0) -> list[Event]:
    return [ev(EventKind.nccl_watchdog_timeout, "network_fault", t=t + r, role=Role.symptom,
               node="gpu-2", rank=r, path=f"logs/rank{r}.log") for r in (8, 9)]


def agreeing(decisive: Event) -> dict[str, Callable[[], list[Event]]]:
    """The independent sources that agree with a decisive line, by name."""
    cat = decisive.category or ""
    out: dict[str, Callable[[], list[Event]]] = {"peers_time_out_after": peers_time_out}
    if cat in SAME_CLASS_ELSEWHERE:
        out["same_class_elsewhere"] = lambda: [SAME_CLASS_ELSEWHERE[cat]]
    if cat in END_STATE:
        out["scheduler_agrees"] = lambda: [end_state(END_STATE[cat], cat)]
    return out


CASES = [(name, extra) for name, d in DECISIVE.items() for extra in agreeing(d)]


@pytest.mark.parametrize(("name", "extra"), CASES)
def test_an_agreeing_independent_source_never_lowers_the_confidence(name: str,
                                                                    extra: str) -> None:
    decisive = DECISIVE[name]
    alone = diagnose(observe([decisive]))
    more = diagnose(observe([decisive, *agreeing(decisive)[extra]()]))
    assert alone.category == decisive.category == more.category
    assert more.confidence >= alone.confidence, (alone.unknowns, more.unknowns)


@pytest.mark.parametrize("name", ["xid", "kernel_oom", "traceback", "cuda_oom"])
def test_each_agreeing_source_raises_a_first_hand_verdict(name: str) -> None:
    """Below the ceiling, corroboration counts: the properties above are not met by a
    confidence that ignores its sources."""
    decisive = DECISIVE[name]
    alone = diagnose(observe([decisive])).confidence
    for extra, sources in agreeing(decisive).items():
        assert diagnose(observe([decisive, *sources()])).confidence > alone, extra


@pytest.mark.parametrize("name", list(DECISIVE))
def test_removing_an_agreeing_source_never_raises_the_confidence(name: str) -> None:
    decisive = DECISIVE[name]
    sources = {k: f() for k, f in agreeing(decisive).items()}
    every = diagnose(observe([decisive, *[e for es in sources.values() for e in es]]))
    for left_out in sources:
        rest = [e for k, es in sources.items() if k != left_out for e in es]
        fewer = diagnose(observe([decisive, *rest]))
        assert fewer.category == every.category
        assert fewer.confidence <= every.confidence, left_out


def test_an_ambiguous_line_stays_below_one_stated_artifact_until_unambiguous_words_agree(
        ) -> None:
    assert AMBIGUOUS < UNCORROBORATED
    launch = DECISIVE["launch_failure"]
    alone = diagnose(observe([launch]))
    assert alone.confidence <= AMBIGUOUS
    assert any("more than one class" in u for u in alone.unknowns)
    # the same ambiguous words printed by another rank are no second opinion
    echo = ev(EventKind.cuda_error, "application_error", t=1, rank=1, path="logs/rank1.log",
              weight=0.4)
    assert diagnose(observe([launch, echo])).confidence <= AMBIGUOUS
    agreed = diagnose(observe([launch, SAME_CLASS_ELSEWHERE["application_error"]]))
    assert agreed.confidence > AMBIGUOUS


@pytest.mark.parametrize("name", list(DECISIVE))
@pytest.mark.parametrize("state", sorted(END_STATE.values()))
def test_a_verdict_the_schedulers_end_reason_contradicts_stays_at_most_0_45(
        name: str, state: str) -> None:
    decisive = DECISIVE[name]
    ended_as = next(c for c, s in END_STATE.items() if s == state)
    v = diagnose(observe([decisive, end_state(state, ended_as)]))
    if v.category != ended_as:
        assert v.confidence <= CONTESTED_CONFIDENCE, (v.category, v.unknowns)


def test_a_hang_the_scheduler_says_ended_otherwise_is_contested() -> None:
    waits = [ev(EventKind.nccl_watchdog_timeout, "network_fault", t=600, role=Role.symptom,
                node=f"gpu-{r // 8 + 1}", rank=r, path=f"logs/rank{r}.log", seq_num=41,
                timeout_ms=600_000) for r in range(8, 16)]
    world = {r: f"gpu-{r // 8 + 1}" for r in range(16)}
    base = dict(rank_hosts=world, job_nodes=["gpu-1", "gpu-2"],
                activity=[Activity(path=f"logs/rank{r}.log", node=world[r], rank=r, first=T0,
                                   last=T0 + timedelta(seconds=600), format="job_log")
                          for r in range(16)])
    hang = diagnose(Observations(events=waits, **base))
    node_fail = diagnose(Observations(events=[*waits, end_state("NODE_FAIL", "node_failure")],
                                      **base))
    timeout = diagnose(Observations(events=[*waits, end_state("TIMEOUT", "time_limit")], **base))
    assert hang.category == node_fail.category == timeout.category == "hang"
    assert node_fail.confidence <= CONTESTED_CONFIDENCE < hang.confidence
    assert any("NODE_FAIL" in u and "contested" in u for u in node_fail.unknowns)
    # a hung job runs into its time limit: TIMEOUT is no rival of the hang
    assert timeout.confidence == hang.confidence


def test_an_unknown_says_how_sure_it_is_that_the_bundle_holds_no_answer() -> None:
    completed = diagnose(Observations(events=[
        ev(EventKind.python_exception, "application_error", rank=0),
        end_state("COMPLETED")], job_id=None))
    # the scheduler's first-hand word: nothing failed, whatever the logs complain about
    assert (completed.category, completed.confidence) == ("unknown", NOTHING_TO_EXPLAIN)
    silent = diagnose(Observations())
    assert (silent.category, silent.confidence) == ("unknown", SILENCE)
    unread = diagnose(Observations(facts={BUNDLE_FACTS: {"bundle_files": 3,
                                                         "bundle_unread": ["a.bin"]}}))
    assert unread.category == "unknown" and 0 < unread.confidence <= UNREAD


@pytest.mark.parametrize("name", list(DECISIVE))
def test_only_a_first_hand_line_in_its_class_own_words_starts_at_0_9(name: str) -> None:
    """A traceback, an Xid, the OOM killer's or the CUDA runtime's own line name the class in
    words no other class prints: alone they say at least FIRST_HAND_OWN_WORDS. A report of
    what another process saw, or words several classes print, stays below it alone."""
    decisive = DECISIVE[name]
    alone = diagnose(observe([decisive])).confidence
    own_words = name in ("xid", "kernel_oom", "traceback", "cuda_oom")
    assert (alone >= FIRST_HAND_OWN_WORDS) == own_words, alone
