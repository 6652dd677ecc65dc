"""vLLM serving incidents: a seeded load model (arrivals, prompt and output lengths, a KV cache,
a batch limit) sampled per request, exported as OpenMetrics with timestamps the way
`promtool tsdb dump-openmetrics` writes a vLLM server's series."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import yaml

from .case import Case, Expected
from .openmetrics import Family, render

LAT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120)
ITL_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5)
TOK_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000)
MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-32B-Instruct",
          "mistralai/Mistral-7B-Instruct-v0.3")
QUESTIONS = ("why did inference latency rise for {m}?", "p99 latency of {m} went up this "
             "afternoon, why?", "users complain the chat endpoint ({m}) got slow",
             "time to first token regressed for {m} - root cause?")


@dataclass(frozen=True)
class Load:
    rate: float  # requests/s
    prompt: float  # mean prompt tokens
    output: float  # mean output tokens
    queue_s: float  # mean time waiting for a slot
    kv: float  # KV-cache usage 0..1
    preempt_per_s: float
    waiting: float
    running: float


def _after(base: Load, cause: str, rng: random.Random) -> Load:
    k = rng.uniform(3, 4)
    if cause == "queueing":
        return replace(base, rate=base.rate * rng.uniform(1.6, 2.2), queue_s=rng.uniform(3, 9),
                       waiting=rng.uniform(25, 60), running=base.running * 1.3, kv=base.kv + 0.1)
    if cause == "kv_cache_pressure":
        return replace(base, kv=rng.uniform(0.97, 0.995), preempt_per_s=rng.uniform(0.5, 2),
                       queue_s=rng.uniform(2, 6), waiting=rng.uniform(15, 40),
                       output=base.output * 1.15)
    if cause == "prompt_length":
        return replace(base, prompt=base.prompt * k, kv=min(0.8, base.kv * 1.4))
    if cause == "output_length":
        return replace(base, output=base.output * k, kv=min(0.8, base.kv * 1.3),
                       running=base.running * 1.2)
    return base


def _bucket_add(counts: list[float], buckets: tuple, value: float) -> None:
    for i, le in enumerate(buckets):
        if value <= le:
            counts[i] += 1
    counts[-1] += 1  # +Inf


class _Hist:
    def __init__(self, buckets: tuple) -> None:
        self.buckets, self.counts, self.sum = buckets, [0.0] * (len(buckets) + 1), 0.0

    def add(self, value: float) -> None:
        _bucket_add(self.counts, self.buckets, value)
        self.sum += value


def _simulate(rng: random.Random, start: datetime, minutes: int, change_min: int, base: Load,
              after: Load, new_names: bool) -> list[Family]:
    names = {"itl": "vllm:inter_token_latency_seconds" if new_names
             else "vllm:time_per_output_token_seconds",
             "kv": "vllm:kv_cache_usage_perc" if new_names else "vllm:gpu_cache_usage_perc"}
    hists = {"vllm:e2e_request_latency_seconds": _Hist(LAT_BUCKETS),
             "vllm:request_queue_time_seconds": _Hist(LAT_BUCKETS),
             "vllm:request_prefill_time_seconds": _Hist(LAT_BUCKETS),
             "vllm:request_decode_time_seconds": _Hist(LAT_BUCKETS),
             "vllm:time_to_first_token_seconds": _Hist(LAT_BUCKETS),
             names["itl"]: _Hist(ITL_BUCKETS),
             "vllm:request_prompt_tokens": _Hist(TOK_BUCKETS),
             "vllm:request_generation_tokens": _Hist(TOK_BUCKETS)}
    fams = {n: Family(n, "histogram") for n in hists}
    gauges = {n: Family(n, "gauge") for n in ("vllm:num_requests_running",
                                               "vllm:num_requests_waiting", names["kv"])}
    counters = {n: Family(n, "counter") for n in ("vllm:num_preemptions",
                                                   "vllm:request_success")}
    preempt, success = 0.0, {"stop": 0.0, "length": 0.0}
    for minute in range(minutes):
        load = after if minute >= change_min else base
        ts = (start + timedelta(minutes=minute)).timestamp()
        for _ in range(max(0, round(rng.gauss(load.rate * 60, math.sqrt(load.rate * 60))))):
            prompt = max(4, rng.lognormvariate(math.log(load.prompt), 0.5))
            output = max(1, rng.lognormvariate(math.log(load.output), 0.6))
            queue = rng.expovariate(1 / load.queue_s)
            prefill = prompt / 1500 * rng.uniform(0.8, 1.2) + 0.02  # chunked prefill under load
            itl = rng.uniform(0.018, 0.026) * (1 + 0.15 * (load.kv > 0.95) + prompt / 80000)
            decode = output * itl
            for name, value in (("vllm:e2e_request_latency_seconds", queue + prefill + decode),
                                ("vllm:request_queue_time_seconds", queue),
                                ("vllm:request_prefill_time_seconds", prefill),
                                ("vllm:request_decode_time_seconds", decode),
                                ("vllm:time_to_first_token_seconds", queue + prefill),
                                (names["itl"], itl), ("vllm:request_prompt_tokens", prompt),
                                ("vllm:request_generation_tokens", output)):
                hists[name].add(value)
            success["length" if rng.random() < 0.12 else "stop"] += 1
        preempt += rng.expovariate(1) * load.preempt_per_s * 60 if load.preempt_per_s else 0
        for name, h in hists.items():
            fams[name].observe_hist(ts, h.buckets, h.counts, h.sum)
        gauges["vllm:num_requests_running"].add(ts, {}, round(load.running * rng.uniform(.9, 1.1)))
        gauges["vllm:num_requests_waiting"].add(ts, {}, round(load.waiting * rng.uniform(.5, 1.5)))
        gauges[names["kv"]].add(ts, {}, min(1.0, load.kv * rng.uniform(0.97, 1.02)))
        counters["vllm:num_preemptions"].add(ts, {}, round(preempt))
        for reason, n in success.items():
            counters["vllm:request_success"].add(ts, {"finished_reason": reason}, n)
    return [*fams.values(), *gauges.values(), *counters.values()]


def _case(rng: random.Random, case_id: str, variant: int, cause: str) -> Case:
    model = rng.choice(MODELS)
    start = datetime(2026, rng.randint(1, 11), rng.randint(1, 27), rng.randint(0, 14), 0,
                     tzinfo=UTC)
    minutes = rng.choice((150, 180))
    change = rng.randint(int(minutes * 0.4), int(minutes * 0.65))
    base = Load(rate=rng.uniform(2, 5), prompt=rng.uniform(1200, 3000), output=rng.uniform(120,
                400), queue_s=rng.uniform(0.01, 0.05), kv=rng.uniform(0.3, 0.55), preempt_per_s=0,
                waiting=rng.uniform(0, 2), running=rng.uniform(20, 60))
    after = _after(base, cause, rng)
    labels = {"model_name": model} | ({"engine": "0"} if variant % 2 else {})
    fams = _simulate(rng, start, minutes, change, base, after, new_names=bool(variant % 2))
    files = {rng.choice(("metrics/vllm.om", "metrics/openmetrics.txt",
                         f"metrics/dump-{variant}.om")): render(fams, labels)}
    change_at = start + timedelta(minutes=change)
    if rng.random() < 0.5:
        files["config/engine_args.yaml"] = yaml.safe_dump({"revisions": [
            {"from": start.isoformat(), "args": ["--max-num-seqs", "256",
                                                 "--gpu-memory-utilization", "0.90"]},
            {"from": (change_at - timedelta(minutes=rng.randint(20, 40))).isoformat(),
             "args": ["--max-num-seqs", "256", "--gpu-memory-utilization", "0.90",
                      "--disable-log-requests"]}]})
    if rng.random() < 0.7:
        files["incident.yaml"] = yaml.safe_dump({"question": rng.choice(QUESTIONS).format(
            m=model.split("/")[-1]), "service": model, "kind": "latency"})
    notes = {"queueing": "arrival rate rose ~2x with the same lengths; queue time and the waiting "
                         "queue grew, KV cache well below full, no preemptions",
             "kv_cache_pressure": "KV cache near full with preemptions rising and waiting "
                                  "requests held back",
             "prompt_length": "prompt lengths grew ~3x; prefill and TTFT followed; ITL held",
             "output_length": "output lengths grew ~3x; decode grew while ITL held",
             "unknown": "nothing changed: same load, lengths and cache; no verdict to give"}[cause]
    if "config/engine_args.yaml" in files:
        notes += "; decoy: an unrelated engine flag (--disable-log-requests) changed before"
    return Case(expected=Expected(case_id=case_id, kind="latency", category=cause, notes=notes,
                                  change_at=None if cause == "unknown" else
                                  change_at.isoformat().replace("+00:00", "Z")),
                files=files)


def _maker(cause: str):  # type: ignore[no-untyped-def]
    return lambda rng, case_id, variant: _case(rng, case_id, variant, cause)


CAUSES = {c: (_maker(c), n) for c, n in (("queueing", 3), ("kv_cache_pressure", 3),
                                         ("prompt_length", 2), ("output_length", 2),
                                         ("unknown", 2))}
