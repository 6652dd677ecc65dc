"""Generate latency eval cases: a seeded load model of a vLLM service, scraped as Prometheus
would scrape it, for the question "why did inference latency rise?".

The model, per engine (one vLLM engine core; data-parallel engines are independent):
- Poisson arrivals; prompt and output lengths drawn from log-normal distributions (capped by
  `max_tokens` and `max_model_len`);
- admission in arrival order while fewer than `max_num_seqs` requests run and the KV cache
  (in 16-token blocks, sized from `gpu_memory_utilization`, tensor parallelism and the cache
  dtype) has room for the prompt;
- prefill at `prefill_tps` tokens/s in admission order; decode iterations whose time grows with
  the batch and the tokens in the cache, slowed by the share of the GPU prefill takes (chunked
  prefill shares iterations with decode);
- a full cache preempts the most recently admitted request (vLLM's RECOMPUTE: its KV is freed
  and it waits at the head of the queue to be prefilled again);
- 1-second ticks with sub-tick times for arrivals, first tokens and finishes; a restart drops
  what is in flight and resets the counters.
Each finished request is observed into histograms with vLLM's real bucket boundaries
(vllm/v1/metrics/loggers.py); gauges and counters are scraped every 15 s. The output is
OpenMetrics text with timestamps in seconds, each series strictly increasing in time, ending in
`# EOF` (what `promtool tsdb create-blocks-from openmetrics` backfills).

Deterministic: the same seed gives byte-identical files (fixed dates, seeded RNGs, gzip with no
timestamp).

    python -m goodput_agent.evals.latency_generator --out evals/latency_cases --seed 11
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import math
import random
import shutil
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

LATENCY_CATEGORIES = ("queueing", "kv_cache_pressure", "prompt_length", "output_length")
EXPECTED_FILE = "expected.json"
SCRAPE_S = 15
TICK_S = 1.0
BLOCK_TOKENS = 16
MAX_MODEL_LEN = 8192
BASE_TIME = datetime(2025, 6, 3, 8, 0, tzinfo=UTC)

# vLLM's bucket boundaries (vllm/v1/metrics/loggers.py)
REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
                           40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
TOKEN_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
                         2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)


def build_1_2_5_buckets(max_value: int) -> tuple[float, ...]:
    out, exponent = [], 0
    while True:
        for m in (1, 2, 5):
            v = m * 10 ** exponent
            if v > max_value:
                return tuple(float(b) for b in out)
            out.append(v)
        exponent += 1


TOKEN_BUCKETS = build_1_2_5_buckets(MAX_MODEL_LEN)

Names = Literal["new", "old", "both"]  # vLLM >= 0.11 | V0 engine | 0.9-0.10 (old and new)


# --------------------------------------------------------------------------- specs


class Regime(BaseModel):
    """The service and its load from some time on."""

    rate: float = 3.0  # arrivals per second (all engines together)
    prompt_median: float = 600.0
    prompt_sigma: float = 0.6
    output_median: float = 180.0
    output_sigma: float = 0.5
    max_tokens: int = 1024
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 8192
    gpu_memory_utilization: float = 0.9
    tensor_parallel_size: int = 1
    kv_cache_dtype: str = "auto"
    prefill_tps: float = 20000.0  # prompt tokens per second of GPU time
    itl_base_s: float = 0.020
    itl_per_seq_s: float = 0.00005
    itl_per_kv_token_s: float = 2e-8
    slowdown: float = 1.0  # multiplies decode iteration time (e.g. throttled clocks)

    def kv_blocks(self) -> int:
        """KV-cache blocks of one engine: an 8B model (16 GB of fp16 weights) on 48 GB GPUs."""
        gpu_gb, weights_gb, activations_gb = 48.0, 16.0, 2.0
        per_gpu = gpu_gb * self.gpu_memory_utilization - weights_gb / self.tensor_parallel_size \
            - activations_gb
        bytes_per_token = 131072 / (2 if self.kv_cache_dtype.startswith("fp8") else 1)
        tokens = max(per_gpu, 0.5) * 1e9 * self.tensor_parallel_size / bytes_per_token
        return int(tokens // BLOCK_TOKENS)

    def engine_args(self, model: str) -> list[str]:
        return ["vllm", "serve", model, "--max-num-seqs", str(self.max_num_seqs),
                "--max-num-batched-tokens", str(self.max_num_batched_tokens),
                "--gpu-memory-utilization", str(self.gpu_memory_utilization),
                "--tensor-parallel-size", str(self.tensor_parallel_size),
                "--max-model-len", str(MAX_MODEL_LEN), "--kv-cache-dtype", self.kv_cache_dtype,
                "--enable-chunked-prefill"]

    def cache_config(self) -> dict[str, str]:
        """`vllm:cache_config_info` labels (CacheConfig fields as strings)."""
        return {"block_size": str(BLOCK_TOKENS), "cache_dtype": self.kv_cache_dtype,
                "enable_prefix_caching": "False",
                "gpu_memory_utilization": str(self.gpu_memory_utilization),
                "num_gpu_blocks": str(self.kv_blocks()), "swap_space": "4"}


class ModelSpec(BaseModel):
    name: str
    before: Regime
    after: Regime | None = None  # None: no change
    change_s: float | None = None  # seconds from the start
    ramp_s: float = 0.0  # arrival rate moves linearly over this long
    restart: bool = False  # the engines restart at the change (counters reset)


class LatencyCaseSpec(BaseModel):
    case_id: str
    category: str  # a latency category, or "unknown" (no change / nothing in the taxonomy)
    variant: str
    seed: int = 11
    start: datetime
    duration_s: int = 3600
    names: Names = "new"
    engines: int = 1
    models: list[ModelSpec]  # the first is the service the question is about
    config_evidence: Literal["none", "args", "info", "both"] = "info"
    gpu_util: Literal["none", "flat", "up", "down"] = "none"  # DCGM decoy
    gpu_util_shift_s: float | None = None  # when the GPU utilization decoy moves
    user_windows: bool = False  # incident.yaml names the windows
    latency_steady: bool = False  # something changes, but not the service's latency
    decoys: list[str] = Field(default_factory=list)  # what a one-signal reading would follow
    misleading: bool = False
    notes: str = ""


class LatencyExpected(BaseModel):
    case_id: str
    kind: Literal["latency"] = "latency"
    category: str
    service: str
    change_at: str | None  # ISO 8601 UTC; None when latency did not change
    misleading: bool
    notes: str
    variant: str = ""
    names: str = "new"
    decoys: list[str] = Field(default_factory=list)


class LatencyCase(BaseModel):
    case_id: str
    path: Path
    expected: LatencyExpected
    files: list[str]


# --------------------------------------------------------------------------- the load model


class Hist:
    __slots__ = ("bounds", "counts", "total", "n")

    def __init__(self, bounds: tuple[float, ...]):
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, v: float, k: int = 1) -> None:
        self.counts[bisect_left(self.bounds, v)] += k
        self.total += v * k
        self.n += k

    def snapshot(self) -> tuple[tuple[int, ...], int, float]:
        cum, acc = [], 0
        for c in self.counts:
            acc += c
            cum.append(acc)
        return tuple(cum), self.n, self.total


HISTS = {"e2e": REQUEST_LATENCY_BUCKETS, "queue": REQUEST_LATENCY_BUCKETS,
         "prefill": REQUEST_LATENCY_BUCKETS, "decode": REQUEST_LATENCY_BUCKETS,
         "ttft": TTFT_BUCKETS, "itl": TOKEN_LATENCY_BUCKETS, "tpot": TOKEN_LATENCY_BUCKETS,
         "prompt": TOKEN_BUCKETS, "output": TOKEN_BUCKETS}
COUNTERS = ("preemptions", "stop", "length", "prompt_tokens", "generation_tokens")


class Req:
    __slots__ = ("arr", "p", "o", "sched", "first", "gen", "prefill_done", "recompute")

    def __init__(self, arr: float, p: int, o: int):
        self.arr, self.p, self.o = arr, p, o
        self.sched: float | None = None
        self.first: float | None = None
        self.gen = 0.0
        self.prefill_done = 0.0  # time its (re)prefill completes
        self.recompute = False


@dataclass
class Scrape:
    t: int
    hists: dict[str, tuple[tuple[int, ...], int, float]]
    counters: dict[str, float]
    running: int
    waiting: int
    kv_usage: float
    config: dict[str, str]


@dataclass
class Engine:
    """One vLLM engine core under load; `run` yields a scrape every SCRAPE_S seconds."""

    model: ModelSpec
    engines: int
    rng: random.Random
    t0: int
    duration_s: int
    hists: dict[str, Hist] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.hists = {k: Hist(b) for k, b in HISTS.items()}
        self.counters = dict.fromkeys(COUNTERS, 0.0)
        self.waiting: deque[Req] = deque()
        self.running: list[Req] = []
        self.prefill_cursor = 0.0

    def regime(self, t: float) -> Regime:
        m = self.model
        if m.after is None or m.change_s is None or t < m.change_s:
            return m.before
        return m.after

    def rate(self, t: float) -> float:
        m = self.model
        base = m.before.rate
        if m.after is not None and m.change_s is not None and t >= m.change_s:
            frac = 1.0 if m.ramp_s <= 0 else min(1.0, (t - m.change_s) / m.ramp_s)
            base = m.before.rate + (m.after.rate - m.before.rate) * frac
        return base / self.engines * (1 + 0.04 * math.sin(2 * math.pi * t / 1500.0))

    def _draw(self, reg: Regime) -> tuple[int, int]:
        o = min(reg.max_tokens, max(1, int(self.rng.lognormvariate(math.log(reg.output_median),
                                                                   reg.output_sigma))))
        p = min(MAX_MODEL_LEN - reg.max_tokens, max(1, int(self.rng.lognormvariate(
            math.log(reg.prompt_median), reg.prompt_sigma))))
        return p, o

    def run(self) -> Iterator[Scrape]:
        m = self.model
        restart_at = m.change_s if m.restart else None
        down_until = (restart_at + 60.0) if restart_at is not None else None
        next_arrival = self.rng.expovariate(self.rate(0.0))
        t = 0.0
        while t < self.duration_s:
            reg = self.regime(t)
            if restart_at is not None and restart_at <= t < down_until:
                if t - restart_at < TICK_S:
                    self._reset()  # the process is gone; clients' requests fail
                while next_arrival < t + TICK_S:
                    next_arrival += self.rng.expovariate(self.rate(next_arrival))
                t += TICK_S
                continue
            while next_arrival < t + TICK_S:
                p, o = self._draw(reg)
                self.waiting.append(Req(next_arrival, p, o))
                next_arrival += self.rng.expovariate(self.rate(next_arrival))
            self._tick(t, reg)
            t += TICK_S
            if int(t) % SCRAPE_S == 0 and not (restart_at is not None
                                               and restart_at <= t < down_until):
                yield self._scrape(int(t), reg)

    def _blocks(self, tokens: float) -> int:
        return -(-int(tokens) // BLOCK_TOKENS)

    def _tick(self, t: float, reg: Regime) -> None:
        end = t + TICK_S
        capacity = reg.kv_blocks()
        used = sum(self._blocks(r.p + r.gen) for r in self.running)
        h = self.hists
        busy = max(0.0, min(self.prefill_cursor, end) - t)  # prefill carried over
        # admission: first come, first served, while the batch and the cache have room
        while self.waiting and len(self.running) < reg.max_num_seqs:
            r = self.waiting[0]
            need = self._blocks(r.p + r.gen)
            if used + need > capacity * 0.99:  # vLLM keeps a small watermark free
                break
            self.waiting.popleft()
            used += need
            now = max(r.arr, t)
            if r.sched is None:
                r.sched = now
            tokens = r.p + (r.gen if r.recompute else 0)
            begin = max(self.prefill_cursor, now)
            self.prefill_cursor = begin + tokens / reg.prefill_tps
            busy += max(0.0, min(self.prefill_cursor, end) - max(begin, t))
            r.prefill_done = self.prefill_cursor
            self.counters["prompt_tokens"] += tokens
            if r.first is None:
                r.first = r.prefill_done
                r.gen = 1.0
                self.counters["generation_tokens"] += 1
                h["ttft"].observe(r.first - r.arr)
            self.running.append(r)
        share = min(0.8, busy / TICK_S)
        decoding = [r for r in self.running if r.prefill_done < end]
        kv_tokens = sum(r.p + r.gen for r in self.running)
        itl = (reg.itl_base_s + reg.itl_per_seq_s * len(decoding)
               + reg.itl_per_kv_token_s * kv_tokens) * reg.slowdown / (1.0 - share)
        finished = []
        for r in decoding:
            begin = max(t, r.prefill_done)
            tokens = (end - begin) / itl
            before = r.gen
            if before + tokens >= r.o:
                done = begin + (r.o - before) * itl
                made = r.o - int(before)
                r.gen = float(r.o)
                finished.append((r, done))
            else:
                r.gen = before + tokens
                made = int(r.gen) - int(before)
            if made > 0:
                h["itl"].observe(itl, made)
                self.counters["generation_tokens"] += made
        for r, done in finished:
            self.running.remove(r)
            self._finish(r, done, reg)
        used = sum(self._blocks(r.p + r.gen) for r in self.running)
        while used > capacity and len(self.running) > 1:
            victim = self.running.pop()  # the most recently admitted
            used -= self._blocks(victim.p + victim.gen)
            victim.recompute = True
            self.waiting.appendleft(victim)
            self.counters["preemptions"] += 1
        self._used, self._capacity = used, capacity

    def _finish(self, r: Req, done: float, reg: Regime) -> None:
        h = self.hists
        assert r.sched is not None and r.first is not None
        h["e2e"].observe(done - r.arr)
        h["queue"].observe(r.sched - r.arr)
        h["prefill"].observe(r.first - r.sched)
        h["decode"].observe(done - r.first)
        if r.o > 1:
            h["tpot"].observe((done - r.first) / (r.o - 1))
        h["prompt"].observe(r.p)
        h["output"].observe(r.o)
        self.counters["length" if r.o >= reg.max_tokens else "stop"] += 1

    def _scrape(self, t: int, reg: Regime) -> Scrape:
        return Scrape(t=self.t0 + t, hists={k: v.snapshot() for k, v in self.hists.items()},
                      counters=dict(self.counters), running=len(self.running),
                      waiting=len(self.waiting),
                      kv_usage=self._used / self._capacity if self._capacity else 0.0,
                      config=reg.cache_config())


# --------------------------------------------------------------------------- OpenMetrics


def _num(v: float) -> str:
    if isinstance(v, int):
        return f"{v}.0"
    r = round(v, 4)
    return repr(float(r)) if r != int(r) else f"{int(r)}.0"


def _le(b: float) -> str:
    return repr(float(b))


def _labels(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}"


@dataclass
class _Family:
    name: str
    kind: str  # histogram | counter | gauge
    help: str
    series: dict[tuple[tuple[str, str], ...], list[tuple[int, Any]]] = field(default_factory=dict)


def _families(names: Names) -> list[tuple[str, str, str, str]]:
    """(key, metric, kind, help) for the names a vLLM version exports."""
    kv = {"new": ["vllm:kv_cache_usage_perc"], "old": ["vllm:gpu_cache_usage_perc"],
          "both": ["vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"]}[names]
    itl = {"new": ["vllm:inter_token_latency_seconds"],
           "old": ["vllm:time_per_output_token_seconds"],
           "both": ["vllm:time_per_output_token_seconds",
                    "vllm:inter_token_latency_seconds"]}[names]
    out = [("running", "vllm:num_requests_running", "gauge",
            "Number of requests in model execution batches."),
           ("waiting", "vllm:num_requests_waiting", "gauge",
            "Number of requests waiting to be processed.")]
    out += [("kv", k, "gauge", "KV-cache usage. 1 means 100 percent usage.") for k in kv]
    out += [("preemptions", "vllm:num_preemptions", "counter",
             "Cumulative number of preemption from the engine."),
            ("prompt_tokens", "vllm:prompt_tokens", "counter",
             "Number of prefill tokens processed."),
            ("generation_tokens", "vllm:generation_tokens", "counter",
             "Number of generation tokens processed."),
            ("success", "vllm:request_success", "counter",
             "Count of successfully processed requests."),
            ("prompt", "vllm:request_prompt_tokens", "histogram",
             "Number of prefill tokens processed."),
            ("output", "vllm:request_generation_tokens", "histogram",
             "Number of generation tokens processed."),
            ("ttft", "vllm:time_to_first_token_seconds", "histogram",
             "Histogram of time to first token in seconds.")]
    out += [("itl", k, "histogram", "Histogram of inter-token latency in seconds.") for k in itl]
    if names == "new":
        out.append(("tpot", "vllm:request_time_per_output_token_seconds", "histogram",
                    "Histogram of time_per_output_token_seconds per request."))
    out += [("e2e", "vllm:e2e_request_latency_seconds", "histogram",
             "Histogram of e2e request latency in seconds."),
            ("queue", "vllm:request_queue_time_seconds", "histogram",
             "Histogram of time spent in WAITING phase for request."),
            ("prefill", "vllm:request_prefill_time_seconds", "histogram",
             "Histogram of time spent in PREFILL phase for request."),
            ("decode", "vllm:request_decode_time_seconds", "histogram",
             "Histogram of time spent in DECODE phase for request."),
            ("config", "vllm:cache_config_info", "gauge",
             "Information of the LLMEngine CacheConfig")]
    return out


HISTS_BY_NAME = {metric: HISTS[key] for key, metric, kind, _ in _families("both") + _families("new")
                 if kind == "histogram"}


def _collect(spec: LatencyCaseSpec) -> list[_Family]:
    fams = {metric: _Family(metric, kind, text) for _, metric, kind, text in _families(spec.names)}
    t0 = int(spec.start.timestamp())
    for mi, model in enumerate(spec.models):
        for e in range(spec.engines):
            base = [("model_name", model.name)] + ([] if spec.names == "old"
                                                   else [("engine", str(e))])
            rng = random.Random(_seed(spec.seed, spec.case_id, mi, e))
            engine = Engine(model, spec.engines, rng, t0, spec.duration_s)
            for sc in engine.run():
                for key, metric, kind, _ in _families(spec.names):
                    fam = fams[metric]
                    if key == "success":
                        for reason in ("length", "stop"):
                            labels = tuple(base + [("finished_reason", reason)])
                            fam.series.setdefault(labels, []).append((sc.t, sc.counters[reason]))
                    elif key == "config":
                        labels = tuple([*base, *sorted(sc.config.items())])
                        fam.series.setdefault(labels, []).append((sc.t, 1))
                    elif kind == "histogram":
                        fam.series.setdefault(tuple(base), []).append((sc.t, sc.hists[key]))
                    elif kind == "counter":
                        fam.series.setdefault(tuple(base), []).append((sc.t, sc.counters[key]))
                    else:
                        value = {"running": sc.running, "waiting": sc.waiting,
                                 "kv": sc.kv_usage}[key]
                        fam.series.setdefault(tuple(base), []).append((sc.t, value))
    return list(fams.values())


def _write_family(out: io.StringIO, fam: _Family) -> None:
    out.write(f"# TYPE {fam.name} {fam.kind}\n# HELP {fam.name} {fam.help}\n")
    for labels, points in fam.series.items():
        pairs = list(labels)
        if fam.kind == "counter":
            lab = _labels(pairs)
            for t, v in points:
                out.write(f"{fam.name}_total{lab} {_num(float(v))} {t}\n")
        elif fam.kind == "gauge":
            lab = _labels(pairs)
            for t, v in points:
                out.write(f"{fam.name}{lab} {_num(float(v))} {t}\n")
        else:
            bounds = HISTS_BY_NAME[fam.name]
            les = [_labels([*pairs, ("le", _le(b))]) for b in bounds]
            les.append(_labels([*pairs, ("le", "+Inf")]))
            lab = _labels(pairs)
            for t, (cum, n, total) in points:
                for le, c in zip(les, cum, strict=True):
                    out.write(f"{fam.name}_bucket{le} {c}.0 {t}\n")
                out.write(f"{fam.name}_count{lab} {n}.0 {t}\n")
                out.write(f"{fam.name}_sum{lab} {_num(total)} {t}\n")


def render_vllm_metrics(spec: LatencyCaseSpec) -> str:
    """The service's /metrics, scraped every SCRAPE_S seconds, as one OpenMetrics text."""
    out = io.StringIO()
    for fam in _collect(spec):
        _write_family(out, fam)
    out.write("# EOF\n")
    return out.getvalue()


def render_dcgm_metrics(spec: LatencyCaseSpec) -> str | None:
    """DCGM_FI_DEV_GPU_UTIL of the service's GPUs: a decoy that moves the wrong way (or not at
    all) when latency changes, or moves when latency does not."""
    if spec.gpu_util == "none":
        return None
    rng = random.Random(_seed(spec.seed, spec.case_id, "dcgm"))
    model = spec.models[0]
    gpus = spec.engines * model.before.tensor_parallel_size
    shift_at = spec.gpu_util_shift_s
    shift = {"flat": 0.0, "up": 32.0, "down": -34.0}[spec.gpu_util]
    out = io.StringIO()
    out.write("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization "
              "(in %).\n")
    t0 = int(spec.start.timestamp())
    for g in range(gpus):
        uuid = hashlib.sha256(f"{spec.case_id}-{g}".encode()).hexdigest()
        labels = _labels([("gpu", str(g)), ("UUID", f"GPU-{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-"
                                                     f"{uuid[16:20]}-{uuid[20:32]}"),
                          ("device", f"nvidia{g}"), ("modelName", "NVIDIA L40S"),
                          ("Hostname", f"{model.name}-0")])
        for t in range(SCRAPE_S, spec.duration_s + 1, SCRAPE_S):
            v = 58.0 + rng.gauss(0, 4) + (shift if shift_at is not None and t >= shift_at else 0)
            out.write(f"DCGM_FI_DEV_GPU_UTIL{labels} {max(0, min(100, round(v)))} {t0 + t}\n")
    out.write("# EOF\n")
    return out.getvalue()


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


def _gz(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as fh:
        fh.write(text.encode())
    return buf.getvalue()


def write_case_series(spec: LatencyCaseSpec, path: Path, which: Literal["vllm", "dcgm"] = "vllm",
                      compress: bool | None = None) -> Path | None:
    """Write one case's series as OpenMetrics text (gzipped when the path ends in .gz, or when
    `compress` says so): what a test backfills into a real Prometheus."""
    text = render_vllm_metrics(spec) if which == "vllm" else render_dcgm_metrics(spec)
    if text is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress if compress is not None else path.suffix == ".gz":
        path.write_bytes(_gz(text))
    else:
        path.write_text(text)
    return path


# --------------------------------------------------------------------------- bundles


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def change_time(spec: LatencyCaseSpec) -> datetime | None:
    """When the service's latency changes (None: it does not, even if something else does)."""
    m = spec.models[0]
    if m.after is None or m.change_s is None or spec.latency_steady:
        return None
    return spec.start + timedelta(seconds=m.change_s)


def _revisions(spec: LatencyCaseSpec) -> list[dict[str, Any]]:
    m = spec.models[0]
    revs = [{"from": _iso(spec.start - timedelta(days=2)),
             "args": m.before.engine_args(m.name)}]
    if m.after is not None and m.change_s is not None and m.restart:
        revs.append({"from": _iso(spec.start + timedelta(seconds=m.change_s)),
                     "args": m.after.engine_args(m.name)})
    return revs


def user_windows(spec: LatencyCaseSpec) -> tuple[tuple[datetime, datetime],
                                                  tuple[datetime, datetime]] | None:
    c = change_time(spec)
    if not spec.user_windows or c is None:
        return None
    return ((c - timedelta(minutes=20), c - timedelta(minutes=5)),
            (c + timedelta(minutes=5), c + timedelta(minutes=20)))


def render_latency_case(spec: LatencyCaseSpec, out_dir: Path,
                        with_expected: bool = True) -> LatencyCase:
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / "incident.yaml").exists():
        raise FileExistsError(f"{out_dir}: not empty and not a latency case")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    service = spec.models[0].name
    end = spec.start + timedelta(seconds=spec.duration_s)
    incident: dict[str, Any] = {
        "question": f"why did inference latency of {service} rise?",
        "kind": "latency", "service": service,
        "window": {"start": _iso(spec.start), "end": _iso(end)},
    }
    uw = user_windows(spec)
    if uw:
        (b0, b1), (i0, i1) = uw
        incident["baseline"] = {"start": _iso(b0), "end": _iso(b1)}
        incident["incident"] = {"start": _iso(i0), "end": _iso(i1)}
    (out_dir / "incident.yaml").write_text(yaml.safe_dump(incident, sort_keys=False))
    files = ["incident.yaml"]
    write_case_series(spec, out_dir / "metrics" / "vllm.om.gz")
    files.append("metrics/vllm.om.gz")
    if write_case_series(spec, out_dir / "metrics" / "dcgm.om.gz", "dcgm"):
        files.append("metrics/dcgm.om.gz")
    if spec.config_evidence in ("args", "both"):
        (out_dir / "config").mkdir()
        doc = {"revisions": _revisions(spec)}
        (out_dir / "config" / "engine_args.yaml").write_text(
            "# engine arguments per deployment revision (from the pod spec's args)\n"
            + yaml.safe_dump(doc, sort_keys=False))
        files.append("config/engine_args.yaml")
    c = change_time(spec)
    decoys = [d for d in (f"gpu_util_{spec.gpu_util}" if spec.gpu_util in ("up", "down")
                          else "", "second_model" if len(spec.models) > 1 else "") if d]
    decoys += [d for d in spec.decoys if d not in decoys]
    expected = LatencyExpected(case_id=spec.case_id, category=spec.category, service=service,
                               change_at=_iso(c) if c else None, misleading=spec.misleading,
                               notes=spec.notes, variant=spec.variant, names=spec.names,
                               decoys=decoys)
    if with_expected:
        (out_dir / EXPECTED_FILE).write_text(expected.model_dump_json(indent=2) + "\n")
        files.append(EXPECTED_FILE)
    return LatencyCase(case_id=spec.case_id, path=out_dir, expected=expected, files=files)


# --------------------------------------------------------------------------- the suite


def plan_latency_suite(seed: int = 11) -> list[LatencyCaseSpec]:
    """The shipped recipes: each cause and "no change", with name, label, config and decoy
    variants. Change times are drawn from the seed."""
    rng = random.Random(seed)
    specs: list[LatencyCaseSpec] = []

    def add(slug: str, category: str, before: Regime, after: Regime | None, *,
            ramp_s: float = 0.0, restart: bool = False, second: ModelSpec | None = None,
            **kw: Any) -> None:
        i = len(specs) + 1
        change_s = float(rng.randrange(1620, 2400, 15)) if after is not None else None
        model = ModelSpec(name=kw.pop("model", "llama-3.1-8b"), before=before, after=after,
                          change_s=change_s, ramp_s=ramp_s, restart=restart)
        models = [model] + ([second] if second else [])
        if kw.get("gpu_util") in ("up", "down") and "gpu_util_shift_s" not in kw:
            kw["gpu_util_shift_s"] = change_s if change_s else float(rng.randrange(1620, 2400, 15))
        specs.append(LatencyCaseSpec(case_id=f"l{i:02d}-{slug}", category=category,
                                     variant=slug, seed=seed,
                                     start=BASE_TIME + timedelta(hours=3 * i), models=models,
                                     **kw))

    base = Regime()
    busy = Regime(rate=3.8, max_num_seqs=24)  # ~80% of what 24 slots serve
    rag = Regime(prompt_median=800, output_median=60)  # long-context traffic, short answers

    # queueing: more arrivals than the batch limit can serve, or a lower limit
    add("queueing-arrival-surge", "queueing", busy, busy.model_copy(update={"rate": 5.8}),
        notes="arrivals 3.8 -> 5.8 req/s against max_num_seqs 24: the batch is full and the "
              "waiting queue grows; lengths and the KV cache are unchanged")
    add("queueing-old-names", "queueing", busy, busy.model_copy(update={"rate": 5.6}),
        names="old", notes="V0 metric names (gpu_cache_usage_perc, time_per_output_token)")
    add("queueing-max-num-seqs-lowered", "queueing", Regime(rate=5.0, max_num_seqs=128),
        Regime(rate=5.0, max_num_seqs=20), restart=True, config_evidence="both",
        notes="a redeploy lowered --max-num-seqs 128 -> 20: the same load now queues")
    add("queueing-gpu-util-falls", "queueing", busy, busy.model_copy(update={"rate": 6.0}),
        gpu_util="down", misleading=True,
        notes="GPU utilization falls as latency rises (a decoy): the queue is the cause")
    add("queueing-two-engines", "queueing", Regime(rate=7.6, max_num_seqs=24),
        Regime(rate=11.5, max_num_seqs=24), engines=2,
        notes="data parallel: two engines, the sum of their histograms")
    add("queueing-both-names-two-models", "queueing", busy, busy.model_copy(update={"rate": 5.7}),
        names="both", second=ModelSpec(name="qwen2.5-7b", before=base,
                                       after=base.model_copy(update={"prompt_median": 2000}),
                                       change_s=1500.0),
        misleading=True,
        notes="vLLM 0.10 exports old and new names; a second model's prompts grow at another "
              "time (a decoy outside the service)")
    add("queueing-ramp", "queueing", busy, busy.model_copy(update={"rate": 5.8}), ramp_s=240.0,
        notes="arrivals ramp up over 4 minutes")
    add("queueing-user-windows", "queueing", busy, busy.model_copy(update={"rate": 5.8}),
        user_windows=True, notes="the user names the windows (incident.yaml)")

    # kv_cache_pressure: the cache is the limit, preemptions rise
    kvb = Regime(rate=4.0, max_num_seqs=256, prompt_median=1500, output_median=400)
    add("kv-gpu-memory-lowered-args", "kv_cache_pressure", kvb,
        kvb.model_copy(update={"gpu_memory_utilization": 0.5}), restart=True,
        config_evidence="both",
        notes="--gpu-memory-utilization 0.9 -> 0.5 at a redeploy: the KV cache shrinks, "
              "requests are preempted; raising max_num_seqs would not help")
    add("kv-num-gpu-blocks-info-only", "kv_cache_pressure", kvb,
        kvb.model_copy(update={"gpu_memory_utilization": 0.52}), restart=True,
        config_evidence="info",
        notes="only vllm:cache_config_info shows the change (num_gpu_blocks falls)")
    add("kv-arrivals-with-high-batch-limit", "kv_cache_pressure",
        Regime(rate=1.5, max_num_seqs=512, prompt_median=2000, output_median=500,
               gpu_memory_utilization=0.7),
        Regime(rate=3.2, max_num_seqs=512, prompt_median=2000, output_median=500,
               gpu_memory_utilization=0.7), misleading=True, config_evidence="both",
        decoys=["arrival_rate_rise"],
        notes="arrivals doubled, but the batch limit is far away: the KV cache fills, "
              "preemptions rise; a naive reading says queueing")
    add("kv-old-names", "kv_cache_pressure", kvb,
        kvb.model_copy(update={"gpu_memory_utilization": 0.5}), restart=True, names="old",
        config_evidence="args", notes="V0 names (vllm:gpu_cache_usage_perc)")
    add("kv-gpu-util-rises", "kv_cache_pressure", kvb,
        kvb.model_copy(update={"gpu_memory_utilization": 0.5}), restart=True,
        gpu_util="up", misleading=True, config_evidence="none",
        notes="GPU utilization rises (a decoy suggesting compute saturation); no config file")
    add("kv-two-engines", "kv_cache_pressure", kvb.model_copy(update={"rate": 8.0}),
        kvb.model_copy(update={"rate": 8.0, "gpu_memory_utilization": 0.5}), restart=True,
        engines=2, notes="two engines, both short of KV cache")
    add("kv-tensor-parallel-halved", "kv_cache_pressure",
        kvb.model_copy(update={"tensor_parallel_size": 2, "gpu_memory_utilization": 0.6,
                               "rate": 5.0}),
        kvb.model_copy(update={"tensor_parallel_size": 1, "gpu_memory_utilization": 0.6,
                               "rate": 5.0}), restart=True, config_evidence="args",
        notes="--tensor-parallel-size 2 -> 1: half the GPUs, far less KV cache")
    add("kv-cache-dtype-fp8-dropped", "kv_cache_pressure",
        kvb.model_copy(update={"kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.55,
                               "rate": 2.5}),
        kvb.model_copy(update={"kv_cache_dtype": "auto", "gpu_memory_utilization": 0.55,
                               "rate": 2.5}), restart=True, config_evidence="info",
        notes="--kv-cache-dtype fp8 -> auto: twice the bytes per token")

    # prompt_length: longer prompts drive prefill and TTFT
    add("prompt-3x", "prompt_length", rag, rag.model_copy(update={"prompt_median": 2800}),
        notes="prompts 3.5x longer: prefill and TTFT rise, decode per token barely")
    add("prompt-old-names", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 3000}), names="old", notes="V0 names")
    add("prompt-second-model-decoy", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 2900}),
        second=ModelSpec(name="mistral-7b", before=busy,
                         after=busy.model_copy(update={"rate": 7.0}), change_s=1200.0),
        misleading=True, notes="another model on the same Prometheus queues at another time")
    add("prompt-gpu-util-up", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 2800}), gpu_util="up", misleading=True,
        notes="GPU utilization rises with the change (looks like compute saturation)")
    add("prompt-two-engines", "prompt_length", rag.model_copy(update={"rate": 6.0}),
        rag.model_copy(update={"rate": 6.0, "prompt_median": 2800}), engines=2,
        notes="two engines")
    add("prompt-unrelated-config-change", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 2900, "max_num_batched_tokens": 16384}),
        restart=True, config_evidence="both", misleading=True, decoys=["config_change"],
        notes="a redeploy raised --max-num-batched-tokens at the same time; the config diff "
              "is not the cause")
    add("prompt-moderate", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 1800}), names="both",
        notes="prompts ~2x longer")

    # output_length: longer generations drive e2e but not per-token latency
    add("output-3x", "output_length", base, base.model_copy(update={"output_median": 540}),
        notes="outputs 3x longer: decode time and e2e rise, inter-token latency barely")
    add("output-old-names", "output_length", base,
        base.model_copy(update={"output_median": 500}), names="old", notes="V0 names")
    add("output-gpu-util-down", "output_length", base,
        base.model_copy(update={"output_median": 520}), gpu_util="down", misleading=True,
        notes="GPU utilization falls (a decoy)")
    add("output-two-engines", "output_length", base.model_copy(update={"rate": 6.0}),
        base.model_copy(update={"rate": 6.0, "output_median": 520}), engines=2,
        notes="two engines")
    add("output-both-names", "output_length", base,
        base.model_copy(update={"output_median": 480}), names="both", notes="old and new names")
    add("output-unrelated-config-change", "output_length", base,
        base.model_copy(update={"output_median": 520, "gpu_memory_utilization": 0.92}),
        restart=True, config_evidence="args", misleading=True, decoys=["config_change"],
        notes="a redeploy raised --gpu-memory-utilization at the same time (more KV cache): "
              "not the cause")
    add("output-second-model", "output_length", base,
        base.model_copy(update={"output_median": 520}),
        second=ModelSpec(name="qwen2.5-7b", before=kvb,
                         after=kvb.model_copy(update={"gpu_memory_utilization": 0.5}),
                         change_s=1600.0, restart=True),
        notes="a second model runs short of KV cache at another time (a decoy)")

    # no change, and a change the four causes do not explain
    add("no-change-gpu-util-jumps", "unknown", base, None, gpu_util="up", misleading=True,
        notes="latency is steady; GPU utilization jumps (a decoy)")
    add("no-change-steady", "unknown", base, None, notes="nothing changes")
    add("no-change-old-names", "unknown", busy.model_copy(update={"rate": 3.0}), None,
        names="old", notes="steady, V0 names")
    add("no-change-restart", "unknown", base, base.model_copy(), restart=True,
        config_evidence="both", latency_steady=True,
        notes="a restart with the same config: counters reset, latency unchanged")
    add("no-change-config-change", "unknown", base,
        base.model_copy(update={"max_num_seqs": 128}), restart=True, config_evidence="both",
        latency_steady=True, misleading=True, decoys=["config_change"],
        notes="--max-num-seqs 64 -> 128 at a redeploy; latency unchanged")
    add("decode-slower-per-token", "unknown", base, base.model_copy(update={"slowdown": 1.8}),
        gpu_util="flat", notes="every decode iteration is 1.8x slower (throttled clocks or a "
                               "noisy neighbour) with the same load: none of the four causes")
    return specs


def latency_spec(case_id: str, seed: int = 11) -> LatencyCaseSpec:
    """One shipped recipe by its id (or a unique part of it)."""
    found = [s for s in plan_latency_suite(seed) if case_id in s.case_id]
    if len(found) != 1:
        raise KeyError(f"{case_id!r} names {len(found)} latency cases")
    return found[0]


def suite_index(specs: list[LatencyCaseSpec], seed: int) -> str:
    """suite.json: the cases, their answers' headlines and what makes them hard."""
    cases = []
    for spec in specs:
        c = change_time(spec)
        cases.append({"case_id": spec.case_id, "category": spec.category,
                      "change_at": _iso(c) if c else None, "misleading": spec.misleading,
                      "variant": spec.variant})
    return json.dumps({"seed": seed, "count": len(specs), "cases": cases}, indent=2) + "\n"


def generate_latency_suite(out_dir: Path, seed: int = 11) -> list[LatencyCase]:
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = plan_latency_suite(seed)
    cases = [render_latency_case(spec, out_dir / spec.case_id) for spec in specs]
    (out_dir / "suite.json").write_text(suite_index(specs, seed))
    return cases


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "latency_cases")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--only", help="generate only the cases whose id contains this")
    args = ap.parse_args(argv)
    if args.only:
        for spec in plan_latency_suite(args.seed):
            if args.only in spec.case_id:
                render_latency_case(spec, args.out / spec.case_id)
        return
    cases = generate_latency_suite(args.out, args.seed)
    print(f"wrote {len(cases)} latency cases to {args.out}")


if __name__ == "__main__":
    main()
