"""Two serving benchmark results (SGLang's or vLLM's `bench_serving` block) of the same service
compared: what changed between the faster run and the slower one decides.

Per request, from each block's totals: prompt tokens (total input / successful requests),
output tokens (total generated / successful requests); beside them the request rate and the
latencies (mean TTFT, mean ITL, mean end-to-end). The slower run is the one whose mean TTFT and
end-to-end latency rose together (the product of their ratios above 1): a rise is measured,
never assumed from the files' names. A class is named only when its factor moved and the
others held (grew by under 25 %; one that shrank cannot have raised the latency; one that
grew by under 50 % contests only through the latency it drives, when that moved too):
- prompt_length: prompts per request x1.5 or more, TTFT up, ITL, output length and the
  request rate held: prefill of longer prompts;
- output_length: outputs per request x1.5 or more, end-to-end up, ITL, prompt length and the
  rate held: more decode steps per request;
- queueing: the request rate x1.5 or more (or concurrency), TTFT up, the lengths held: more
  load on the same server.
Otherwise `unknown`. No server metrics back either run, so a cause stays at ENGINE_ONLY (the
engine log's ceiling): the server's own histograms would confirm where the time went.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from goodput_agent.analysis.abstention import SILENCE
from goodput_agent.core.events import Event, EventKind, Locator, Role

from .model import LatencyResult, LatencyVerdict

MOVED, HELD = 1.5, 1.25
E2E = ("Mean E2E Latency (ms)", "Mean E2EL (ms)")  # SGLang's and vLLM's names
ENGINE_ONLY = 0.6


class BenchResult(BaseModel):
    path: str
    values: dict[str, str]
    lines: dict[str, int]

    def number(self, *keys: str) -> float | None:
        for k in keys:
            try:
                return float(self.values[k])
            except (KeyError, ValueError):
                continue
        return None

    def per_request(self, total: str) -> float | None:
        n, t = self.number("Successful requests"), self.number(total)
        return t / n if n and t is not None else None


def _ratio(slow: float | None, fast: float | None) -> float | None:
    return slow / fast if slow is not None and fast else None


def _ratios(fast: BenchResult, slow: BenchResult) -> dict[str, float | None]:
    return {
        "ttft": _ratio(slow.number("Mean TTFT (ms)"), fast.number("Mean TTFT (ms)")),
        "e2e": _ratio(slow.number(*E2E), fast.number(*E2E)),
        "itl": _ratio(slow.number("Mean ITL (ms)", "Mean TPOT (ms)"),
                      fast.number("Mean ITL (ms)", "Mean TPOT (ms)")),
        "prompt_tokens": _ratio(slow.per_request("Total input tokens"),
                                fast.per_request("Total input tokens")),
        "output_tokens": _ratio(slow.per_request("Total generated tokens"),
                                fast.per_request("Total generated tokens")),
        "request_rate": _ratio(slow.number("Request throughput (req/s)"),
                               fast.number("Request throughput (req/s)")),
    }


def _held(r: float | None) -> bool:
    """The factor did not grow: one that shrank cannot have raised a latency, so it is no
    rival (shorter outputs do not lengthen prefill)."""
    return r is not None and r <= HELD


def _moved(r: float | None) -> bool:
    return r is not None and r >= MOVED


def _no_rival(r: dict[str, float | None], factor: str, through: str) -> bool:
    """A factor that grew less than a cause would (under MOVED) contests the verdict only
    through the latency it drives: longer outputs raise TTFT only by loading the server, which
    the inter-token latency shows; longer prompts raise end-to-end latency only through TTFT."""
    return _held(r[factor]) or (not _moved(r[factor]) and _held(r[through]))


def _decide(r: dict[str, float | None]) -> tuple[str, str]:
    if _moved(r["prompt_tokens"]) and _moved(r["ttft"]) and _held(r["itl"]) \
            and _no_rival(r, "output_tokens", "itl") and _held(r["request_rate"]):
        return "prompt_length", "prompts grew per request while the rate and the inter-token " \
                                "latency held (and with it the server's load): the prefill of " \
                                "longer prompts"
    if _moved(r["output_tokens"]) and _moved(r["e2e"]) and _held(r["itl"]) \
            and _no_rival(r, "prompt_tokens", "ttft") and _held(r["request_rate"]):
        return "output_length", "outputs grew per request while the rate, the inter-token " \
                                "latency and the time to first token held: more decode steps " \
                                "per request"
    if _moved(r["request_rate"]) and _moved(r["ttft"]) and _held(r["prompt_tokens"]) \
            and _held(r["output_tokens"]):
        return "queueing", "the request rate grew while the lengths held: more load on the " \
                           "same server"
    return "unknown", "no single measured factor moved with the latency while the others held"


def _evidence(b: BenchResult, keys: tuple[str, ...], category: str) -> list[Event]:
    out = []
    for k in keys:
        if k in b.lines:
            n = b.lines[k]
            out.append(Event(kind=EventKind.metric_series, role=Role.context, category=category,
                             summary=f"{b.path}: {k} {b.values[k]}", excerpt=f"{k}: {b.values[k]}",
                             locator=Locator(path=b.path, line_start=n, line_end=n)))
    return out


def compare_benchmarks(results: list[BenchResult]) -> LatencyResult | None:
    """The two results compared, or None unless there are exactly two with a latency each."""
    if len(results) != 2:
        return None
    a, b = results
    rises = [r for r in (_ratio(b.number("Mean TTFT (ms)"), a.number("Mean TTFT (ms)")),
                         _ratio(b.number(*E2E), a.number(*E2E))) if r]
    if not rises:
        return None
    fast, slow = (a, b) if math.prod(rises) >= 1 else (b, a)
    r = _ratios(fast, slow)
    category, why = _decide(r)
    shown = ", ".join(f"{k} x{v:.2f}" for k, v in r.items() if v is not None)
    summary = (f"{slow.path} against {fast.path}: {shown}; {why} (two benchmark results, no "
               "server metrics)")
    keys = ("Mean TTFT (ms)", "Mean ITL (ms)", "Total input tokens", "Total generated tokens",
            "Request throughput (req/s)", "Successful requests")
    verdict = LatencyVerdict(
        category=category, confidence=SILENCE if category == "unknown" else ENGINE_ONLY,
        summary=summary, deciding={k: round(v, 3) if v is not None else None
                                   for k, v in r.items()},
        evidence=_evidence(fast, keys, category) + _evidence(slow, keys, category),
        unknowns=["each run is one benchmark's summary: the server's own histograms (queue, "
                  "prefill, decode) would confirm where the time went"])
    return LatencyResult(source="bundle (benchmark results)", service_labels={}, metrics={},
                         windows=None, verdict=verdict, partial=True)
