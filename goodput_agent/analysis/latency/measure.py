"""Measuring a latency window: the numbers of one service in one window, from any
MetricsSource with vLLM's metrics; failures and absent metrics become MissingEvidence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from goodput_agent.core.errors import BadInput
from goodput_agent.metrics.source import (
    MetricsSource,
    MetricsUnavailable,
    MissingEvidence,
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

from .changepoint import STEP_S
from .model import Dist, WindowStats

T = TypeVar("T")
MAX_FAILURES = 3  # metrics failing in a row before the remaining numbers are not asked
SERVICE_LABELS = (MODEL_LABEL, "service", "job", "app", "deployment")
INFO_KEYS = ("gpu_memory_utilization", "num_gpu_blocks", "cache_dtype", "block_size",
             "enable_prefix_caching")


class Ask:
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


def _dist(ask: Ask, metric: str, labels: dict[str, str], w: TimeWindow, label: str) -> Dist:
    sel = Selector(metric=metric, labels=labels)
    src = ask.source
    return Dist(**{f"p{int(q * 100)}": ask(f"histogram_quantile({q}, {metric}) {label}",
                                          lambda q=q: src.quantile(q, sel, w), metric)
                   for q in (0.5, 0.9, 0.99)},
                mean=ask(f"mean of {metric} {label}", lambda: src.histogram_mean(sel, w),
                         metric))


def _per_engine(ask: Ask, metric: str, labels: dict[str, str], w: TimeWindow,
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


def _info_config(ask: Ask, metric: str, labels: dict[str, str], w: TimeWindow) -> dict[str, str]:
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


def window_stats(ask: Ask, names: dict[str, str | None], labels: dict[str, str],
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


def _growth(ask: Ask, names: dict[str, str | None], labels: dict[str, str], w: TimeWindow,
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
