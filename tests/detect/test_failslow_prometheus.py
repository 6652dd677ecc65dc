"""Fail-slow against a real Prometheus (Debian's package, tests/servers/prometheus.py): the
per-node DCGM series of generated running jobs, written as dcgm-exporter names and labels them
(two GPUs a node, `Hostname`, `gpu`) and backfilled; `detect.metrics.failslow` asks the server
one range query per metric (`avg by (Hostname) (quantile_over_time(0.5, ...[30s]))`) and must
name the node the eval's own replay names, with the same kind."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from goodput_agent.detect.metrics import DCGM, failslow
from goodput_agent.evals.live.generator import make_case, metric_streams
from goodput_agent.evals.live.scorer import _Replay
from goodput_agent.metrics.prometheus import PrometheusSource
from tests.detect.named import named
from tests.servers.prometheus import prometheus_over_text

CASES = ((29009, "throttle"), (29008, "straggler"), (29002, "healthy"))


def openmetrics(seed: int, fault: str, around: float) -> str:
    case = make_case(seed, fault)  # type: ignore[arg-type]
    times, series = metric_streams(case)
    keep = (times > around - 600) & (times <= around + 60)
    lines = []
    for short, name in DCGM.items():
        if short not in series:
            continue
        lines.append(f"# TYPE {name} gauge")
        for j, node in enumerate(case.node_names):
            for gpu in (0, 1):
                for t, v in zip(times[keep], series[short][keep, j], strict=True):
                    lines.append(f'{name}{{Hostname="{node}",gpu="{gpu}"}} {v:.6g} {t:.3f}')
    return "\n".join(lines) + "\n# EOF\n"


@pytest.mark.parametrize(("seed", "fault"), CASES)
def test_failslow_pushed_down_names_the_node_the_replay_names(seed: int, fault: str,
                                                             tmp_path: Path) -> None:
    case = make_case(seed, fault)  # type: ignore[arg-type]
    at = float(np.floor((case.onset or case.start + 1500) + 150))
    replay = _Replay(case, tmp_path).failslow_at(at)
    # only the DCGM metrics go to Prometheus here (no per-rank step time, no IB counter)
    assert replay is not None
    with prometheus_over_text(tmp_path, openmetrics(seed, fault, at)) as url:
        got = failslow(PrometheusSource(url, timeout_s=20), case.node_names,
                       at=datetime.fromtimestamp(at, UTC))
    assert all(q.error is None for q in got.queries), [q.error for q in got.queries]
    answered = {q.metric: q.nodes_answered for q in got.queries}
    assert answered["sm_clock"] == case.nodes and answered["nvlink_bw"] == 0
    assert "quantile_over_time(0.5, DCGM_FI_DEV_SM_CLOCK" in got.queries[0].promql
    names = [s.node for s in got.verdict.slow]
    if fault == "throttle":
        assert names == [case.culprit_node] and got.verdict.slow[0].throttled
        assert names == [s.node for s in replay.slow]
    elif fault == "healthy":
        assert names == [] and replay.slow == []
    else:  # this straggler's node idles more than its peers (DCGM SM activity)
        assert names == [case.culprit_node] and not got.verdict.slow[0].throttled
        assert names == [s.node for s in replay.slow]


def test_the_hung_ranks_node_is_joined_with_its_xids(tmp_path: Path) -> None:
    """A hang whose culprit node logged Xid 79 in DCGM within the hour: said in the verdict,
    cited as evidence, and the proposal becomes taking the node out."""
    from goodput_agent.analysis.live.stall import StallVerdict
    from goodput_agent.detect.assess import Finding
    from goodput_agent.detect.check import CheckOptions, node_health
    from goodput_agent.detect.record import Read, proposals

    at = 1_796_000_000.0
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for t in range(int(at) - 900, int(at) + 1, 30):
        for node, code in (("gpu-node-02", 79 if t > at - 400 else 0), ("gpu-node-01", 0)):
            lines.append(f'DCGM_FI_DEV_XID_ERRORS{{Hostname="{node}",gpu="3"}} {code} {t}')
    f = Finding(kind="hang", summary="stalled; rank 3 on gpu-node-02 hangs", confidence=0.8,
                node="gpu-node-02", rank=3, stall=StallVerdict(state="stalled"))
    assert named(proposals(f, "slurm", "9")) == ["advice: collect_stacks"]  # no sign yet
    reads: list[Read] = []
    with prometheus_over_text(tmp_path, "\n".join(lines) + "\n# EOF\n") as url:
        events = node_health(f, CheckOptions(prometheus_url=url, timeout_s=20), reads, at)
    assert f.node_problems and "Xid 79" in f.node_problems[0] and "Xid 79" in f.summary
    assert events and events[0].node == "gpu-node-02" and reads[0].tool == "node_health"
    assert named(proposals(f, "slurm", "9")) == ["slurm_drain_node",
                                                            "slurm_requeue_job"]
