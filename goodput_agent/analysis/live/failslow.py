"""Fail-slow among one running job's nodes: the node whose metrics leave its peers.

The nodes of one job run the same work in lock step, so they should look alike (Minder's
premise): a node whose SM clock, power, SM activity, link throughput or per-rank step time
sits apart from the job's other nodes — persistently, not for one sample — is the slow one.

Input per metric: for each evaluation time (oldest first; every poll of the last 40 s) each
node's median over a short window (PromQL `quantile_over_time(0.5, ...[30s])`, computed by
the server: one odd sample does not move a median; a dip of up to 40 s moves it for fewer
polls than the evaluation spans). A node is apart from its peers at one
time when its robust z-score against the other nodes (median and MAD) passes `z_min` in the
metric's bad direction AND its relative distance from the median passes the metric's `rel_min` (so a
tight, quiet fleet does not make a 1 % wobble an outlier). It is flagged when that holds at
every evaluation time. More than `max_share` of the nodes apart is not one slow node
(the job changed phase, or the fleet is mixed): no verdict. Fewer than `min_nodes` nodes
reporting: no peers to compare with.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

Direction = Literal["low", "high"]


class MetricSpec(BaseModel):
    name: str  # a short name: sm_clock, power, temp, sm_active, nvlink_tx, step_time, ...
    bad: Direction  # which side of the peers is slow
    rel_min: float  # the least relative distance from the peers' median that counts
    throttle: bool = False  # a clock/power sign: the node's GPUs are throttled
    # a sign cited beside others, never alone (a node may run hotter, or draw less power,
    # than its peers for years: its place in the rack's airflow, its silicon)
    alone: bool = True


# the metrics the live check asks for (queries in detect/failslow_queries.py); any subset works
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(name="sm_clock", bad="low", rel_min=0.05, throttle=True),
    MetricSpec(name="power", bad="low", rel_min=0.10, throttle=True, alone=False),
    MetricSpec(name="temp", bad="high", rel_min=0.08, alone=False),
    MetricSpec(name="sm_active", bad="low", rel_min=0.05),
    MetricSpec(name="nvlink_bw", bad="low", rel_min=0.10),
    MetricSpec(name="pcie_bw", bad="low", rel_min=0.10),
    MetricSpec(name="ib_bw", bad="low", rel_min=0.10),
    MetricSpec(name="step_time", bad="high", rel_min=0.08),  # noisier than the GPU's own
)
SPECS = {m.name: m for m in METRICS}


class FailSlowSettings(BaseModel):
    z_min: float = 4.0
    min_nodes: int = 4
    max_share: float = 0.25


class Deviation(BaseModel):
    metric: str
    value: float  # the node's value at the last evaluation time
    peers_median: float
    relative: float  # (value - median) / median, signed
    z: float


class SlowNode(BaseModel):
    node: str
    deviations: list[Deviation] = Field(default_factory=list)
    throttled: bool = False  # a clock or power sign among the deviations

    @property
    def category(self) -> str:
        return "gpu_throttling" if self.throttled else "straggler"


class FailSlowVerdict(BaseModel):
    slow: list[SlowNode] = Field(default_factory=list)
    nodes: int = 0
    metrics: list[str] = Field(default_factory=list)  # the metrics that had data
    reason: str = ""
    confidence: float = 0.0


def _apart(values: np.ndarray, spec: MetricSpec, s: FailSlowSettings) -> tuple[np.ndarray, ...]:
    """Per time and node (values: times x nodes): (flagged, relative distance, z, median)."""
    med = np.nanmedian if np.isnan(values).any() else np.median  # the plain one is 20x faster
    median = med(values, axis=1, keepdims=True)
    mad = med(np.abs(values - median), axis=1, keepdims=True) * 1.4826
    scale = np.maximum(np.maximum(mad, np.abs(median) * 0.005), 1e-9)
    z = (values - median) / scale
    rel = (values - median) / np.maximum(np.abs(median), 1e-9)
    sign = -1.0 if spec.bad == "low" else 1.0
    with np.errstate(invalid="ignore"):
        flagged = ~np.isnan(values) & (sign * z >= s.z_min) & (sign * rel >= spec.rel_min)
    return flagged, rel, z, np.broadcast_to(median, values.shape)


def judge_failslow(nodes: list[str], series: dict[str, np.ndarray],
                   settings: FailSlowSettings | None = None) -> FailSlowVerdict:
    """`series[metric]`: shape (times, nodes), NaN where a node had no sample."""
    s = settings or FailSlowSettings()
    v = FailSlowVerdict(nodes=len(nodes))
    found: dict[int, SlowNode] = {}
    for name, values in series.items():
        spec = SPECS.get(name)
        if spec is None or values.size == 0:
            continue
        values = np.atleast_2d(values)
        reporting = int((~np.isnan(values[-1])).sum())
        if reporting < s.min_nodes:
            continue
        v.metrics.append(name)
        flagged, rel, z, median = _apart(values, spec, s)
        for i in np.flatnonzero(flagged.all(axis=0)):
            slow = found.setdefault(int(i), SlowNode(node=nodes[i]))
            slow.deviations.append(Deviation(metric=name, value=float(values[-1, i]),
                                             peers_median=float(median[-1, i]),
                                             relative=round(float(rel[-1, i]), 4),
                                             z=round(float(z[-1, i]), 1)))
            slow.throttled |= spec.throttle
    if not v.metrics:
        v.reason = f"fewer than {s.min_nodes} nodes report any metric: no peers to compare"
        return v
    for i in [i for i, n in found.items() if not any(SPECS[d.metric].alone
                                                       for d in n.deviations)]:
        del found[i]
    if len(found) > max(1, s.max_share * len(nodes)):
        v.reason = (f"{len(found)} of {len(nodes)} nodes are apart from the rest: not one slow "
                    "node (a phase change, or a mixed set of nodes)")
        return v
    v.slow = sorted(found.values(), key=lambda n: -max(abs(d.z) for d in n.deviations))
    if v.slow:
        top = v.slow[0]
        v.confidence = round(min(0.9, 0.6 + 0.1 * (len(top.deviations) - 1)), 2)
        v.reason = "; ".join(
            f"{n.node}: " + ", ".join(f"{d.metric} {d.value:.4g} vs peers' {d.peers_median:.4g} "
                                      f"({d.relative:+.0%})" for d in n.deviations)
            for n in v.slow[:4])
    else:
        v.reason = f"no node apart from its peers on {', '.join(v.metrics)}"
    return v
