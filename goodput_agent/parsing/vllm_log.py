"""A serving engine's own log (vLLM): the periodic engine-stats lines and the scheduler's
preemption warnings, read as samples of the engine's state.

The stats line, as both engine generations print it every few seconds:
- V1 (`vllm/v1/metrics/loggers.py`): `Engine 000: Avg prompt throughput: X tokens/s, Avg
  generation throughput: Y tokens/s, Running: R reqs, Waiting: W reqs, GPU KV cache usage: K%,
  Prefix cache hit rate: P%`
- V0 (`vllm/engine/metrics.py`): `Avg prompt throughput: X tokens/s, Avg generation throughput:
  Y tokens/s, Running: R reqs, Swapped: S reqs, Pending: W reqs, GPU KV cache usage: K%, CPU KV
  cache usage: C%.`
and V0's scheduler warning `Sequence group N is preempted by PreemptionMode.RECOMPUTE mode
because there is not enough KV cache space. ... total_num_cumulative_preemption=T`.
Lines carry vLLM's logger prefix `INFO 03-17 15:38:10 [loggers.py:259]` (no year: the bundle's
year is assumed, as for syslog) and often a process prefix (`(APIServer pid=11574)`).

Events are context (the engine's state, never a failure); the latency question weighs them
(analysis/latency/engine_log.py) when the bundle has no latency histograms.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseResult
from goodput_agent.parsing.head_words import holds
from goodput_agent.parsing.lines import LineCount, scan_lines
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any

_STATS = re.compile(
    r"(?:Engine (?P<engine>\d+): )?Avg prompt throughput: (?P<prompt>[\d.]+) tokens/s, "
    r"Avg generation throughput: (?P<gen>[\d.]+) tokens/s, Running: (?P<running>\d+) reqs?, "
    r"(?:Swapped: (?P<swapped>\d+) reqs?, )?(?:Waiting|Pending): (?P<waiting>\d+) reqs?, "
    r"GPU KV cache usage: (?P<kv>[\d.]+)%")
_PREEMPTED = re.compile(
    r"Sequence group (?P<group>\S+) is preempted by PreemptionMode\.(?P<mode>\w+) mode because "
    r"there is not enough KV cache space(?:.*?total_num_cumulative_preemption=(?P<total>\d+))?")
# vLLM's logger: level, month-day and time, then [file.py:line] (older: file.py:line])
_VLLM_TIME = re.compile(r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<mo>\d{2})-(?P<d>\d{2}) "
                        r"(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:\.(?P<frac>\d{1,6}))?")
_MARKERS = (b"Avg prompt throughput:", b"is preempted by PreemptionMode")


def _when(text: str, policy: ClockPolicy) -> tuple[datetime | None, Clock]:
    """The engine's own time (its logger prefix) before any other a wrapper added."""
    m = _VLLM_TIME.search(text)
    if m:
        mo, d = int(m["mo"]), int(m["d"])
        try:
            naive = datetime(policy.year_for(mo, d), mo, d, int(m["h"]), int(m["mi"]),
                             int(m["s"]), int((m["frac"] or "0").ljust(6, "0")[:6]))
        except ValueError:
            return None, Clock.none
        return policy.localize(naive), Clock.inferred_year
    hit = parse_any(text, policy)
    return (hit[0], hit[1]) if hit else (None, Clock.none)


def _stats_event(m: re.Match[str], text: str, ts: datetime | None, clock: Clock, loc: Locator,
                 node: str | None) -> Event:
    detail: dict[str, float | int | str] = {
        "engine": m["engine"] or "0", "prompt_tps": float(m["prompt"]),
        "generation_tps": float(m["gen"]), "running": int(m["running"]),
        "waiting": int(m["waiting"]), "kv_usage": float(m["kv"]) / 100.0}
    if m["swapped"] is not None:
        detail["swapped"] = int(m["swapped"])
    return Event(kind=EventKind.metric_series, role=Role.context, ts=ts, clock=clock, node=node,
                 summary=(f"engine {detail['engine']}: running {m['running']}, waiting "
                          f"{m['waiting']}, KV cache {m['kv']}%, prompt {m['prompt']} tok/s, "
                          f"generation {m['gen']} tok/s"),
                 locator=loc, excerpt=text.strip(), detail={"engine_stats": detail})


def _preemption_event(m: re.Match[str], text: str, ts: datetime | None, clock: Clock,
                      loc: Locator, node: str | None) -> Event:
    detail: dict[str, str | int] = {"group": m["group"], "mode": m["mode"]}
    if m["total"] is not None:
        detail["total"] = int(m["total"])
    return Event(kind=EventKind.other, role=Role.context, ts=ts, clock=clock, node=node,
                 summary=(f"the scheduler preempted sequence group {m['group']} "
                          f"({m['mode']}): not enough KV cache space"
                          + (f", {m['total']} preemptions so far" if m["total"] else "")),
                 locator=loc, excerpt=text.strip(), detail={"engine_preemption": detail})


class VllmLogParser:
    format = "vllm_log"

    def sniff(self, head: str, name: str) -> bool:
        # the literal words first: each regex scans the whole head when they are absent
        return bool((holds(head, "Avg prompt throughput: ") and _STATS.search(head))
                    or (holds(head, "is preempted by PreemptionMode.")
                        and _PREEMPTED.search(head)))

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        events: list[Event] = []
        count = LineCount()
        for n, text in scan_lines(path, _MARKERS, count):
            stats = _STATS.search(text)
            pre = None if stats else _PREEMPTED.search(text)
            if not stats and not pre:
                continue
            ts, clock = _when(text, ctx.clock)
            loc = Locator(path=ctx.rel_path, line_start=n, line_end=n)
            make = _stats_event if stats else _preemption_event
            events.append(make(stats or pre, text, ts, clock, loc, ctx.node_hint))  # type: ignore[arg-type]
        return ParseResult(format=self.format, events=events, lines_read=count.lines,
                           facts={"engine_log": ctx.rel_path})


PARSER = VllmLogParser()
