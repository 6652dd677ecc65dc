"""The load model: Poisson arrivals, admission under max_num_seqs and a block-granular KV
cache, preemption by recompute, prefill and decode speeds, scraped every 15 s."""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from goodput_agent.evals.latency.spec import (
    BLOCK_TOKENS,
    MAX_MODEL_LEN,
    REQUEST_LATENCY_BUCKETS,
    SCRAPE_S,
    TICK_S,
    TOKEN_BUCKETS,
    TOKEN_LATENCY_BUCKETS,
    TTFT_BUCKETS,
    ModelSpec,
    Regime,
)


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
