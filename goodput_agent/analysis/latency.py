"""Why did an LLM service's latency rise: queueing, KV-cache pressure, longer prompts or longer
outputs. Works on any MetricsSource (bundle files or a live Prometheus) with vLLM's metrics.

Per window it reads the request-phase histograms (queue, prefill, decode, TTFT, inter-token),
lengths, concurrency, KV-cache usage, preemptions and configuration; the verdict is decided on
those numbers alone (GPU utilization is context, never weighed), in this order:
1. kv_cache_pressure: the cache is (near) full and preemptions rose, or it holds the
   waiting requests back;
2. prompt_length / output_length: the requests changed (longer prompts with slower prefill and
   TTFT; longer outputs with longer decode while inter-token latency holds);
3. queueing: the time in the queue grew with the waiting queue (more arrivals, or less capacity
   such as a lower max_num_seqs) while the requests stayed the same;
otherwise unknown, saying what did change.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

from goodput_agent.analysis.changepoint import (
    RATE_WINDOW_S,
    STEP_S,
    choose_windows,
    find_change,
)
from goodput_agent.analysis.latency_model import (
    ConfigChange,
    Dist,
    LatencyResult,
    LatencyVerdict,
    WindowChoice,
    WindowStats,
)
from goodput_agent.errors import BadInput
from goodput_agent.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.metrics.source import (
    MetricsSource,
    MetricsUnavailable,
    MissingEvidence,
    Point,
    Selector,
    TimeWindow,
)
from goodput_agent.metrics.vllm_names import (
    ENGINE_LABEL,
    METRICS,
    MODEL_LABEL,
    REASON_LABEL,
    ConfigRevision,
    config_from_info,
    resolve_all,
)

T = TypeVar("T")

RISE = 1.2  # an incident/baseline latency ratio below this is not a rise
LENGTH_RISE = 1.3  # a mean length ratio that counts as longer requests
KV_FULL_MAX, KV_FULL_MEAN = 0.95, 0.85
MAX_FAILURES = 3  # metrics failing in a row before the remaining numbers are not asked
ESSENTIAL = ("e2e", "queue", "prefill", "decode", "ttft", "itl", "prompt_tokens",
             "output_tokens", "running", "waiting", "kv_usage", "preemptions")
SERVICE_LABELS = (MODEL_LABEL, "service", "job", "app", "deployment")
INFO_KEYS = ("gpu_memory_utilization", "num_gpu_blocks", "cache_dtype", "block_size",
             "enable_prefix_caching")
_PHASES = ("queue", "prefill", "decode")


# --------------------------------------------------------------------------- the source


class _Ask:
    """Calls into the source; failures and absent metrics become MissingEvidence."""

    def __init__(self, source: MetricsSource):
        self.source = source
        self.missing: list[MissingEvidence] = []
        self.failing: set[str] = set()  # metrics that failed since the last success
        self.last_error = ""

    def __call__(self, what: str, fn: Callable[[], T], metric: str = "") -> T | None:
        """`fn()`, or None with a MissingEvidence. Once MAX_FAILURES different metrics fail
        in a row the source is taken as down (a dead server would time out on each)."""
        if len(self.failing) >= MAX_FAILURES:
            self.missing.append(MissingEvidence(
                what=what, why=f"not asked: the source failed for {len(self.failing)} metrics "
                               f"in a row (last: {self.last_error})"))
            return None
        try:
            out = fn()
        except MetricsUnavailable as exc:
            self.failing.add(metric or what)
            self.last_error = str(exc)
            self.missing.append(MissingEvidence(what=what, why=str(exc)))
            return None
        self.failing.clear()
        return out

    def origin(self, metric: str) -> str:
        origin = getattr(self.source, "origin", None)
        if callable(origin):
            return str(origin(metric))
        return "prometheus" if self.source.name.startswith("prometheus") else self.source.name


def resolve_service(source: MetricsSource, service: str | None) -> dict[str, str]:
    """The label match that selects a service: its `model_name` (or a service/job/app label)
    equal to `service`, or the one model there is. BadInput names the choices otherwise."""
    names = resolve_all(source.metric_names())
    e2e = names["e2e"]
    if e2e is None:
        raise BadInput(f"{source.name}: no vLLM end-to-end latency histogram "
                       f"({' or '.join(METRICS['e2e'].names)})")
    models = sorted(source.label_values(MODEL_LABEL, e2e))
    if service is None:
        if len(models) > 1:
            raise BadInput(f"{source.name}: several models serve here ({', '.join(models)}): "
                           "name one as the service")
        return {MODEL_LABEL: models[0]} if models else {}
    for label in SERVICE_LABELS:
        if service in source.label_values(label, e2e):
            return {label: service}
    near = [m for m in models if service.lower() in m.lower() or m.lower() in service.lower()]
    if len(near) == 1:
        return {MODEL_LABEL: near[0]}
    raise BadInput(f"{source.name}: no service {service!r} in the latency metrics "
                   f"(models: {', '.join(models) or 'none'})")


# --------------------------------------------------------------------------- per window


def _dist(ask: _Ask, metric: str, labels: dict[str, str], w: TimeWindow, label: str) -> Dist:
    sel = Selector(metric=metric, labels=labels)
    src = ask.source
    return Dist(**{f"p{int(q * 100)}": ask(f"histogram_quantile({q}, {metric}) {label}",
                                          lambda q=q: src.quantile(q, sel, w), metric)
                   for q in (0.5, 0.9, 0.99)},
                mean=ask(f"mean of {metric} {label}", lambda: src.histogram_mean(sel, w),
                         metric))


def _per_engine(ask: _Ask, metric: str, labels: dict[str, str], w: TimeWindow,
                label: str) -> tuple[float | None, float | None]:
    """Mean over engines of the gauge's mean, and the largest value any engine reached: a
    fraction such as KV-cache usage must not be summed over engines."""
    src = ask.source
    engines = ask(f"engines of {metric}", lambda: src.label_values(ENGINE_LABEL, metric)) or set()
    means, maxes = [], []
    for e in sorted(engines) or [None]:
        sel = Selector(metric=metric, labels={**labels, ENGINE_LABEL: e} if e else labels)
        m = ask(f"avg_over_time({sel.promql()}) {label}", lambda s=sel: src.gauge_mean(s, w))
        x = ask(f"max_over_time({sel.promql()}) {label}", lambda s=sel: src.gauge_max(s, w))
        if m is not None:
            means.append(m)
        if x is not None:
            maxes.append(x)
    return (sum(means) / len(means) if means else None), (max(maxes) if maxes else None)


def _info_config(ask: _Ask, metric: str, labels: dict[str, str], w: TimeWindow) -> dict[str, str]:
    """The info metric's label values in effect for most of the window (a restart leaves the
    old series visible for the lookback after its last sample)."""
    src = ask.source
    out: dict[str, str] = {}
    for key in INFO_KEYS:
        values = ask(f"{key} of {metric}", lambda k=key: src.label_values(k, metric)) or set()
        cover: dict[str, int] = {}
        for v in sorted(values):
            sel = Selector(metric=metric, labels={**labels, key: v})
            pts = ask(f"{sel.promql()} over the window",
                      lambda s=sel: src.gauge_series(s, w, STEP_S)) or []
            if pts:
                cover[v] = len(pts)
        if cover:
            out.update(config_from_info({key: max(cover, key=lambda v: cover[v])}))
    return out


def _revision_at(revisions: list[ConfigRevision], w: TimeWindow) -> ConfigRevision | None:
    mid = w.start + (w.end - w.start) / 2
    now = [r for r in revisions if r.since is None or r.since <= mid]
    return now[-1] if now else None


def window_stats(ask: _Ask, names: dict[str, str | None], labels: dict[str, str],
                 w: TimeWindow, label: str, revisions: list[ConfigRevision]) -> WindowStats:
    src = ask.source
    st = WindowStats(label=label, window=w)  # type: ignore[arg-type]
    for key in ("e2e", "queue", "prefill", "decode", "ttft", "itl", "tpot", "prompt_tokens",
                "output_tokens"):
        if names[key]:
            setattr(st, key, _dist(ask, names[key], labels, w, label))
    if e2e := names["e2e"]:
        count = Selector(metric=f"{e2e}_count", labels=labels)
        st.request_rate = ask(f"rate({count.promql()}) {label}", lambda: src.rate(count, w))
    if success := names["success"]:
        reasons = ask(f"finished reasons {label}",
                      lambda: src.label_values(REASON_LABEL, success)) or set()
        for r in sorted(reasons):
            sel = Selector(metric=success, labels={**labels, REASON_LABEL: r})
            v = ask(f"rate({sel.promql()}) {label}", lambda s=sel: src.rate(s, w))
            if v is not None:
                st.finished_by_reason[r] = v
        total = sum(st.finished_by_reason.values())
        if total > 0:
            st.success_rate = 1 - st.finished_by_reason.get("abort", 0.0) / total
    for key in ("running", "waiting"):
        if name := names[key]:
            sel = Selector(metric=name, labels=labels)
            setattr(st, f"{key}_mean", ask(f"avg_over_time({sel.promql()}) {label}",
                                           lambda s=sel: src.gauge_mean(s, w)))
            setattr(st, f"{key}_max", ask(f"max_over_time({sel.promql()}) {label}",
                                          lambda s=sel: src.gauge_max(s, w)))
    st.waiting_growth = _growth(ask, names, labels, w, label)
    if st.request_rate is not None and st.waiting_growth is not None:
        st.arrival_rate_est = max(0.0, st.request_rate + st.waiting_growth / w.seconds)
    if kv := names["kv_usage"]:
        st.kv_usage_mean, st.kv_usage_max = _per_engine(ask, kv, labels, w, label)
    if pre := names["preemptions"]:
        sel = Selector(metric=pre, labels=labels)
        st.preemption_rate = ask(f"rate({sel.promql()}) {label}", lambda: src.rate(sel, w))
    if gpu := names["gpu_util"]:
        gpus = ask("GPUs of DCGM_FI_DEV_GPU_UTIL", lambda: src.label_values("gpu", gpu)) or set()
        total = ask(f"avg_over_time(sum({gpu})) {label}",
                    lambda: src.gauge_mean(Selector(metric=gpu), w))
        if total is not None:
            st.gpu_util_mean = total / max(1, len(gpus))
    rev = _revision_at(revisions, w)
    if rev:
        st.config.update({k: v for k, v in rev.args.items() if k != "model"})
    if info := names["cache_config"]:
        st.config.update(_info_config(ask, info, labels, w))
    return st


def _growth(ask: _Ask, names: dict[str, str | None], labels: dict[str, str], w: TimeWindow,
            label: str) -> float | None:
    """How much the queue of requests (waiting + running) grew from the window's start to its
    end: with the finished rate it gives the arrival rate."""
    total = 0.0
    for key in ("waiting", "running"):
        name = names[key]
        if not name:
            return None
        sel = Selector(metric=name, labels=labels)
        pts = ask(f"{sel.promql()} over {label}",
                  lambda s=sel: ask.source.gauge_series(s, w, STEP_S)) or []
        if len(pts) < 2:
            return None
        edge = max(1, len(pts) // 10)  # a tenth of the window at each end, against noise
        total += _mean([p.v for p in pts[-edge:]]) - _mean([p.v for p in pts[:edge]])
    return total


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


# --------------------------------------------------------------------------- the verdict


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    if b <= 0:
        return None if a <= 0 else math.inf
    return a / b


def _fmt(v: float | None, unit: str = "s") -> str:
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


class _Facts:
    """The comparison of the two windows, with the numbers named."""

    def __init__(self, b: WindowStats, i: WindowStats):
        self.b, self.i = b, i
        self.e2e_p50 = _ratio(i.e2e.p50, b.e2e.p50)
        self.e2e_p90 = _ratio(i.e2e.p90, b.e2e.p90)
        self.prompt = _ratio(i.prompt_tokens.mean, b.prompt_tokens.mean) or \
            _ratio(i.prompt_tokens.p50, b.prompt_tokens.p50)
        self.output = _ratio(i.output_tokens.mean, b.output_tokens.mean) or \
            _ratio(i.output_tokens.p50, b.output_tokens.p50)
        self.prefill_p90 = _ratio(i.prefill.p90, b.prefill.p90)
        self.ttft_p90 = _ratio(i.ttft.p90, b.ttft.p90)
        self.decode_p90 = _ratio(i.decode.p90, b.decode.p90)
        self.itl = _ratio(i.itl.mean, b.itl.mean) or _ratio(i.itl.p50, b.itl.p50)
        self.rate = _ratio(i.arrival_rate_est, b.arrival_rate_est) or \
            _ratio(i.request_rate, b.request_rate)
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


class _Evidence:
    def __init__(self, ask: _Ask, names: dict[str, str | None], labels: dict[str, str],
                 b: WindowStats, i: WindowStats):
        self.ask, self.names, self.labels, self.b, self.i = ask, names, labels, b, i
        self.events: list[Event] = []

    def add(self, key: str, expr: str, vb: float | None, vi: float | None, unit: str,
            category: str | None, primary: bool = True) -> None:
        metric = self.names.get(key) or key
        sel = Selector(metric=metric, labels=self.labels).promql()
        text = expr.format(m=sel)
        span = (f"{text} incident {_when(self.i.window)} = {_fmt(vi, unit)} vs baseline "
                f"{_when(self.b.window)} = {_fmt(vb, unit)}")
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


def _headline(ev: _Evidence, f: _Facts, category: str | None) -> None:
    ev.add("e2e", "histogram_quantile(0.9, {m})", f.b.e2e.p90, f.i.e2e.p90, "s", category)
    ev.add("e2e", "histogram_quantile(0.5, {m})", f.b.e2e.p50, f.i.e2e.p50, "s", category)


FIXES: dict[str, tuple[list[str], list[str]]] = {
    "kv_cache_pressure": (
        ["more KV-cache memory: a higher --gpu-memory-utilization, a larger "
         "--tensor-parallel-size, --kv-cache-dtype fp8, or a lower --max-model-len",
         "fewer tokens in flight: cap max_tokens, or add replicas"],
        ["raising --max-num-seqs: the KV cache is the limit, not the batch size; more "
         "sequences only preempt each other more",
         "raising --max-num-batched-tokens: it sizes prefill chunks, not the cache"]),
    "prompt_length": (
        ["prefix caching (--enable-prefix-caching) when prompts share a prefix",
         "tuning --max-num-batched-tokens (chunked prefill) to trade TTFT against ITL",
         "a separate pool or a length limit for long-prompt traffic"],
        ["raising --max-num-seqs: requests are not waiting for a batch slot",
         "raising --gpu-memory-utilization: the KV cache has room"]),
    "output_length": (
        ["capping max_tokens in the client or the API gateway",
         "more replicas, if the longer answers are wanted (they hold slots longer)"],
        ["engine tuning: per-token latency is as before, the engine is not slower; "
         "the answers are longer",
         "raising --max-num-seqs or --gpu-memory-utilization: neither shortens a generation"]),
    "queueing": (
        ["more capacity for the arrival rate: more replicas, or rate limiting upstream",
         "raising --max-num-seqs, when running sits at the limit and the KV cache has room"],
        ["raising --gpu-memory-utilization: the KV cache is not full",
         "prompt or output changes: the requests are the same as before"]),
}


def decide(f: _Facts, ev: _Evidence, diff: list[ConfigChange],
           missing: list[MissingEvidence]) -> LatencyVerdict:
    b, i = f.b, f.i
    deciding: dict[str, float | None] = {"e2e_p90_ratio": f.e2e_p90, "e2e_p50_ratio": f.e2e_p50}
    changed = {c.key: c for c in diff}
    if not f.rose():
        _headline(ev, f, None)
        return LatencyVerdict(
            category="unknown", confidence=0.7 if f.e2e_p90 is not None else 0.2,
            summary=(f"End-to-end latency did not rise: p90 {_fmt(b.e2e.p90)} -> "
                     f"{_fmt(i.e2e.p90)}, p50 {_fmt(b.e2e.p50)} -> {_fmt(i.e2e.p50)}"
                     + (f"; configuration changed ({', '.join(changed)}) without a latency "
                        "effect" if changed else "")),
            deciding=deciding, evidence=ev.for_verdict(None),
            unknowns=["no latency rise between the windows: nothing to explain"])

    cand: list[tuple[str, float, str]] = []  # category, confidence, summary
    also: dict[str, str] = {}  # why a cause that is also seen is not the first one
    why_not: dict[str, str] = {}
    kv_full, pre_up = f.kv_full(), f.preemptions_up()
    # a full cache that holds waiting requests back is the limit too (vLLM admits a request
    # only when its prompt's blocks are free), whether or not batch slots are free
    blocks_admission = kv_full and f.waiting_grew()
    deciding.update(kv_usage_max=i.kv_usage_max, kv_usage_mean=i.kv_usage_mean,
                    preemption_rate=i.preemption_rate,
                    baseline_preemption_rate=b.preemption_rate)
    if kv_full and (pre_up or blocks_admission) or (pre_up and i.kv_usage_max is None):
        conf = 0.9 if kv_full and pre_up else 0.75 if kv_full else 0.65
        held = ""
        if blocks_admission:
            held = f"; {i.waiting_mean or 0:.0f} requests wait for cache blocks"
            if f.below_batch_limit():
                held += (f" while at most {i.running_max or 0:.0f} of max_num_seqs "
                         f"{f.max_num_seqs} run")
        cand.append(("kv_cache_pressure", conf,
                     f"The KV cache is the limit: usage peaks at {_fmt(i.kv_usage_max, '%')} "
                     f"(mean {_fmt(i.kv_usage_mean, '%')}, baseline "
                     f"{_fmt(b.kv_usage_mean, '%')}) and requests are preempted "
                     f"{_fmt(i.preemption_rate, '/s')} (baseline "
                     f"{_fmt(b.preemption_rate or 0.0, '/s')}){held}; decode p90 "
                     f"{_fmt(b.decode.p90)} -> {_fmt(i.decode.p90)}"))
        ev.add("kv_usage", "max_over_time({m})", b.kv_usage_max, i.kv_usage_max, "%",
               "kv_cache_pressure")
        ev.add("preemptions", "rate({m})", b.preemption_rate, i.preemption_rate, "/s",
               "kv_cache_pressure")
    else:
        why_not["kv_cache_pressure"] = (
            f"KV-cache usage peaks at {_fmt(i.kv_usage_max, '%')} (mean "
            f"{_fmt(i.kv_usage_mean, '%')}) with {_fmt(i.preemption_rate or 0.0, '/s')} "
            "preemptions: the cache is not the limit")

    deciding.update(prompt_mean_ratio=f.prompt, prefill_p90_ratio=f.prefill_p90,
                    ttft_p90_ratio=f.ttft_p90, output_mean_ratio=f.output,
                    decode_p90_ratio=f.decode_p90, itl_ratio=f.itl)
    lengths = []
    if f.longer_prompts():
        share = f.share("prefill") or 0.0
        lengths.append(("prompt_length", 0.8 if (f.output or 1) < LENGTH_RISE else 0.6,
                        f"Prompts got longer: mean {_fmt(b.prompt_tokens.mean, ' tok')} -> "
                        f"{_fmt(i.prompt_tokens.mean, ' tok')} (x{f.prompt:.2f}); prefill p90 "
                        f"{_fmt(b.prefill.p90)} -> {_fmt(i.prefill.p90)}, TTFT p90 "
                        f"{_fmt(b.ttft.p90)} -> {_fmt(i.ttft.p90)}", share))
    elif f.prompt is None:
        why_not["prompt_length"] = "no prompt-length histogram"
    else:
        why_not["prompt_length"] = (
            f"prompt length x{f.prompt:.2f} (mean {_fmt(b.prompt_tokens.mean, ' tok')} -> "
            f"{_fmt(i.prompt_tokens.mean, ' tok')}), prefill p90 x{f.prefill_p90 or 0:.2f}, "
            f"TTFT p90 x{f.ttft_p90 or 0:.2f}: " + (
                "prompts did not get materially longer" if f.prompt < LENGTH_RISE else
                "longer prompts, but prefill and TTFT did not move"))
    if f.longer_outputs():
        share = f.share("decode") or 0.0
        flat_itl = f.itl is None or f.itl < LENGTH_RISE
        lengths.append(("output_length", 0.85 if flat_itl else 0.6,
                        f"Outputs got longer: mean {_fmt(b.output_tokens.mean, ' tok')} -> "
                        f"{_fmt(i.output_tokens.mean, ' tok')} (x{f.output:.2f}); decode p90 "
                        f"{_fmt(b.decode.p90)} -> {_fmt(i.decode.p90)} while inter-token "
                        f"latency moved x{f.itl or 0:.2f} ({_fmt(b.itl.mean)} -> "
                        f"{_fmt(i.itl.mean)}): the engine is as fast per token, the answers "
                        "are longer", share))
    elif f.output is None:
        why_not["output_length"] = "no output-length histogram"
    else:
        why_not["output_length"] = (
            f"output length x{f.output:.2f} (mean {_fmt(b.output_tokens.mean, ' tok')} -> "
            f"{_fmt(i.output_tokens.mean, ' tok')}), decode p90 x{f.decode_p90 or 0:.2f}: " + (
                "generations did not get materially longer" if f.output < LENGTH_RISE else
                "longer generations, but decode time did not move"))
    for k, (cat, conf, text, _share) in enumerate(sorted(lengths, key=lambda x: -x[3])):
        cand.append((cat, conf, text))
        also[cat] = ("the requests are longer too, but the cache is the limit they hit"
                     if cand[0][0] == "kv_cache_pressure" else
                     "longer too, but its phase rose less" if k else "")
        if cat == "prompt_length":
            ev.add("prompt_tokens", "mean of {m}", b.prompt_tokens.mean, i.prompt_tokens.mean,
                   " tok", cat)
            ev.add("prefill", "histogram_quantile(0.9, {m})", b.prefill.p90, i.prefill.p90,
                   "s", cat)
            ev.add("ttft", "histogram_quantile(0.9, {m})", b.ttft.p90, i.ttft.p90, "s", cat)
        else:
            ev.add("output_tokens", "mean of {m}", b.output_tokens.mean, i.output_tokens.mean,
                   " tok", cat)
            ev.add("decode", "histogram_quantile(0.9, {m})", b.decode.p90, i.decode.p90,
                   "s", cat)
            ev.add("itl", "mean of {m}", b.itl.mean, i.itl.mean, "s", cat)

    deciding.update(queue_p90=i.queue.p90, baseline_queue_p90=b.queue.p90,
                    waiting_mean=i.waiting_mean, baseline_waiting_mean=b.waiting_mean,
                    running_mean=i.running_mean, arrival_rate_ratio=f.rate,
                    queue_share_of_mean_rise=f.share("queue"))
    if f.queue_grew():
        why = []
        if f.rate is not None and f.rate >= 1.15:
            why.append(f"arrivals rose x{f.rate:.2f} ({_fmt(b.arrival_rate_est, '/s')} -> "
                       f"{_fmt(i.arrival_rate_est, '/s')})")
        if "max_num_seqs" in changed:
            c = changed["max_num_seqs"]
            why.append(f"--max-num-seqs changed {c.baseline} -> {c.incident}")
        if f.at_batch_limit():
            why.append(f"running requests reach the batch limit ({i.running_max:.0f} of "
                       f"max_num_seqs {f.max_num_seqs})")
        also["queueing"] = (
            f"requests do wait longer (queue p90 {_fmt(b.queue.p90)} -> {_fmt(i.queue.p90)}), "
            "but as a consequence: " + (
                "the full KV cache holds them back, so raising max_num_seqs would not help"
                if cand and cand[0][0] == "kv_cache_pressure" else
                "the requests changed and take the capacity"))
        cand.append(("queueing", 0.85 if why else 0.65,
                     f"Requests wait in the queue: queue p90 {_fmt(b.queue.p90)} -> "
                     f"{_fmt(i.queue.p90)}, waiting {b.waiting_mean or 0:.1f} -> "
                     f"{i.waiting_mean or 0:.1f} on average"
                     + (f"; {', '.join(why)}" if why else "")
                     + "; request lengths and the KV cache are not the limit"))
        ev.add("queue", "histogram_quantile(0.9, {m})", b.queue.p90, i.queue.p90, "s",
               "queueing")
        ev.add("waiting", "avg_over_time({m})", b.waiting_mean, i.waiting_mean, "", "queueing")
    else:
        why_not["queueing"] = (
            f"queue p90 {_fmt(b.queue.p90)} -> {_fmt(i.queue.p90)} and waiting "
            f"{_fmt(b.waiting_mean, '')} -> {_fmt(i.waiting_mean, '')}: requests do not wait "
            "materially longer for a slot")

    if not cand:
        _headline(ev, f, None)
        slower = []
        if f.itl is not None and f.itl >= RISE:
            slower.append(f"inter-token latency rose x{f.itl:.2f} ({_fmt(b.itl.mean)} -> "
                          f"{_fmt(i.itl.mean)}) with the same lengths, no queue and no KV "
                          "pressure: each decode step is slower (GPU clocks, a noisy "
                          "neighbour, a different model build) - outside these metrics")
            ev.add("itl", "mean of {m}", b.itl.mean, i.itl.mean, "s", None)
        return LatencyVerdict(
            category="unknown", confidence=0.4, deciding=deciding,
            evidence=ev.for_verdict(None),
            summary=(f"End-to-end latency rose (p90 {_fmt(b.e2e.p90)} -> {_fmt(i.e2e.p90)}) "
                     "but none of queueing, KV-cache pressure, prompt or output length explains "
                     "it" + (f": {slower[0]}" if slower else "")),
            alternatives=[(c, 0.1, w) for c, w in why_not.items()],
            unknowns=["what slowed the engine: look at GPU clocks and throttling "
                      "(DCGM_FI_DEV_SM_CLOCK, clock event reasons) or a profile"])

    cat, conf, summary = cand[0]
    _headline(ev, f, cat)
    if missing:
        conf = max(0.2, conf - 0.2)
    config_notes = [f"{c.key} {c.baseline} -> {c.incident} ({c.source}; {weigh(cat, c)})"
                    for c in diff]
    if config_notes:
        summary += "; configuration diff between the windows: " + "; ".join(config_notes)
    would, would_not = FIXES[cat]
    alternatives = [(c, round(min(cf, conf) * 0.5, 2), also.get(c) or t)
                    for c, cf, t in cand[1:]]
    alternatives += [(c, 0.05, w) for c, w in why_not.items()]
    return LatencyVerdict(category=cat, confidence=round(conf, 2), summary=summary,
                          deciding=deciding, would_fix=list(would),
                          would_not_fix=list(would_not), evidence=ev.for_verdict(cat),
                          alternatives=alternatives)


# the direction of a change that takes capacity away, per cause it can explain
_LESS = {"max_num_seqs": ("queueing", -1), "gpu_memory_utilization": ("kv_cache_pressure", -1),
         "num_gpu_blocks": ("kv_cache_pressure", -1),
         "tensor_parallel_size": ("kv_cache_pressure", -1),
         "max_model_len": ("kv_cache_pressure", 1)}


def weigh(category: str, c: ConfigChange) -> str:
    """Whether a configuration change can explain the verdict."""
    if c.key == "kv_cache_dtype" and category == "kv_cache_pressure":
        fp8 = [str(v).startswith("fp8") for v in (c.baseline, c.incident)]
        return "explains it: fp8 halves the bytes per cached token" if fp8 == [True, False] \
            else "does not shrink the cache"
    rule = _LESS.get(c.key)
    try:
        up = float(c.incident or "nan") > float(c.baseline or "nan")
        down = float(c.incident or "nan") < float(c.baseline or "nan")
    except ValueError:
        up = down = False
    if rule and rule[0] == category and (down if rule[1] < 0 else up):
        return "explains it: " + ("fewer batch slots for the same arrivals"
                                  if category == "queueing" else "a smaller KV cache")
    if category in ("prompt_length", "output_length"):
        return "not the cause: configuration does not change request lengths"
    if rule and rule[0] == category:
        return "not the cause: it adds capacity"
    return "not a known cause of this"


def config_diff(b: WindowStats, i: WindowStats, revisions: list[ConfigRevision],
                info_metric: str | None) -> list[ConfigChange]:
    out = []
    for key in sorted(set(b.config) | set(i.config)):
        vb, vi = b.config.get(key), i.config.get(key)
        if vb != vi:
            src = next((r.source for r in revisions if key in r.args), None) or \
                (info_metric or "config")
            out.append(ConfigChange(key=key, baseline=vb, incident=vi, source=src))
    return out


# --------------------------------------------------------------------------- the analysis


def _partial_result(ask: _Ask, labels: dict[str, str], names: dict[str, str | None],
                    windows: WindowChoice | None, why: str,
                    timeline: dict[str, list[Point]] | None = None) -> LatencyResult:
    return LatencyResult(source=ask.source.name, service_labels=labels, metrics=names,
                         windows=windows, missing=ask.missing, partial=True,
                         timeline=timeline or {},
                         verdict=LatencyVerdict(category="unknown", summary=why, confidence=0.0,
                                                unknowns=[why]))


def source_failed(source: MetricsSource, what: str, why: str) -> LatencyResult:
    """The result when the source fails before any number is had (down, mute, refusing)."""
    ask = _Ask(source)
    ask.missing.append(MissingEvidence(what=what, why=why))
    return _partial_result(ask, {}, {}, None, f"the metrics source failed: {why}")


def _intersect(span: TimeWindow, search: TimeWindow | None) -> TimeWindow | None:
    if search is None:
        return span
    start, end = max(span.start, search.start), min(span.end, search.end)
    return TimeWindow(start=start, end=end) if end > start else None


def analyse(source: MetricsSource, service_labels: dict[str, str],
            baseline: TimeWindow | None = None, incident: TimeWindow | None = None, *,
            search: TimeWindow | None = None,
            revisions: list[ConfigRevision] | None = None) -> LatencyResult:
    """Compare a baseline and an incident window of one service. Windows left None are chosen
    from the change point of the e2e latency within `search` (default: all the data)."""
    ask = _Ask(source)
    revisions = revisions or []
    found = ask("metric names", source.metric_names)
    if found is None:
        return _partial_result(ask, service_labels, {}, None,
                               "the metrics source failed: no numbers at all")
    names = resolve_all(found)
    for key in ESSENTIAL:
        if names[key] is None:
            ask.missing.append(MissingEvidence(
                what=METRICS[key].what, why=f"no {' or '.join(METRICS[key].names)} in the source"))
    e2e = names["e2e"]
    if e2e is None:
        return _partial_result(ask, service_labels, names, None,
                               "no end-to-end latency histogram: latency cannot be compared")
    sel = Selector(metric=e2e, labels=service_labels)
    span = ask(f"time span of {e2e}", lambda: source.span(e2e))
    span = _intersect(span, search) if span else None
    timeline: dict[str, list[Point]] = {}
    step, rate_window = STEP_S, RATE_WINDOW_S
    if span is not None:
        # at most ~720 points; every sample in some point's rate window
        step = max(STEP_S, math.ceil(span.seconds / 720 / STEP_S) * STEP_S)
        rate_window = max(RATE_WINDOW_S, 2 * step)
        for q in (0.5, 0.9):
            timeline[f"p{int(q * 100)}"] = ask(
                f"histogram_quantile({q}, rate({e2e}_bucket[{rate_window:.0f}s])) over time",
                lambda q=q: source.quantile_series(q, sel, span, step, rate_window), e2e) or []
    windows = None
    if baseline and incident:
        windows = WindowChoice(baseline=baseline, incident=incident, how="user")
    elif span is not None:
        change = None
        if not (baseline or incident):
            change = find_change([timeline.get("p50", []), timeline.get("p90", [])],
                                 rate_window)
        windows = choose_windows(span, change, baseline, incident,
                                 detection=f"p50 and p90 of {e2e}, {step:.0f}s step, "
                                           f"{rate_window:.0f}s rate window")
    if windows is None:
        return _partial_result(ask, service_labels, names, None,
                               "not enough latency data to compare two windows", timeline)
    b = window_stats(ask, names, service_labels, windows.baseline, "baseline", revisions)
    i = window_stats(ask, names, service_labels, windows.incident, "incident", revisions)
    diff = config_diff(b, i, revisions, names["cache_config"])
    facts = _Facts(b, i)
    verdict = decide(facts, _Evidence(ask, names, service_labels, b, i), diff, ask.missing)
    if ask.missing:
        verdict.unknowns.append(f"partial: {len(ask.missing)} number(s) could not be had "
                                "(listed under missing)")
    ratios = {"e2e_p50": facts.e2e_p50, "e2e_p90": facts.e2e_p90,
              "queue_p90": _ratio(i.queue.p90, b.queue.p90), "prefill_p90": facts.prefill_p90,
              "decode_p90": facts.decode_p90, "ttft_p90": facts.ttft_p90, "itl": facts.itl,
              "prompt_tokens_mean": facts.prompt, "output_tokens_mean": facts.output,
              "arrival_rate": facts.rate}
    return LatencyResult(source=source.name, service_labels=service_labels, metrics=names,
                         windows=windows, baseline=b, incident=i, ratios=ratios,
                         config_diff=diff, verdict=verdict, missing=ask.missing,
                         partial=bool(ask.missing), timeline=timeline)

