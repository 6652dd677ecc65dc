"""The latency question from the engine's own log: each rule decides on its numbers; a verdict
without measured latency never claims more than the owner's record (record_levels.py), and one
that rests on an inference, or leaves a rival open, claims less."""

from datetime import UTC, datetime

from goodput_agent.analysis.latency.engine_log import MAX_CONFIDENCE, analyse_engine_log
from goodput_agent.analysis.record_levels import ONE_ARTIFACT, OWNERS_RECORD
from goodput_agent.core.events import Event, EventKind, Locator, Role


def _stats(i: int, running: int, waiting: int, kv: float, prompt: float = 500.0,
           gen: float = 800.0) -> Event:
    return Event(kind=EventKind.metric_series, role=Role.context,
                 ts=datetime(2026, 1, 1, 0, 0, i, tzinfo=UTC), summary="s",
                 locator=Locator(path="server.log", line_start=i + 1, line_end=i + 1),
                 excerpt="x", detail={"engine_stats": {
                     "engine": "0", "running": running, "waiting": waiting, "kv_usage": kv,
                     "prompt_tps": prompt, "generation_tps": gen}})


def _preempted(i: int, total: int | None) -> Event:
    detail = {"group": str(i), "mode": "RECOMPUTE", **({"total": total} if total else {})}
    return Event(kind=EventKind.other, role=Role.context, summary="p", excerpt="x",
                 locator=Locator(path="server.log", line_start=100 + i, line_end=100 + i),
                 detail={"engine_preemption": detail})


def test_waiting_requests_with_room_in_the_cache_are_queueing() -> None:
    r = analyse_engine_log([_stats(i, 32, 20 + i, 0.5) for i in range(6)], ["server.log"])
    assert r.verdict.category == "queueing"
    assert r.verdict.confidence <= MAX_CONFIDENCE
    assert not r.verdict.alternatives  # not prefill-bound: no prompt-length alternative
    assert r.missing and r.partial
    assert {e.locator.line_start for e in r.verdict.evidence} >= {1, 6}


def test_a_prefill_bound_queue_names_prompt_length_as_the_alternative() -> None:
    events = [_stats(i, 10 + i, 80 - i, 0.3, prompt=24000.0, gen=50.0) for i in range(5)]
    r = analyse_engine_log(events, ["server.log"])
    assert r.verdict.category == "queueing" and "prefill-bound" in r.verdict.summary
    assert [a[0] for a in r.verdict.alternatives] == ["prompt_length"]
    plain = analyse_engine_log([_stats(i, 32, 20 + i, 0.5) for i in range(6)], ["server.log"])
    assert r.verdict.confidence < plain.verdict.confidence  # the rival it leaves open


def test_the_engines_own_record_is_the_owners_level_and_inferences_stay_below() -> None:
    """What the scheduler records of itself (requests waiting, requests preempted for cache
    space) is the owner's record; a full cache with requests waiting (a batch limit looks the
    same) and prompt bursts that cut decode are inferences from its numbers."""
    owners = [analyse_engine_log([_stats(i, 32, 20 + i, 0.5) for i in range(6)], ["s.log"]),
              analyse_engine_log([_preempted(1, 40), _preempted(2, 41)], ["s.log"])]
    bursts = [_stats(i, 12, 0, 0.4, prompt=30000.0 if i % 3 == 0 else 400.0,
                     gen=20.0 if i % 3 == 0 else 900.0) for i in range(9)]
    inferred = [analyse_engine_log([_stats(i, 18, 30, 0.96) for i in range(4)], ["s.log"]),
                analyse_engine_log(bursts, ["s.log"])]
    assert [r.verdict.category for r in inferred] == ["kv_cache_pressure", "prompt_length"]
    for r in owners:
        assert ONE_ARTIFACT < r.verdict.confidence <= OWNERS_RECORD == MAX_CONFIDENCE
    for r in inferred:  # one artifact's numbers, what would confirm them missing
        assert r.verdict.confidence == ONE_ARTIFACT


def test_preemptions_for_cache_space_are_kv_pressure_even_without_stats() -> None:
    r = analyse_engine_log([_preempted(1, 40), _preempted(2, 41)], ["server.log"])
    assert r.verdict.category == "kv_cache_pressure" and "41" in r.verdict.summary
    assert 0.5 <= r.verdict.confidence <= MAX_CONFIDENCE


def test_a_full_cache_holding_waiting_requests_is_kv_pressure() -> None:
    r = analyse_engine_log([_stats(i, 18, 30, 0.96) for i in range(4)], ["server.log"])
    assert r.verdict.category == "kv_cache_pressure"
    assert [a[0] for a in r.verdict.alternatives] == ["queueing"]


def test_an_idle_engine_says_the_latency_is_elsewhere() -> None:
    r = analyse_engine_log([_stats(i, 2, 0, 0.1) for i in range(5)], ["server.log"])
    assert r.verdict.category == "unknown" and r.verdict.confidence <= 0.3
    assert "outside the engine" in r.verdict.summary
