"""Generated running jobs for `goodput eval --suite live`: progress logs, metric streams and
stack dumps of jobs of 8-512 nodes (8 ranks each), some healthy, some with a planted fault.

Each job is a seeded model, made at run time (nothing shipped):
- steps of a base time drawn log-uniformly from 0.3 to 20 s, lognormal noise (sigma 0.03-0.25)
  and rare spikes (1 % of steps, 1.5-2.5x); start-up of 1-5 min before the first step;
- checkpoint saves every 8-15 min lasting 20-400 s: announced in the log (Megatron's "saving
  checkpoint" / "successfully saved checkpoint" lines) in 70 % of the jobs that save,
  unannounced otherwise (then only the stacks show rank 0 in torch.save and the others in a
  barrier); evaluation phases every 12-20 min lasting 20-300 s, announced;
- progress read from the log (70 %) or from a step-counter metric scraped every 15 s (30 %),
  whose scrapes stop for 2-5 min in a third of those jobs (a gap, not a stall);
- per-node DCGM-like metrics every 10 s (SM clock, power, temperature, SM activity, and in half
  the jobs a per-rank step time and InfiniBand throughput) with per-node offsets, noise and,
  in a third of the jobs, transient dips of one node (10-30 s, 10-25 %);
- faults at onsets drawn between 10 min into the run and 8 min before its end: a hang (the
  steps stop; the culprit rank's stack is in data loading, a CUDA call or I/O while the
  others wait in all_reduce; variants: another rank's dump fails, py-spy absent but Flight
  Recorder dumps show the culprit behind, or every rank in the collective: no culprit), a
  straggler node (its step time up 12-40 % or its IB throughput down 20-50 %; the whole job
  slows in lock step), a throttled node (SM clock down 10-35 %, power down 15-40 %).
"""

from __future__ import annotations

import functools
import json
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from goodput_agent.parsing.pyspy_dump import ProcessDump, parse_json

Fault = Literal["healthy", "hang", "straggler", "throttle"]
RANKS_PER_NODE = 8
RUN_S = 45 * 60
GRID_S = 10.0  # metric samples
COUNTER_SCRAPE_S = 15.0
T0 = 1_780_000_000.0  # the runs' clock (epoch seconds)


class Pause(BaseModel):
    kind: Literal["checkpoint", "eval"]
    start: float
    end: float
    announced: bool


class LiveCase(BaseModel):
    job: str
    seed: int
    nodes: int
    step_s: float
    sigma: float
    start: float  # first step
    end: float
    fault: Fault
    onset: float | None = None
    culprit_rank: int | None = None
    culprit_node: str | None = None
    hang_variant: str | None = None
    source: Literal["log", "metric"] = "log"
    counter_gap: tuple[float, float] | None = None
    pauses: list[Pause] = Field(default_factory=list)
    marks: list[float] = Field(default_factory=list)  # step completion times
    log_lines: list[str] = Field(default_factory=list)
    slow_factor: float = 1.0

    @property
    def node_names(self) -> list[str]:
        return [f"{self.job}-n{i:03d}" for i in range(self.nodes)]


def _iso(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def _pauses(rng: np.random.Generator, start: float, end: float) -> list[Pause]:
    out: list[Pause] = []
    if rng.random() < 0.85:  # one job's saves write the same state: similar lengths
        every, announced = rng.uniform(480, 900), rng.random() < 0.7
        length = rng.uniform(20, 400)
        t = start + every
        while t < end:
            out.append(Pause(kind="checkpoint", start=t,
                             end=t + length * rng.lognormal(0, 0.15), announced=announced))
            t = out[-1].end + every
    if rng.random() < 0.5:
        every, length = rng.uniform(720, 1200), rng.uniform(20, 300)
        t = start + every * rng.uniform(0.5, 1.0)
        while t < end:
            if not any(p.start - 60 < t < p.end + 60 for p in out):
                out.append(Pause(kind="eval", start=t, end=t + length * rng.lognormal(0, 0.15),
                                 announced=True))
            t += every
    return sorted(out, key=lambda p: p.start)


def _steps(case: LiveCase, rng: np.random.Generator) -> None:
    """Step marks and the log's lines, pauses in between; a hang stops them at its onset."""
    t, step, lines = case.start, 0, [f"{_iso(case.start - 30)} building model, world size "
                                     f"{case.nodes * RANKS_PER_NODE}"]
    pauses = list(case.pauses)
    stop = case.onset if case.fault == "hang" else case.end
    while True:
        dt = case.step_s * float(rng.lognormal(0, case.sigma))
        if rng.random() < 0.01:
            dt *= rng.uniform(1.5, 2.5)
        if case.onset is not None and case.fault != "hang" and t >= case.onset:
            dt *= case.slow_factor
        if t + dt > stop:
            break
        t += dt
        step += 1
        case.marks.append(t)
        lines.append(f"{_iso(t)} iteration {step:8d}/ 1000000 | elapsed time per iteration "
                     f"(ms): {dt * 1000:.1f} | lm loss: {2.5 - step * 1e-4:.4f}")
        while pauses and pauses[0].start <= t:
            p = pauses.pop(0)
            length = p.end - p.start
            p.start, p.end = t, t + length  # where it really fell, after the step that ran
            if p.announced:
                what = ("saving checkpoint at iteration", "successfully saved checkpoint at "
                        "iteration") if p.kind == "checkpoint" else (
                        "Running evaluation at iteration", "validation loss at iteration")
                lines.append(f"{_iso(t + 0.5)} {what[0]} {step:8d} to /ckpt")
                if p.end <= stop:
                    lines.append(f"{_iso(p.end)} {what[1]} {step:8d}")
            t = p.end
    case.log_lines = lines


def make_case(seed: int, fault: Fault) -> LiveCase:
    rng = np.random.default_rng(seed)
    nodes = int(rng.choice([8, 16, 32, 64, 128, 256, 512]))
    step_s = float(np.exp(rng.uniform(np.log(0.3), np.log(20.0))))
    start = T0 + seed * 10_000 + rng.uniform(60, 300)
    case = LiveCase(job=f"live{seed:04d}", seed=seed, nodes=nodes, step_s=step_s,
                    sigma=float(rng.uniform(0.03, 0.25)), start=start, end=start + RUN_S,
                    fault=fault, source="metric" if rng.random() < 0.3 else "log")
    case.pauses = _pauses(rng, start, case.end)
    if case.source == "metric" and rng.random() < 0.33:
        g = start + rng.uniform(600, RUN_S - 600)
        case.counter_gap = (g, g + rng.uniform(120, 300))
    if fault != "healthy":
        case.onset = start + rng.uniform(600, RUN_S - 480)
        case.culprit_rank = int(rng.integers(0, nodes * RANKS_PER_NODE))
        case.culprit_node = case.node_names[case.culprit_rank // RANKS_PER_NODE]
    if fault == "hang":
        case.hang_variant = str(rng.choice(["plain"] * 7 + ["other_dump_fails", "flight_only",
                                                            "no_culprit"]))
        if case.hang_variant == "no_culprit":
            case.culprit_rank = case.culprit_node = None
    elif fault in ("straggler", "throttle"):
        case.slow_factor = float(rng.uniform(1.08, 1.3))
    _steps(case, rng)
    return case


def make_suite(seed: int = 29, jobs: int = 240) -> list[LiveCase]:
    faults: list[Fault] = ["healthy"] * 2 + ["hang"] * 1 + ["straggler", "throttle"]
    out = []
    for i in range(jobs):
        fault = faults[i % len(faults)] if i % 10 else "hang"
        out.append(make_case(seed * 1000 + i, fault))
    return out


# --- metric streams ---------------------------------------------------------------------


def metric_streams(case: LiveCase) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(grid times, metric -> values[time, node]) at GRID_S."""
    rng = np.random.default_rng(case.seed + 7)
    times = np.arange(case.start - 120, case.end, GRID_S)
    n, k = len(times), case.nodes
    base = {"sm_clock": (1980.0, 0.01, 0.005), "power": (620.0, 0.03, 0.03),
            "temp": (68.0, 0.04, 0.01), "sm_active": (0.82, 0.02, 0.02)}
    extra = rng.random() < 0.5
    if extra:
        base |= {"step_time": (case.step_s * 0.7, 0.01, case.sigma / 2),
                 "ib_bw": (40e9, 0.02, 0.04)}
    series: dict[str, np.ndarray] = {}
    for name, (level, offset, noise) in base.items():
        per_node = level * (1 + rng.normal(0, offset, k))
        series[name] = per_node[None, :] * (1 + rng.normal(0, noise, (n, k)))
    if rng.random() < 0.33:  # transient dips of single nodes
        for _ in range(int(rng.integers(1, 4))):
            i, j = int(rng.integers(10, n - 10)), int(rng.integers(0, k))
            width = int(rng.integers(1, 4))
            for name in ("sm_clock", "power", "sm_active"):
                series[name][i:i + width, j] *= 1 - rng.uniform(0.10, 0.25)
    if case.fault in ("straggler", "throttle") and case.onset is not None:
        _plant_slow(case, times, series, rng, extra)
    return times, series


def _plant_slow(case: LiveCase, times: np.ndarray, series: dict[str, np.ndarray],
                rng: np.random.Generator, extra: bool) -> None:
    after = times >= case.onset  # type: ignore[operator]
    j = case.culprit_rank // RANKS_PER_NODE  # type: ignore[operator]
    if case.fault == "throttle":
        series["sm_clock"][after, j] *= 1 - rng.uniform(0.10, 0.35)
        series["power"][after, j] *= 1 - rng.uniform(0.15, 0.40)
        series["temp"][after, j] *= 1 + rng.uniform(0.0, 0.2)
    elif extra and rng.random() < 0.5:
        series["step_time"][after, j] *= 1 + rng.uniform(0.12, 0.40)
    elif extra:
        series["ib_bw"][after, j] *= 1 - rng.uniform(0.20, 0.50)
        series["sm_active"][after, j] *= 1 - rng.uniform(0.05, 0.15)
    else:  # no per-rank series: the slow node idles more than its peers
        series["sm_active"][after, j] *= 1 - rng.uniform(0.08, 0.2)
    # the whole job slows in lock step: the others wait, their SM activity drops a little
    for name in ("sm_active",):
        series[name][after] *= 1 - 0.3 * (case.slow_factor - 1)


# --- stack dumps -------------------------------------------------------------------------


def _frames(*labels: str) -> list[dict]:
    out = []
    for label in labels:
        name, _, rest = label.partition(" ")
        file, _, line = rest.strip("()").rpartition(":")
        out.append({"name": name, "filename": "/opt/venv/lib/python3.11/site-packages/" + file,
                    "short_filename": file, "line": int(line), "module": None})
    return out


_TRAIN = ("train_step (train.py:212)", "main (train.py:300)", "<module> (train.py:320)")
STACKS = {
    "allreduce": _frames("all_reduce (torch/distributed/distributed_c10d.py:2501)",
                         "wrapper (torch/distributed/c10d_logger.py:83)", *_TRAIN),
    "barrier": _frames("barrier (torch/distributed/distributed_c10d.py:4159)",
                       "wrapper (torch/distributed/c10d_logger.py:83)",
                       "save_checkpoint (megatron/training/checkpointing.py:410)", *_TRAIN),
    "saving": _frames("_save (torch/serialization.py:884)", "save (torch/serialization.py:629)",
                      "save_checkpoint (megatron/training/checkpointing.py:402)", *_TRAIN),
    "data_loading": _frames("wait (threading.py:327)", "get (queue.py:180)",
                            "_try_get_data (torch/utils/data/dataloader.py:1133)",
                            "_next_data (torch/utils/data/dataloader.py:1328)",
                            "__next__ (torch/utils/data/dataloader.py:631)", *_TRAIN),
    "cuda": _frames("synchronize (torch/cuda/__init__.py:985)", *_TRAIN),
    "io": _frames("readinto (socket.py:706)", "read_shard (data/remote.py:88)", *_TRAIN),
    "evaluating": _frames("forward (torch/nn/modules/linear.py:125)",
                          "_call_impl (torch/nn/modules/module.py:1747)",
                          "evaluate (train.py:150)", "main (train.py:300)"),
    "computing": _frames("forward (model/attention.py:210)",
                         "_call_impl (torch/nn/modules/module.py:1747)", *_TRAIN),
}
_ACTIVE = {"evaluating", "computing", "saving"}


@functools.cache
def _dump(name: str) -> ProcessDump:
    text = json.dumps([{"pid": 1, "thread_id": 1, "thread_name": "MainThread",
                        "active": name in _ACTIVE, "frames": STACKS[name]}])
    return parse_json(text)  # the same parser the live dumps go through


def dumps_at(case: LiveCase, t: float) -> tuple[dict[int, list[ProcessDump]], dict]:
    """Every rank's dump at `t` when the job is silent there, and Flight Recorder progress."""
    rng = np.random.default_rng(case.seed + int(t))
    ranks = case.nodes * RANKS_PER_NODE
    waiting, failed = _dump("allreduce"), ProcessDump(error="py-spy exit 1: Permission denied")
    flight: dict[int, tuple[int, str]] = {}
    pause = next((p for p in case.pauses if p.start <= t <= p.end), None)
    if case.fault == "hang" and case.onset is not None and t >= case.onset:
        dumps = {r: [waiting] for r in range(ranks)}
        variant = case.hang_variant
        if case.culprit_rank is not None:
            culprit = str(rng.choice(["data_loading", "cuda", "io"]))
            dumps[case.culprit_rank] = [_dump(culprit)]
        if variant == "other_dump_fails":
            other = (case.culprit_rank + 1) % ranks  # type: ignore[operator]
            dumps[other] = [failed]
        if variant == "flight_only":
            absent = ProcessDump(error="py-spy not found on the node")
            dumps = {r: [absent] for r in range(ranks)}
            seq = 4000 + int(rng.integers(0, 1000))
            flight = {r: (seq, "nccl:all_reduce") for r in range(ranks)}
            flight[case.culprit_rank] = (seq - 1, "nccl:all_reduce")  # type: ignore[index]
        return dumps, flight
    if pause is not None and pause.kind == "checkpoint":
        dumps = {r: [_dump("barrier")] for r in range(ranks)}
        dumps[0] = [_dump("saving")]
        return dumps, flight
    busy = "evaluating" if pause is not None else "computing"  # an eval, or a long step
    return {r: [_dump(busy)] for r in range(ranks)}, flight
