"""Fail-slow among a job's nodes: one node apart from its peers, persistently, in a metric
that can say so on its own."""

from __future__ import annotations

import numpy as np

from goodput_agent.analysis.live.failslow import judge_failslow

NODES = [f"n{i:02d}" for i in range(16)]


def fleet(level: float, times: int = 5, noise: float = 0.005, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return level * (1 + rng.normal(0, noise, (times, len(NODES))))


def test_a_throttled_node_is_named_with_its_numbers() -> None:
    clock = fleet(1980)
    clock[:, 5] *= 0.8
    v = judge_failslow(NODES, {"sm_clock": clock, "temp": fleet(68, seed=4)})
    (slow,) = v.slow
    assert slow.node == "n05" and slow.category == "gpu_throttling"
    d = slow.deviations[0]
    assert d.metric == "sm_clock" and -0.21 < d.relative < -0.19 and d.z < -4


def test_a_dip_at_one_evaluation_time_is_not_persistent() -> None:
    clock = fleet(1980)
    clock[2, 5] *= 0.8
    assert not judge_failslow(NODES, {"sm_clock": clock}).slow


def test_supporting_metrics_never_flag_alone() -> None:
    temp = fleet(68)
    temp[:, 3] *= 1.2
    power = fleet(600)
    power[:, 3] *= 0.8
    assert not judge_failslow(NODES, {"temp": temp, "power": power}).slow
    clock = fleet(1980)
    clock[:, 3] *= 0.85
    (slow,) = judge_failslow(NODES, {"temp": temp, "power": power, "sm_clock": clock}).slow
    assert {d.metric for d in slow.deviations} == {"temp", "power", "sm_clock"}


def test_a_straggler_by_step_time_and_too_many_apart() -> None:
    step = fleet(2.0)
    step[:, 9] *= 1.25
    (slow,) = judge_failslow(NODES, {"step_time": step}).slow
    assert slow.node == "n09" and slow.category == "straggler"
    step[:, :6] *= 1.25  # six of sixteen: a phase change or a mixed fleet, not one node
    v = judge_failslow(NODES, {"step_time": step})
    assert not v.slow and "not one slow node" in v.reason


def test_too_few_nodes_reporting_is_said() -> None:
    clock = np.full((5, 16), np.nan)
    clock[:, :3] = 1980
    v = judge_failslow(NODES, {"sm_clock": clock})
    assert not v.slow and "no peers" in v.reason
