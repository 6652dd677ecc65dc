"""One look at a running job, combined: the stall, the stacks, Flight Recorder, the metrics;
and what the recorded investigation proposes (through the gate: recorded, never run)."""

from __future__ import annotations

import numpy as np

from goodput_agent.analysis.live.failslow import judge_failslow
from goodput_agent.analysis.live.stall import Phase
from goodput_agent.detect.assess import Observation, RankCollective, assess
from goodput_agent.detect.record import proposals, record
from goodput_agent.ledger import Ledger
from goodput_agent.parsing.pyspy_dump import Frame, ProcessDump, ThreadStack
from tests.detect.named import named


def dump(name: str, file: str, active: bool = False) -> ProcessDump:
    return ProcessDump(threads=[ThreadStack("MainThread", active, [Frame(name, file, 1),
                                                                   Frame("main", "t.py", 9)])])


WAIT = dump("all_reduce", "torch/distributed/distributed_c10d.py")
MARKS = [1000.0 + i for i in range(60)]
NODES = {r: f"n{r // 4}" for r in range(16)}


def obs(now: float, **kw: object) -> Observation:
    return Observation(job="slurm:1", now=now, progress=MARKS, rank_nodes=NODES,
                       world_size=16, **kw)


def test_hang_with_culprit_from_stacks_and_flight_recorder_agreeing() -> None:
    dumps = {r: [WAIT] for r in range(16)}
    dumps[6] = [dump("synchronize", "torch/cuda/__init__.py")]
    flight = [RankCollective(rank=r, last_enqueued=100 if r != 6 else 99) for r in range(16)]
    f = assess(obs(MARKS[-1] + 120, dumps=dumps, flight=flight))
    assert (f.kind, f.rank, f.node, f.confidence) == ("hang", 6, "n1", 0.9)
    tools = named(proposals(f, "slurm", "1"))
    assert tools == ["slurm_drain_node", "slurm_requeue_job"]  # a CUDA call: the hardware's


def test_flight_recorder_alone_and_nothing_at_all() -> None:
    absent = {r: [ProcessDump(error="py-spy not found on n0")] for r in range(16)}
    flight = [RankCollective(rank=r, last_enqueued=50 - (r == 9)) for r in range(16)]
    f = assess(obs(MARKS[-1] + 120, dumps=absent, flight=flight))
    assert (f.kind, f.rank, f.confidence) == ("hang", 9, 0.75)
    blind = assess(obs(MARKS[-1] + 120, dumps=absent))
    assert blind.kind == "hang" and blind.rank is None and blind.confidence == 0.5
    assert "culprit unknown" in blind.summary and any("py-spy not found" in u
                                                      for u in blind.unknowns)
    assert named(proposals(blind, "slurm", "1")) == ["advice: collect_stacks"]


def test_an_announced_phase_nobody_is_in_is_a_hang_and_a_busy_one_is_not() -> None:
    phase = [Phase(kind="checkpoint", start=MARKS[-1] + 0.5)]
    dumps = {r: [WAIT] for r in range(16)}
    dumps[3] = [dump("load_batch", "data.py")]
    f = assess(obs(MARKS[-1] + 120, phases=phase, dumps=dumps))
    assert f.kind == "hang" and f.rank == 3 and "no rank is in it" in f.stall.reason
    assert named(proposals(f, "slurm", "1")) == ["advice: code_fix"]  # its own data step
    evaluating = {r: [dump("forward", "model.py", active=True)] for r in range(16)}
    busy = assess(obs(MARKS[-1] + 120, dumps=evaluating))
    assert busy.kind == "healthy" and not busy.alarm


def test_a_slow_node_from_metrics_while_progressing() -> None:
    clock = 1980 * (1 + np.random.default_rng(2).normal(0, 0.005, (5, 8)))
    clock[:, 2] *= 0.75
    slow = judge_failslow([f"n{i}" for i in range(8)], {"sm_clock": clock})
    f = assess(obs(MARKS[-1] + 1, failslow=slow))
    assert (f.kind, f.node) == ("gpu_throttling", "n2")
    assert named(proposals(f, "kubernetes", None)) == ["k8s_cordon_node"]


def test_the_finding_is_an_investigation_in_the_ledger(tmp_path) -> None:  # noqa: ANN001
    dumps = {r: [WAIT] for r in range(16)}
    dumps[6] = [dump("synchronize", "torch/cuda/__init__.py")]
    f = assess(obs(MARKS[-1] + 120, dumps=dumps))
    with Ledger(tmp_path / "l.duckdb") as lg:
        report = record(lg, "slurm-job-1", "is job 1 stalled?", f, [], [], [], "slurm", "1", [])
        actions = lg.rows("SELECT tool, status, mutating FROM actions ORDER BY id")
        claims = lg.rows("SELECT category, rank, node, status FROM claims")
    assert report.kind == "failure" and report.root_cause.category == "hang"
    assert claims == [{"category": "hang", "rank": 6, "node": "n1", "status": "supported"}]
    assert actions == [{"tool": "slurm_drain_node", "status": "proposed", "mutating": True},
                       {"tool": "slurm_requeue_job", "status": "proposed", "mutating": True}]
