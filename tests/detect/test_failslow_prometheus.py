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
