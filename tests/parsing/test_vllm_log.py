"""The serving engine's own log: stats lines of both engine generations and the scheduler's
preemption warning become samples with their file and line, on the bundle's clock. The lines
below are written here in the formats vLLM prints (vllm/v1/metrics/loggers.py,
vllm/engine/metrics.py, vllm/core/scheduler.py); the real excerpts are read in
tests/test_realworld.py."""

from datetime import UTC, datetime
from pathlib import Path

from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.registry import identify
from goodput_agent.parsing.timefmt import ClockPolicy
from goodput_agent.parsing.vllm_log import PARSER

V1 = ("(APIServer pid=7) INFO 11-02 09:00:{s:02d} [loggers.py:123] Engine 001: Avg prompt "
      "throughput: {p} tokens/s, Avg generation throughput: {g} tokens/s, Running: {r} reqs, "
      "Waiting: {w} reqs, GPU KV cache usage: {kv}%, Prefix cache hit rate: 12.5%")
V0 = ("INFO 11-02 09:01:{s:02d} metrics.py:455] Avg prompt throughput: {p} tokens/s, Avg "
      "generation throughput: {g} tokens/s, Running: {r} reqs, Swapped: 2 reqs, Pending: {w} "
      "reqs, GPU KV cache usage: {kv}%, CPU KV cache usage: 0.0%.")
PRE = ("WARNING 11-02 09:02:{s:02d} scheduler.py:1560] Sequence group cmpl-{g} is preempted by "
       "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can "
       "affect the end-to-end performance. total_num_cumulative_preemption={t}")


def _parse(tmp_path: Path, lines: list[str]):
    path = tmp_path / "server.log"
    path.write_text("\n".join(["INFO 11-02 08:59:59 api_server.py:1] starting", *lines]) + "\n")
    assert identify(path.read_text(), path.name) is PARSER
    ctx = ParseContext(rel_path="logs/server.log",
                       clock=ClockPolicy(anchor=datetime(2026, 11, 2, tzinfo=UTC)))
    return PARSER.parse(path, ctx)


def test_both_generations_stats_lines_are_samples(tmp_path: Path) -> None:
    res = _parse(tmp_path, [V1.format(s=10, p=100.5, g=900.0, r=12, w=3, kv=41.5),
                            V0.format(s=20, p=0.0, g=44.9, r=2, w=7, kv=82.1)])
    v1, v0 = (e.detail["engine_stats"] for e in res.events)
    assert v1 == {"engine": "001", "prompt_tps": 100.5, "generation_tps": 900.0, "running": 12,
                  "waiting": 3, "kv_usage": 0.415}
    assert v0["waiting"] == 7 and v0["swapped"] == 2 and v0["engine"] == "0"
    assert [e.locator.line_start for e in res.events] == [2, 3]
    assert res.lines_read == 3  # every line of the file, not only the ones with a stats line
    assert res.events[0].ts == datetime(2026, 11, 2, 9, 0, 10, tzinfo=UTC)
    assert all(e.role == "context" for e in res.events)


def test_preemption_warning_carries_the_running_total(tmp_path: Path) -> None:
    res = _parse(tmp_path, [PRE.format(s=1, g=7, t=41)])
    (e,) = res.events
    assert e.detail["engine_preemption"] == {"group": "cmpl-7", "mode": "RECOMPUTE", "total": 41}
    assert "not enough KV cache space" in e.summary


def test_a_log_without_engine_lines_is_not_claimed() -> None:
    assert not PARSER.sniff("INFO 11-02 09:00:00 api_server.py:1] Avg latency 2 s\n", "x.log")
