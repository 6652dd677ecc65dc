"""One look at one running job: is it stalled, who hangs, is one node slow. Pure: the live
readers (detect/slurm_job.py, detect/metrics.py) and the eval (evals/live/) feed it the same
observations, so what the eval scores is what `goodput check` and the watch run.

Order: a stall first (progress stopped for longer than this job's history allows); then who
hangs, from the ranks' stacks (ranks outside the dominant group) and Flight Recorder dumps
(ranks whose last enqueued collective is behind the others'); without a stall, a node that
leaves its peers in the metrics (fail-slow), or a rank that the stack samples find in its own
work while the others wait for it in a collective (a straggler seen in its stacks).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from goodput_agent.analysis.live.failslow import FailSlowVerdict
from goodput_agent.analysis.live.stacks import StackVerdict, busy, group_ranks
from goodput_agent.analysis.live.stall import Phase, StallSettings, StallVerdict, judge_stall
from goodput_agent.parsing.pyspy_dump import ProcessDump

FindingKind = Literal["hang", "straggler", "gpu_throttling", "healthy", "unknown"]
STRAGGLER_SAMPLES = 3  # stack samples per rank before a rank is called slow from its stacks


class RankCollective(BaseModel):
    """A rank's collective progress from its Flight Recorder dump."""

    rank: int
    last_enqueued: int | None = None
    last_completed: int | None = None
    op: str | None = None


class Observation(BaseModel):
    """What one look at a running job saw."""

    job: str
    now: float
    progress: list[float] = Field(default_factory=list)
    steps: list[float] | None = None
    phases: list[Phase] = Field(default_factory=list)
    samples: list[float] | None = None  # a metric progress source: when samples exist
    dumps: dict[int, list[ProcessDump]] | None = None
    rank_nodes: dict[int, str] = Field(default_factory=dict)
    world_size: int | None = None
    flight: list[RankCollective] = Field(default_factory=list)
    failslow: FailSlowVerdict | None = None


class Finding(BaseModel):
    kind: FindingKind
    summary: str
    confidence: float
    node: str | None = None
    rank: int | None = None
    culprit_ranks: list[int] = Field(default_factory=list)
    stall: StallVerdict
    stacks: StackVerdict | None = None
    flight_behind: list[int] = Field(default_factory=list)
    failslow: FailSlowVerdict | None = None
    unknowns: list[str] = Field(default_factory=list)
    # the culprit node's own health over the last hour (DCGM: Xids, ECC, row remaps, ...)
    node_problems: list[str] = Field(default_factory=list)

    @property
    def alarm(self) -> bool:
        return self.kind in ("hang", "straggler", "gpu_throttling")


def flight_behind(flight: list[RankCollective]) -> list[int]:
    """Ranks whose last enqueued collective is behind the most advanced rank's."""
    known = [f for f in flight if f.last_enqueued is not None]
    if len(known) < 2:
        return []
    top = max(f.last_enqueued for f in known)  # type: ignore[type-var]
    behind = [f.rank for f in known if f.last_enqueued < top]  # type: ignore[operator]
    return behind if len(behind) <= max(1, len(known) // 4) else []


def stall_of(obs: Observation, settings: StallSettings | None = None) -> StallVerdict:
    return judge_stall(obs.progress, obs.now, steps=obs.steps, phases=obs.phases,
                       samples=obs.samples, settings=settings)


def assess(obs: Observation, settings: StallSettings | None = None,
           stall: StallVerdict | None = None) -> Finding:
    stall = stall or stall_of(obs, settings)
    stacks = (group_ranks(obs.dumps, obs.rank_nodes, obs.world_size)
              if obs.dumps is not None else None)
    behind = flight_behind(obs.flight)
    if stall.suspect and stacks is not None:
        stall = _read_stacks(obs, stall, stacks, settings)
    if stall.stalled:
        return _hang(obs, stall, stacks, behind)
    f = Finding(kind="healthy", summary=stall.reason, confidence=0.0, stall=stall,
                stacks=stacks, failslow=obs.failslow)
    if stall.state == "no_data":
        f.kind, f.unknowns = "unknown", [stall.reason]
    slow = obs.failslow
    if slow is not None and slow.slow:
        top = slow.slow[0]
        f.kind = top.category  # type: ignore[assignment]
        f.node, f.confidence = top.node, slow.confidence
        f.summary = (f"{top.node} is slower than the job's other nodes "
                     f"({'its GPUs throttled' if top.throttled else 'fail-slow'}): {slow.reason}")
        return f
    if stacks is not None and stacks.culprits and _slow_in_stacks(stacks):
        f.kind, f.culprit_ranks = "straggler", [p.rank for p in stacks.culprits]
        f.rank = stacks.culprits[0].rank if len(stacks.culprits) == 1 else None
        f.node = _one(stacks.culprit_nodes)
        f.confidence = round(min(0.8, stacks.confidence), 2)
        f.summary = ("the job progresses, but its stack samples find "
                     f"{_who(f.culprit_ranks, f.node)} in its own work while the others wait "
                     f"for it: {stacks.reason}")
    return f


def _read_stacks(obs: Observation, stall: StallVerdict, stacks: StackVerdict,
                 settings: StallSettings | None) -> StallVerdict:
    """What the ranks are doing decides a silence: a save or a busy phase (an evaluation, a
    long step) is given a phase's room; ranks idle in a collective while an announced phase
    should be running, with some rank outside them, is a hang after all."""
    if stacks.checkpointing or busy(stacks):
        kind = "checkpoint" if stacks.checkpointing else "eval"
        phase = Phase(kind=kind, start=stall.last_progress or obs.now)  # type: ignore[arg-type]
        again = judge_stall(obs.progress, obs.now, steps=obs.steps,
                            phases=[*obs.phases, phase], samples=obs.samples, settings=settings)
        again.notes.append(f"stacks: {stacks.reason or 'the ranks are busy: ' + kind}")
        return again
    dom = stacks.dominant
    if (stall.state == "in_phase" and stacks.culprits and dom is not None
            and dom.state == "collective"):
        stall = stall.model_copy()
        stall.state = "stalled"
        stall.reason = (f"no progress for {stall.silent_s:.0f} s, past an ordinary step's "
                        f"{stall.normal_s:.0f} s; a phase was announced, but no rank is in it: "
                        f"{len(stacks.dominant_ranks)} ranks wait in {dom.where}")
    return stall


def _slow_in_stacks(stacks: StackVerdict) -> bool:
    dom = stacks.dominant
    return (dom is not None and dom.state == "collective"
            and all(p.samples >= STRAGGLER_SAMPLES and p.agreeing * 2 > p.samples
                    and p.state != "collective" for p in stacks.culprits))


def _one(nodes: list[str]) -> str | None:
    return nodes[0] if len(nodes) == 1 else None


def _who(ranks: list[int], node: str | None) -> str:
    names = ", ".join(str(r) for r in ranks[:6]) + (" ..." if len(ranks) > 6 else "")
    return f"rank{'s' if len(ranks) > 1 else ''} {names}" + (f" on {node}" if node else "")


def _hang(obs: Observation, stall: StallVerdict, stacks: StackVerdict | None,
          behind: list[int]) -> Finding:
    f = Finding(kind="hang", summary="", confidence=0.5, stall=stall, stacks=stacks,
                flight_behind=behind, failslow=obs.failslow)
    from_stacks = [p.rank for p in stacks.culprits] if stacks is not None else []
    ranks = from_stacks or behind
    if from_stacks and behind and set(from_stacks) & set(behind):
        ranks = sorted(set(from_stacks) & set(behind))
        f.confidence = 0.9
    elif from_stacks:
        f.confidence = round(0.5 + 0.45 * (stacks.confidence if stacks else 0), 2)
    elif behind:
        f.confidence = 0.75
    f.culprit_ranks = ranks
    nodes = sorted({obs.rank_nodes[r] for r in ranks if r in obs.rank_nodes})
    f.node = _one(nodes)
    f.rank = ranks[0] if len(ranks) == 1 else None
    if ranks:
        how = ("its stack is outside the group the other ranks wait in" if from_stacks else
               "its Flight Recorder shows it never enqueued the collective the others wait in")
        where = (f": {stacks.reason}" if from_stacks and stacks is not None else "")
        f.summary = f"stalled: {stall.reason}; {_who(ranks, f.node)} hangs ({how}){where}"
    else:
        f.confidence = 0.5
        why = (stacks.reason if stacks is not None and stacks.reason
               else "no stack or Flight Recorder dump was taken")
        f.summary = f"stalled, culprit unknown: {stall.reason}; {why}"
        f.unknowns.append(f"culprit unknown: {why}")
    if stacks is not None and stacks.failed:
        f.unknowns.append("stack dumps failed: " + "; ".join(
            f"rank {r}: {why}" for r, why in list(stacks.failed.items())[:8]))
    return f
