"""SGLang's scheduler log (issue 24): batch lines as the engine's state, retractions as
KV-cache pressure, only the lowest tensor-parallel rank read."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.sglang_log import PARSER

LOG = """\
[2025-03-24 02:56:26 TP0] Prefill batch. #new-seq: 30, #new-token: 3810, #cached-token: 60, \
token usage: 0.00, #running-req: 2, #queue-req: 68,
[2025-03-24 02:56:26 TP1] Prefill batch. #new-seq: 30, #new-token: 3810, #cached-token: 60, \
token usage: 0.00, #running-req: 2, #queue-req: 68,
[2025-03-24 02:56:36 TP0] Decode batch, #running-req: 32, #token: 7352, full token usage: 0.97, \
cuda graph: True, gen throughput (token/s): 39.33, #queue-req: 66,
[2025-03-24 02:56:37 TP1] Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: \
0.10 -> 0.20
[2025-03-24 02:56:37 TP0] Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: \
0.10 -> 0.20
"""


def test_decode_lines_are_samples_and_retractions_are_preemptions(tmp_path: Path) -> None:
    assert PARSER.sniff(LOG, "server.log")
    p = tmp_path / "server.log"
    p.write_text(LOG)
    res = PARSER.parse(p, ParseContext(rel_path="server.log"))
    stats = [e.detail["engine_stats"] for e in res.events if "engine_stats" in e.detail]
    assert stats == [{"engine": "TP0", "prompt_tps": 381.0, "generation_tps": 39.33,
                      "running": 32, "waiting": 66, "kv_usage": 0.97}]
    retract = [e.detail["engine_preemption"] for e in res.events
               if "engine_preemption" in e.detail]
    assert retract == [{"mode": "retract", "total": 2}]  # TP1's copy is not counted twice


def test_the_latency_question_reads_retractions_as_kv_cache_pressure(tmp_path: Path) -> None:
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "server.log").write_text(LOG)
    with Ledger(tmp_path / "l.duckdb") as led:
        report = investigate_bundle(tmp_path / "b", led, pictures_dir=tmp_path / "p")
    assert (report.kind, report.root_cause.category) == ("latency", "kv_cache_pressure")
