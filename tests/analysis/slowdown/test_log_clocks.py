"""A slowdown read from the training log, weighed against the GPUs' DCGM clocks: a throttled GPU
under the log's straggler is the cause, one the log's rise cannot be tied to is a weak verdict,
and a class the log names stands with throttling as its alternative."""

from __future__ import annotations

from goodput_agent.analysis.slowdown.log_clocks import (
    AS_ALTERNATIVE,
    NO_SIGN,
    WITH_ONE_SIGN,
    weigh_clocks,
)
from goodput_agent.analysis.slowdown.model import SlowdownVerdict
from goodput_agent.analysis.slowdown.throttle import ThrottleFinding

HOT = ThrottleFinding(node="node-01.cluster", gpu="3", reasons=["HwThermalSlowdown"])
COOL = ThrottleFinding(node="node-01.cluster", gpu="3", clock_ratio=0.99, reference_mhz=1980,
                       low_mhz=1960)


def _straggler() -> SlowdownVerdict:
    return SlowdownVerdict(category="straggler", confidence=0.6, rank=5, node="node-01",
                           summary="rank 5 on node-01 is a straggler",
                           unknowns=["no profiler trace: the straggler is told by the log"])


def _unknown() -> SlowdownVerdict:
    return SlowdownVerdict(category="unknown", confidence=0.3, summary="the time rose")


def test_a_throttled_gpu_under_the_logs_straggler_is_the_cause() -> None:
    v = weigh_clocks(_straggler(), [HOT], {5: "0000:1b:00"})
    assert (v.category, v.rank, v.node, v.gpu) == ("gpu_throttling", 5, "node-01", "3")
    assert v.confidence == WITH_ONE_SIGN and "HwThermalSlowdown" in v.summary
    assert [a[0] for a in v.alternatives] == ["straggler"]


def test_a_throttled_gpu_elsewhere_leaves_the_straggler() -> None:
    elsewhere = HOT.model_copy(update={"node": "node-07"})
    mine_is_cool = {5: "2"}  # NCCL's map gives the straggler's device: not the throttled one
    for clocks, gpus in (([elsewhere], {}), ([HOT], mine_is_cool)):
        v = weigh_clocks(_straggler(), clocks, gpus)
        assert (v.category, v.confidence) == ("straggler", 0.6)
        assert v.alternatives == [("gpu_throttling", AS_ALTERNATIVE, v.alternatives[0][2])]


def test_throttling_and_a_rise_nothing_ties_to_it_is_a_weak_verdict() -> None:
    v = weigh_clocks(_unknown(), [HOT], {})
    assert (v.category, v.confidence, v.node) == ("gpu_throttling", NO_SIGN, "node-01.cluster")
    assert NO_SIGN < 0.5 and any("no time" in u for u in v.unknowns)


def test_a_class_the_log_names_stands_beside_a_throttled_gpu() -> None:
    timer = SlowdownVerdict(category="input_stall", confidence=0.6, summary="batch-generator")
    v = weigh_clocks(timer, [HOT], {})
    assert (v.category, v.confidence) == ("input_stall", 0.6)
    assert v.alternatives[0][:2] == ("gpu_throttling", AS_ALTERNATIVE)


def test_clocks_read_and_none_throttled_leave_the_unknown_as_it_was() -> None:
    v = weigh_clocks(_unknown(), [COOL], {})
    assert (v.category, v.confidence) == ("unknown", 0.3)
    assert any("DCGM shows no throttling on the 1 GPU" in u for u in v.unknowns)
    assert weigh_clocks(_straggler(), [COOL], {}).category == "straggler"


def test_several_throttled_gpus_on_the_stragglers_node_name_the_node_not_a_gpu() -> None:
    """Without NCCL's device index for the rank, which of them runs it is not known."""
    other = HOT.model_copy(update={"gpu": "5"})
    v = weigh_clocks(_straggler(), [HOT, other], {5: "0000:1b:00"})
    assert (v.category, v.node, v.gpu, v.confidence) == ("gpu_throttling", "node-01", None,
                                                          WITH_ONE_SIGN)
    assert "2 GPUs on node-01.cluster" in v.summary
