"""The comparison of a baseline and an incident window, with the numbers named, and the
metric evidence a latency verdict cites.
"""

from __future__ import annotations

import math

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.metrics.source import Selector, TimeWindow

from .measure import Ask
from .model import WindowStats

RISE = 1.2  # an incident/baseline latency ratio below this is not a rise
LENGTH_RISE = 1.3  # a mean length ratio that counts as longer requests
KV_FULL_MAX, KV_FULL_MEAN = 0.95, 0.85
_PHASES = ("queue", "prefill", "decode")


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    if b <= 0:
        return None if a <= 0 else math.inf
    return a / b


def fmt(v: float | None, unit: str = "s") -> str:
    if v is None:
        return "n/a"
    if unit == "s":
        return f"{v * 1000:.0f} ms" if abs(v) < 1 else f"{v:.2f} s"
    if unit == "%":
        return f"{v * 100:.0f}%"
    if unit == "/s":
        return f"{v:.3g}/s"
    return f"{v:.0f}{unit}" if abs(v) >= 100 else f"{v:.3g}{unit}"


def _when(w: TimeWindow) -> str:
    if w.start.date() == w.end.date():
        return f"{w.start:%H:%M}-{w.end:%H:%M} UTC"
    return f"{w.start:%Y-%m-%d %H:%M}-{w.end:%Y-%m-%d %H:%M} UTC"


class Facts:
    """The comparison of the two windows, with the numbers named."""

    def __init__(self, b: WindowStats, i: WindowStats):
        self.b, self.i = b, i
        self.e2e_p50 = ratio(i.e2e.p50, b.e2e.p50)
        self.e2e_p90 = ratio(i.e2e.p90, b.e2e.p90)
        self.prompt = ratio(i.prompt_tokens.mean, b.prompt_tokens.mean) or \
            ratio(i.prompt_tokens.p50, b.prompt_tokens.p50)
        self.output = ratio(i.output_tokens.mean, b.output_tokens.mean) or \
            ratio(i.output_tokens.p50, b.output_tokens.p50)
        self.prefill_p90 = ratio(i.prefill.p90, b.prefill.p90)
        self.ttft_p90 = ratio(i.ttft.p90, b.ttft.p90)
        self.decode_p90 = ratio(i.decode.p90, b.decode.p90)
        self.itl = ratio(i.itl.mean, b.itl.mean) or ratio(i.itl.p50, b.itl.p50)
        self.rate = ratio(i.arrival_rate_est, b.arrival_rate_est) or \
            ratio(i.request_rate, b.request_rate)
        self.delta = {p: _sub(getattr(i, p).mean, getattr(b, p).mean) for p in _PHASES}
        self.e2e_delta = _sub(i.e2e.mean, b.e2e.mean)
        self.max_num_seqs = _int(i.config.get("max_num_seqs"))

    def rose(self) -> bool:
        return any(r is not None and r >= RISE for r in (self.e2e_p50, self.e2e_p90))

    def kv_full(self) -> bool:
        i = self.i
        return (i.kv_usage_max is not None and i.kv_usage_max >= KV_FULL_MAX) or \
            (i.kv_usage_mean is not None and i.kv_usage_mean >= KV_FULL_MEAN)

    def preemptions_up(self) -> bool:
        b, i = self.b.preemption_rate or 0.0, self.i.preemption_rate
        return i is not None and i >= 0.01 and i > 2 * b + 0.005

    def share(self, phase: str) -> float | None:
        """The phase's part of the rise in mean e2e (means add up; percentiles do not)."""
        d, total = self.delta.get(phase), self.e2e_delta
        if d is None or total is None or total <= 0:
            return None
        return d / total

    def waiting_grew(self) -> bool:
        b, i = self.b, self.i
        return i.waiting_mean is not None and i.waiting_mean >= 1 and \
            i.waiting_mean > (b.waiting_mean or 0.0) + 0.5

    def at_batch_limit(self) -> bool:
        """Running requests reach max_num_seqs (known from the configuration)."""
        i = self.i
        return self.max_num_seqs is not None and i.running_max is not None and \
            i.running_max >= 0.95 * self.max_num_seqs

    def below_batch_limit(self) -> bool:
        i = self.i
        return self.max_num_seqs is not None and i.running_max is not None and \
            i.running_max < 0.8 * self.max_num_seqs

    def queue_grew(self) -> bool:
        b, i = self.b, self.i
        q_ok = i.queue.p90 is not None and b.queue.p90 is not None and \
            i.queue.p90 >= max(2 * b.queue.p90, b.queue.p90 + 0.5)
        share = self.share("queue")
        return q_ok and self.waiting_grew() and (share is None or share >= 0.25)

    def longer_prompts(self) -> bool:
        return self.prompt is not None and self.prompt >= LENGTH_RISE and any(
            r is not None and r >= LENGTH_RISE for r in (self.prefill_p90, self.ttft_p90))

    def longer_outputs(self) -> bool:
        return self.output is not None and self.output >= LENGTH_RISE and \
            self.decode_p90 is not None and self.decode_p90 >= LENGTH_RISE


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _int(v: str | None) -> int | None:
    try:
        return int(float(v)) if v is not None else None
    except ValueError:
        return None


class Evidence:
    def __init__(self, ask: Ask, names: dict[str, str | None], labels: dict[str, str],
                 b: WindowStats, i: WindowStats):
        self.ask, self.names, self.labels, self.b, self.i = ask, names, labels, b, i
        self.events: list[Event] = []

    def add(self, key: str, expr: str, vb: float | None, vi: float | None, unit: str,
            category: str | None, primary: bool = True) -> None:
        metric = self.names.get(key) or key
        sel = Selector(metric=metric, labels=self.labels).promql()
        text = expr.format(m=sel)
        span = (f"{text} incident {_when(self.i.window)} = {fmt(vi, unit)} vs baseline "
                f"{_when(self.b.window)} = {fmt(vb, unit)}")
        self.events.append(Event(
            kind=EventKind.metric_series, role=Role.primary if primary else Role.context,
            category=category, ts=self.i.window.start, clock=Clock.absolute,
            summary=span, locator=Locator(path=self.ask.origin(metric), line_start=0,
                                          line_end=0, span=span),
            excerpt=span, detail={"metric": metric, "query": text, "baseline": vb,
                                  "incident": vi}))

    def for_verdict(self, category: str | None) -> list[Event]:
        """The verdict's own numbers first, as primary evidence; what was looked at for the
        other causes follows as context."""
        e2e = self.names.get("e2e")
        own = sorted((e for e in self.events if e.category == category and
                      e.role == Role.primary), key=lambda e: e.detail["metric"] != e2e)
        rest = [e.model_copy(update={"role": Role.context, "category": None})
                for e in self.events if not (e.category == category and e.role == Role.primary)]
        return own + rest


def headline(ev: Evidence, f: Facts, category: str | None) -> None:
    ev.add("e2e", "histogram_quantile(0.9, {m})", f.b.e2e.p90, f.i.e2e.p90, "s", category)
    ev.add("e2e", "histogram_quantile(0.5, {m})", f.b.e2e.p50, f.i.e2e.p50, "s", category)
