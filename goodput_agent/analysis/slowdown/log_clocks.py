"""A slowdown read from the training log (from_logs.py), weighed against the GPUs' clocks when
the bundle has DCGM metrics and no trace: the log says who is slow and when, DCGM whether a GPU
throttled. Weighed as the trace path weighs a throttled GPU (analyze.py, candidates.py):

- a throttled GPU on the node of the straggler the log names (its GPU when NCCL's map gives the
  rank's device index, else the node's only throttled GPU, else the node, no GPU named) is the
  cause: throttle.WITH_ONE_SIGN, the straggler being one sign that it costs time (a trace's
  per-call kernel times would be a second). DCGM's reasons and clocks are the GPU's own record;
- throttled GPUs and a rise the log cannot explain: throttling, at throttle.NO_SIGN (the log's lines
  carry no time to tie its rise to the throttled stretch);
- a log verdict of another class (a timer that grew) stands; throttling is its alternative;
- clocks read and none throttled: said beside an `unknown`, which stays what it was.
"""

from __future__ import annotations

from .model import SlowdownVerdict
from .run import short_host
from .throttle import NO_SIGN, WITH_ONE_SIGN, ThrottleFinding

AS_ALTERNATIVE = 0.3


def weigh_clocks(v: SlowdownVerdict, clocks: list[ThrottleFinding],
                 rank_gpus: dict[int, str]) -> SlowdownVerdict:
    hot = [f for f in clocks if f.throttled]
    if not hot:
        if clocks and v.category == "unknown":
            v.unknowns.append(f"DCGM shows no throttling on the {len(clocks)} GPU"
                              f"{'s' if len(clocks) != 1 else ''} it reports")
        return v
    if v.category == "straggler":
        if there := _drives(v, hot, rank_gpus):
            return _throttled_straggler(v, there)
        v.alternatives.append(("gpu_throttling", AS_ALTERNATIVE, f"{_where(hot)} throttles, "
                               f"but not on {v.node or 'the straggler'}'s GPUs"))
        return v
    if v.category == "unknown":
        return SlowdownVerdict(
            category="gpu_throttling", confidence=NO_SIGN, node=_one_node(hot),
            gpu=hot[0].gpu if len(hot) == 1 else None,
            evidence=[e for f in hot for e in f.evidence[:1]][:6] + v.evidence[:2],
            summary=f"{_where(hot)} throttle{'s' if len(hot) == 1 else ''} "
                    f"({_reasons(hot)}); {v.summary}",
            unknowns=[*v.unknowns, "the training log's lines carry no time to tie its slowdown "
                      "to the throttled stretch; a trace of a slow and a good stretch would"])
    v.alternatives.append(("gpu_throttling", AS_ALTERNATIVE,
                           f"{_where(hot)} throttles, but the log names {v.category}"))
    return v


def _drives(v: SlowdownVerdict, hot: list[ThrottleFinding], rank_gpus: dict[int, str]
            ) -> list[ThrottleFinding]:
    """The throttled GPUs that may run the straggler: its own when NCCL's map gives its device
    index, else every throttled GPU on its node."""
    there = [f for f in hot if v.node and short_host(f.node) == short_host(v.node)]
    device = rank_gpus.get(v.rank) if v.rank is not None else None
    if device is not None and device.isdigit():
        return [f for f in there if f.gpu == device]  # [] when its own GPU does not throttle
    return there


def _throttled_straggler(v: SlowdownVerdict, there: list[ThrottleFinding]) -> SlowdownVerdict:
    f = there[0]
    what = (f"GPU {f.gpu} on {f.node} throttles ({f.describe()})" if len(there) == 1 else
            f"{_where(there)} throttle ({_reasons(there)})")
    return SlowdownVerdict(
        category="gpu_throttling", confidence=WITH_ONE_SIGN, rank=v.rank, node=v.node,
        gpu=f.gpu if len(there) == 1 else None,
        evidence=[e for g in there for e in g.evidence[:1]][:4] + v.evidence[:2],
        summary=f"{what}, on the node of the straggler the training log names: {v.summary}",
        alternatives=[("straggler", AS_ALTERNATIVE, "the rank is slow because its GPU "
                       "throttles: DCGM says why")],
        unknowns=[*v.unknowns, "that the throttled GPU's kernels are what is slow is inferred "
                  "from DCGM and the log's straggler (a trace would confirm it)"])


def _where(hot: list[ThrottleFinding]) -> str:
    if len(hot) == 1:
        return f"GPU {hot[0].gpu} on {hot[0].node}"
    nodes = sorted({f.node or "?" for f in hot})
    return f"{len(hot)} GPUs on {', '.join(nodes[:4])}{' ...' if len(nodes) > 4 else ''}"


def _reasons(hot: list[ThrottleFinding]) -> str:
    return ", ".join(sorted({r for f in hot for r in f.reasons})) or "low SM clock"


def _one_node(hot: list[ThrottleFinding]) -> str | None:
    nodes = {f.node for f in hot}
    return next(iter(nodes)) if len(nodes) == 1 else None
