"""SGLang's scheduler log: its batch lines read as samples of the engine's state, as vLLM's stats
lines are (parsing/vllm_log.py), so the latency question weighs them the same way.

The lines, as `sglang/srt/managers/scheduler.py` prints them (`[2025-03-24 02:56:41 TP0]`
prefix: date, time, tensor-parallel rank; some pastes drop the time):
- `Decode batch. #running-req: 32, #token: 7352, token usage: 0.01, ... gen throughput
  (token/s): 39.33, ... #queue-req: 68,` (newer: `Decode batch, ...`, `full token usage:`):
  requests running and queued, the KV-cache pool's use, the generation throughput;
- `Prefill batch. #new-seq: 1, #new-token: 103, #cached-token: 1, token usage: 0.00,
  #running-req: 0, #queue-req: 0,` (newer adds `input throughput (token/s): X`): prompt tokens
  admitted, from which the prompt throughput between two decode samples is counted;
- `Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.1474 -> 0.1845` and
  `KV cache pool is full. Retract requests.`: the pool ran out and running requests were
  retracted (sent back to the queue), the KV-cache pressure vLLM calls preemption.
Every tensor-parallel rank prints the same lines: only the lowest rank's are read.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseResult
from goodput_agent.parsing.lines import LineCount, scan_lines
from goodput_agent.parsing.timefmt import ClockPolicy

FORMAT = "sglang_log"
_PREFIX = re.compile(r"\[(?:(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:,\d+)? )?"
                     r"(?:(?:TP|DP|PP|EP)(?P<tp>\d+)[\w ]*)\]")
_DECODE = re.compile(r"Decode batch[.,] #running-req: (?P<running>\d+), #token: \d+, "
                     r"(?:full )?token usage: (?P<usage>[\d.]+)")
_GEN = re.compile(r"gen throughput \(token/s\): (?P<gen>[\d.]+)")
_QUEUE = re.compile(r"#queue-req: (?P<queue>\d+)")
_PREFILL = re.compile(r"Prefill batch[.,] #new-seq: \d+, #new-token: (?P<new>\d+)")
_INPUT = re.compile(r"input throughput \(token/s\): (?P<tps>[\d.]+)")
_RETRACT = re.compile(r"Decode out of memory happened\. #retracted_reqs: (?P<n>\d+)|"
                      r"KV cache pool is full\. Retract requests\.(?: #retracted_reqs: "
                      r"(?P<n2>\d+))?")
_MARKERS = (b"Decode batch", b"Prefill batch", b"Decode out of memory", b"KV cache pool is full")


def _when(m: re.Match[str] | None, policy: ClockPolicy) -> tuple[datetime | None, Clock]:
    if m is None or not m["ts"]:
        return None, Clock.none
    return policy.localize(datetime.fromisoformat(m["ts"])), Clock.absolute


class _Reader:
    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.events: list[Event] = []
        self.tp: int | None = None
        self.prefill_tokens = 0
        self.last_decode: datetime | None = None
        self.retractions = 0
        self.prompt_tps: float | None = None  # the engine's own input throughput, when printed

    def line(self, n: int, text: str) -> None:
        p = _PREFIX.search(text)
        tp = int(p["tp"]) if p and p["tp"] is not None else 0
        self.tp = tp if self.tp is None else min(self.tp, tp)
        if tp != self.tp:
            return
        ts, clock = _when(p, self.ctx.clock)
        if self.last_decode is None:  # the prompt throughput is counted from the first line
            self.last_decode = ts
        loc = Locator(path=self.ctx.rel_path, line_start=n, line_end=n)
        if m := _RETRACT.search(text):
            self.retractions += int(m["n"] or m["n2"] or 1)
            self.events.append(Event(
                kind=EventKind.other, role=Role.context, ts=ts, clock=clock,
                node=self.ctx.node_hint, locator=loc, excerpt=text.strip()[:500],
                summary=(f"the KV-cache pool ran out: requests retracted to the queue "
                         f"({self.retractions} so far)"),
                detail={"engine_preemption": {"mode": "retract", "total": self.retractions}}))
        elif m := _PREFILL.search(text):
            self.prefill_tokens += int(m["new"])
            if t := _INPUT.search(text):
                self.prompt_tps = float(t["tps"])
        elif m := _DECODE.search(text):
            self.events.append(self._stats(m, text, ts, clock, loc))

    def _stats(self, m: re.Match[str], text: str, ts: datetime | None, clock: Clock,
               loc: Locator) -> Event:
        gen = float(g["gen"]) if (g := _GEN.search(text)) else 0.0
        queue = int(q["queue"]) if (q := _QUEUE.search(text)) else 0
        prompt = self.prompt_tps
        if prompt is None:
            span = (ts - self.last_decode).total_seconds() if ts and self.last_decode else 0
            prompt = self.prefill_tokens / span if span > 0 else 0.0
        self.prefill_tokens, self.last_decode = 0, ts or self.last_decode
        d = {"engine": f"TP{self.tp}", "prompt_tps": round(prompt, 1), "generation_tps": gen,
             "running": int(m["running"]), "waiting": queue, "kv_usage": float(m["usage"])}
        return Event(kind=EventKind.metric_series, role=Role.context, ts=ts, clock=clock,
                     node=self.ctx.node_hint, locator=loc, excerpt=text.strip()[:500],
                     summary=(f"SGLang TP{self.tp}: running {d['running']}, queued {queue}, "
                              f"token usage {m['usage']}, generation {gen} tok/s"),
                     detail={"engine_stats": d})


class SglangLogParser:
    format = FORMAT

    def sniff(self, head: str, name: str) -> bool:
        if "batch" not in head and "Retract" not in head and "Decode out of memory" not in head:
            return False
        return bool(_DECODE.search(head) or _PREFILL.search(head) or _RETRACT.search(head))

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        reader = _Reader(ctx)
        count = LineCount()
        for n, text in scan_lines(path, _MARKERS, count):
            reader.line(n, text)
        return ParseResult(format=FORMAT, events=reader.events, lines_read=count.lines,
                           facts={"engine_log": ctx.rel_path, "engine": "sglang"})


PARSER = SglangLogParser()
