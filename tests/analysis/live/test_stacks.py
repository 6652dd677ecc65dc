"""Grouping the ranks' stacks: the ranks outside the dominant group are the culprit, and
what cannot be concluded is said (dumps that failed, no dominant group, everyone alike)."""

from __future__ import annotations

from goodput_agent.analysis.live.stacks import busy, group_ranks, state_of
from goodput_agent.parsing.pyspy_dump import Frame, ProcessDump, ThreadStack


def dump(*labels: str, active: bool = False) -> ProcessDump:
    frames = []
    for label in labels:
        name, _, file = label.partition("@")
        frames.append(Frame(name=name, file=file, line=1))
    return ProcessDump(threads=[ThreadStack(name="MainThread", active=active, frames=frames)])


WAIT = dump("all_reduce@torch/distributed/distributed_c10d.py", "train_step@train.py")
DATA = dump("wait@threading.py", "get@queue.py", "_try_get_data@torch/utils/data/dataloader.py",
            "train_step@train.py")
CUDA = dump("synchronize@torch/cuda/__init__.py", "train_step@train.py")
NODES = {r: f"node-{r // 8}" for r in range(32)}


def test_states_from_the_innermost_frames() -> None:
    assert state_of(WAIT.threads[0].frames) == "collective"
    assert state_of(DATA.threads[0].frames) == "data_loading"  # not "waiting": more specific
    assert state_of(CUDA.threads[0].frames) == "cuda"
    assert state_of(dump("forward@model.py").threads[0].frames) == "compute"
    # activation checkpointing is recompute, not a save
    assert state_of(dump("checkpoint@torch/utils/checkpoint.py").threads[0].frames) != \
        "checkpoint"


def test_the_rank_outside_the_waiting_group_is_the_culprit() -> None:
    dumps = {r: [WAIT] for r in range(32)}
    dumps[13] = [DATA]
    v = group_ranks(dumps, NODES, world_size=32)
    assert [p.rank for p in v.culprits] == [13] and v.culprit_nodes == ["node-1"]
    assert v.dominant.state == "collective" and len(v.dominant_ranks) == 31
    assert v.confidence >= 0.8 and "rank 13 in data_loading" in v.reason


def test_a_failed_dump_is_said_and_lowers_the_confidence() -> None:
    dumps = {r: [WAIT] for r in range(32)}
    dumps[13] = [CUDA]
    dumps[20] = [ProcessDump(error="py-spy exit 1: Permission denied")]
    v = group_ranks(dumps, NODES, world_size=32)
    assert [p.rank for p in v.culprits] == [13]
    assert v.failed == {20: "py-spy exit 1: Permission denied"}
    clean = group_ranks({**dumps, 20: [WAIT]}, NODES, world_size=32)
    assert v.confidence < clean.confidence


def test_everyone_waiting_with_a_rank_unseen_is_unknown_and_says_who() -> None:
    dumps = {r: [WAIT] for r in range(32) if r != 7}
    v = group_ranks(dumps, NODES, world_size=32)
    assert not v.culprits and v.failed == {7: "no process found for this rank"}
    assert "may be the culprit" in v.reason and v.confidence <= 0.3


def test_no_dominant_group_and_too_many_outside_name_no_one() -> None:
    mixed = {r: [[WAIT, DATA, CUDA][r % 3]] for r in range(30)}
    assert not group_ranks(mixed, NODES).culprits
    many = {r: [WAIT if r < 20 else DATA] for r in range(32)}
    v = group_ranks(many, NODES)
    assert not v.culprits and "too many" in v.reason


def test_a_save_in_progress_is_no_culprit() -> None:
    saving = dump("_save@torch/serialization.py", "save_checkpoint@megatron/checkpointing.py")
    barrier = dump("barrier@torch/distributed/distributed_c10d.py", "save_checkpoint@x.py")
    v = group_ranks({0: [saving], **{r: [barrier] for r in range(1, 16)}}, NODES)
    # the ranks in the save's barrier are in the save too: no one is outside it
    assert 0 in v.checkpointing and not v.culprits and "a save, not a hang" in v.reason


def test_busy_ranks_and_majority_of_samples() -> None:
    evaluating = dump("forward@model.py", "evaluate@train.py", active=True)
    assert busy(group_ranks({r: [evaluating] for r in range(8)}, NODES))
    slow = dump("slow_compute@job.py", active=True)
    # the slow rank is caught in its own work in 4 of 5 samples, once in the collective
    dumps = {r: [WAIT] * 5 for r in range(8)}
    dumps[2] = [slow, slow, WAIT, slow, slow]
    v = group_ranks(dumps, NODES)
    (p,) = v.culprits
    assert p.rank == 2 and p.samples == 5 and p.agreeing == 4 and p.state == "compute"
