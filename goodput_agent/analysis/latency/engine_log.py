"""The latency question from the serving engine's own log, when the bundle has no latency
histograms: what the engine says about itself (requests waiting and running, KV-cache usage,
prompt and generation throughput, preemptions for lack of cache) decides where requests spend
their time, without a measured latency and without a baseline window.

How it decides. Each verdict rests on the engine's own record of its queue, cache and
throughput (record_levels.OWNERS_RECORD at most): latency itself is not measured here, so what
would corroborate the cause (the latency histograms of two windows) is missing.
- a stuck engine first: requests running while it generates (next to) nothing in most samples
  is not load, whatever waits: `unknown` at 0.6 (the counters rule the load classes out),
  saying so and what would show where it is stuck;
- prefill interference: prompt bursts that cut generation to half or less with nothing waiting
  (`prompt_length`, ONE_ARTIFACT): decode steps stall behind the prompts' prefill, an inference
  from the engine's own throughput that no record of it states, like a full cache with
  requests waiting;
- kv_cache_pressure: the scheduler preempted requests for lack of KV-cache space (its own
  record, OWNERS_RECORD; a step less when its samples show the cache below full), or the cache
  ran at >= 90 % while requests waited in most samples (ONE_ARTIFACT: a batch limit holds
  requests back the same way);
- queueing: requests waited in most samples (mean >= 1) with the cache below 90 %: the
  engine's count of waiting requests, OWNERS_RECORD; when prompt throughput is >= 10x
  generation throughput the engine is prefill-bound, so the wait may be behind the prompts'
  prefill (prompt length is named as the alternative, ONE_ARTIFACT: no baseline shows that the
  prompts got longer).
- otherwise unknown: the engine is not saturated by its own numbers, so the latency is spent
  outside its queue and cache (said, with the numbers).
"""

from __future__ import annotations

from statistics import fmean

from pydantic import BaseModel

from goodput_agent.analysis.abstention import (
    NOTHING_TO_COMPARE,
    READ_NEGATIVE,
    SILENCE,
    unknown_confidence,
)
from goodput_agent.analysis.advice import Advice, Premise
from goodput_agent.analysis.record_levels import ONE_ARTIFACT, OWNERS_RECORD
from goodput_agent.core.events import Event
from goodput_agent.metrics.source import MissingEvidence

from .model import LatencyResult, LatencyVerdict

KV_FULL = 0.9
MOST = 0.5  # share of samples
PREFILL_BOUND = 10.0  # prompt tokens/s over generation tokens/s
MAX_CONFIDENCE = OWNERS_RECORD
RIVAL_NAMED = 0.05  # a step below, for a rival the same numbers leave open
NO_HISTOGRAMS = MissingEvidence(
    what="latency histograms (end-to-end, queue, prefill, decode)",
    why="the bundle has the engine's log, not its /metrics: latency itself is not measured "
        "and there is no baseline window; the verdict rests on the engine's own counts")


class _Numbers(BaseModel):
    samples: int
    waiting_share: float
    waiting_mean: float
    waiting_max: int
    running_mean: float
    running_max: int
    kv_mean: float | None
    kv_max: float | None
    prompt_tps: float
    generation_tps: float
    preemptions: int

    def prefill_bound(self) -> bool:
        return self.prompt_tps >= PREFILL_BOUND * max(self.generation_tps, 1.0)


def _numbers(stats: list[dict], preemptions: list[Event]) -> _Numbers:
    waiting = [s["waiting"] for s in stats] or [0]
    running = [s["running"] for s in stats] or [0]
    kv = [s["kv_usage"] for s in stats]
    totals = [p.detail["engine_preemption"].get("total") for p in preemptions]
    counted = max((t for t in totals if t is not None), default=0)
    return _Numbers(
        samples=len(stats), waiting_share=sum(w > 0 for w in waiting) / len(waiting),
        waiting_mean=fmean(waiting), waiting_max=max(waiting), running_mean=fmean(running),
        running_max=max(running), kv_mean=fmean(kv) if kv else None,
        kv_max=max(kv) if kv else None,
        prompt_tps=fmean([s["prompt_tps"] for s in stats]) if stats else 0.0,
        generation_tps=fmean([s["generation_tps"] for s in stats]) if stats else 0.0,
        preemptions=max(counted, len(preemptions)))


def _pct(v: float | None) -> str:
    return "?" if v is None else f"{v * 100:.0f}%"


def _peak(events: list[Event], key: str) -> Event | None:
    return max(events, key=lambda e: e.detail["engine_stats"][key], default=None)


def _evidence(stats: list[Event], preemptions: list[Event], category: str) -> list[Event]:
    picks = [stats[0], stats[-1]] if stats else []
    if category == "kv_cache_pressure":
        picks += preemptions[:1] + preemptions[-1:] + [e for e in [_peak(stats, "kv_usage")] if e]
    picks += [e for e in [_peak(stats, "waiting")] if e]
    seen, out = set(), []
    for e in sorted(picks, key=lambda e: (e.locator.path, e.locator.line_start)):
        if (e.locator.path, e.locator.line_start) not in seen:
            seen.add((e.locator.path, e.locator.line_start))
            out.append(e.model_copy(update={"category": category}))
    return out


def _queueing(n: _Numbers) -> tuple[float, str, list[tuple[str, float, str]]]:
    text = (f"Requests wait in the engine's queue: waiting in {n.waiting_share:.0%} of "
            f"{n.samples} samples (mean {n.waiting_mean:.1f}, max {n.waiting_max}) beside "
            f"{n.running_mean:.1f} running (max {n.running_max}), with the KV cache at "
            f"{_pct(n.kv_max)} at most, so the cache is not what holds them")
    alternatives = []
    if n.prefill_bound():
        text += (f"; the engine is prefill-bound ({n.prompt_tps:.0f} prompt tokens/s against "
                 f"{n.generation_tps:.0f} generated): the queue waits behind the prompts' "
                 "prefill")
        alternatives.append(("prompt_length", 0.3,
                             "prefill dominates the engine's work, but without a baseline "
                             "nothing shows that prompts got longer"))
        return ONE_ARTIFACT + RIVAL_NAMED, text, alternatives
    return OWNERS_RECORD, text, alternatives


def _kv(n: _Numbers) -> tuple[float, str]:
    if n.preemptions:
        full = (n.kv_max or 0) >= KV_FULL or not n.samples
        conf = OWNERS_RECORD if full else OWNERS_RECORD - RIVAL_NAMED
        return conf, (f"The KV cache is the limit: the scheduler preempted requests "
                      f"{n.preemptions} time(s) for lack of KV-cache space"
                      + (f", with the cache at up to {_pct(n.kv_max)}" if n.samples else ""))
    return ONE_ARTIFACT, (f"The KV cache is the limit: usage up to {_pct(n.kv_max)} (mean "
                 f"{_pct(n.kv_mean)}) while requests waited in {n.waiting_share:.0%} of the "
                 f"samples (mean {n.waiting_mean:.1f} waiting): new requests wait for blocks")


STALL_TPS = 1.0  # generation tokens/s that count as none
INTERFERENCE_DROP = 0.5  # decode throughput during prompt bursts, against the rest


def _stuck(stats: list[Event]) -> str | None:
    """Requests running while the engine generates (next to) nothing, in most samples: a stuck
    engine, which no waiting count turns into load."""
    rows = [e.detail["engine_stats"] for e in stats]
    idle = [r for r in rows if r["running"] > 0 and r["generation_tps"] < STALL_TPS
            and r["prompt_tps"] < STALL_TPS]
    if len(rows) < 3 or len(idle) < MOST * len(rows) or len(idle) < 3:
        return None
    times = [e.ts for e in stats if e.ts]
    span = f" over {(max(times) - min(times)).total_seconds() / 60:.0f} min" if times else ""
    return (f"The engine looks stuck, not loaded: {len(idle)} of {len(rows)} samples{span} show "
            f"{max(r['running'] for r in idle)} request(s) running with under {STALL_TPS:g} "
            "token/s generated and no prompt work; a waiting count alone is not queueing (a "
            "py-spy dump of the engine, or its /metrics over the same time, would show where "
            "it is stuck)")


def _prefill_interference(stats: list[Event]) -> str | None:
    """Prompt bursts that collapse decode throughput while nothing waits: decode steps stall
    behind the prefill of long prompts (chunked prefill shares each step)."""
    rows = [e.detail["engine_stats"] for e in stats]
    burst = [r for r in rows if r["prompt_tps"] >= PREFILL_BOUND * max(r["generation_tps"], 1.0)
             and r["running"] > 0 and r["waiting"] == 0]
    calm = [r["generation_tps"] for r in rows if r not in burst and r["generation_tps"] > 0]
    if len(burst) < 2 or len(calm) < 2:
        return None
    during = fmean(r["generation_tps"] for r in burst)
    usual = sorted(calm)[len(calm) // 2]
    if during > INTERFERENCE_DROP * usual:
        return None
    return (f"Prefill interference: in {len(burst)} samples prompt bursts (up to "
            f"{max(r['prompt_tps'] for r in burst):.0f} prompt tokens/s) cut generation to "
            f"{during:.1f} tokens/s against {usual:.1f} otherwise, with nothing waiting: "
            "running requests' decode stalls behind the prompts' prefill")


def _premise(key: str, op: str, value: float, text: str) -> Premise:
    return Premise(left=f"verdict.deciding.{key}", op=op, right=value,  # type: ignore[arg-type]
                   text=text)


def _advice(category: str, n: _Numbers) -> tuple[list[Advice], list[str]]:
    """What would fix the cause, each resting on the engine's own numbers it cites."""
    if category == "kv_cache_pressure":
        full = (_premise("preemptions", ">=", 1, f"{n.preemptions} preemptions for lack of "
                         "KV-cache space") if n.preemptions else
                _premise("kv_usage_max", ">=", KV_FULL, f"the KV cache reached {_pct(n.kv_max)}"))
        return [Advice(topic="engine_setting", text="more KV-cache memory: a higher "
                       "--gpu-memory-utilization, a larger --tensor-parallel-size, "
                       "--kv-cache-dtype fp8, or a lower --max-model-len", rationale=full.text,
                       premises=[full])], \
            ["raising --max-num-seqs: more sequences only preempt each other more"]
    if category == "queueing":
        waits = _premise("waiting_share", ">=", MOST, f"requests wait in {n.waiting_share:.0%} "
                         f"of {n.samples} samples")
        text = "more capacity: replicas, or rate limiting upstream"
        if n.prefill_bound():
            text += ("; the engine is prefill-bound, so chunked prefill "
                     "(--max-num-batched-tokens) or a separate pool for long prompts")
        return [Advice(topic="capacity", text=text, rationale=waits.text, premises=[waits])], \
            ["raising --gpu-memory-utilization: the KV cache is not full"]
    if category == "prompt_length":
        return [Advice(topic="engine_setting", text="smaller prefill chunks "
                       "(--max-num-batched-tokens) so decode keeps its share of each step, or "
                       "prefill on separate instances (disaggregated prefill)",
                       rationale="prompt bursts cut generation while nothing waits")], \
            ["more replicas for the same traffic: nothing waits, the steps are shared"]
    return [], []


def analyse_engine_log(events: list[Event], files: list[str], lone_benchmark: bool = False,
                       unread_files: int = 0) -> LatencyResult:
    """`lone_benchmark`: the bundle's only serving record is one benchmark result, and every
    file of the bundle was read (abstention.NOTHING_TO_COMPARE); `unread_files`: files of the
    bundle no parser read (an `unknown` is held to abstention.UNREAD: the answer may be there)."""
    stats = [e for e in events if "engine_stats" in e.detail]
    preemptions = [e for e in events if "engine_preemption" in e.detail]
    n = _numbers([e.detail["engine_stats"] for e in stats], preemptions)
    deciding: dict[str, float | None] = {
        "samples": n.samples, "waiting_share": round(n.waiting_share, 3),
        "waiting_mean": round(n.waiting_mean, 2), "kv_usage_max": n.kv_max,
        "preemptions": n.preemptions, "prompt_tps_mean": round(n.prompt_tps, 1),
        "generation_tps_mean": round(n.generation_tps, 1)}
    kv_holds = (n.kv_max or 0) >= KV_FULL and n.waiting_share >= MOST
    queued = n.waiting_share >= MOST and n.waiting_mean >= 1
    alternatives: list[tuple[str, float, str]] = []
    stuck = _stuck(stats)
    interference = _prefill_interference(stats)
    if stuck and not n.preemptions:
        # the engine's own counters, sample after sample, show it stuck: no load class fits,
        # a read negative (abstention.py), within this module's ceiling
        category, conf, summary = "unknown", READ_NEGATIVE, stuck
        alternatives.append(("queueing", 0.1, "requests wait, but the engine generates nothing "
                                              "for the ones it runs: load does not explain it"))
    elif interference and not (n.preemptions or kv_holds or queued):
        category, conf, summary = "prompt_length", ONE_ARTIFACT, interference
    elif n.preemptions or kv_holds:
        category = "kv_cache_pressure"
        conf, summary = _kv(n)
        if queued:
            alternatives.append(("queueing", 0.25, "requests do wait, but for cache blocks"))
    elif queued:
        category = "queueing"
        conf, summary, alternatives = _queueing(n)
    elif lone_benchmark and not n.samples:
        category, conf = "unknown", NOTHING_TO_COMPARE
        summary = ("One benchmark result, and no earlier run, server log or metrics to compare "
                   "it with: a latency rise cannot be measured from one window, so no cause can "
                   "be named")
    else:
        # queue and cache ruled out, prompt and output lengths not (no baseline): a guess
        category, conf = "unknown", SILENCE
        summary = (f"The engine is not saturated by its own numbers: waiting in "
                   f"{n.waiting_share:.0%} of {n.samples} samples (max {n.waiting_max}), KV "
                   f"cache at most {_pct(n.kv_max)}, no preemptions: the latency is spent "
                   "outside the engine's queue and cache")
    advice, would_not = _advice(category, n)
    verdict = LatencyVerdict(
        # the ceiling is on a cause named from counts, not on an abstention (abstention.py)
        category=category, confidence=unknown_confidence(conf, unread_files)
        if category == "unknown" else min(conf, MAX_CONFIDENCE),
        summary=f"{summary} (from the engine's log: {', '.join(files)})", deciding=deciding,
        would_fix=[a.text for a in advice], would_not_fix=would_not, advice=advice,
        evidence=_evidence(stats, preemptions, category), alternatives=alternatives,
        unknowns=["latency itself is not measured (no histograms): whether it rose, and by how "
                  "much, is not known from the engine's log"])
    return LatencyResult(source="bundle (engine log)", service_labels={}, metrics={},
                         windows=None, verdict=verdict, missing=[NO_HISTOGRAMS], partial=True)
