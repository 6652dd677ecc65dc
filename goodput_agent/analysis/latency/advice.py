"""What to do about a latency rise, each remedy with the measured premise it rests on: a remedy
whose premise the two windows do not bear out is not given (no "more replicas" when the
arrivals did not rise). A configuration change that explains the verdict is answered with its
exact revert (the key, the value it had, the value it has), and nothing else.

Premises are paths into the report's `latency` object (advice.Premise), so a test can check
each one against the numbers the report prints.
"""

from __future__ import annotations

from collections.abc import Callable

from goodput_agent.analysis.advice import Advice, Premise, all_hold

from .facts import KV_FULL_MAX, KV_FULL_MEAN, LENGTH_RISE, Facts, fmt
from .model import ConfigChange, WindowStats

# engine settings that are command-line flags of the same name (vLLM: --max-num-seqs): the
# ones a revert can set back (num_gpu_blocks, say, follows from them)
FLAG_KEYS = ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization",
             "tensor_parallel_size", "max_model_len", "kv_cache_dtype")
ARRIVALS_ROSE = 1.15  # the arrival-rate ratio the queueing verdict calls a rise
AT_LIMIT = 0.95  # running requests at this share of max_num_seqs sit at the limit


def _window_numbers(b: WindowStats, i: WindowStats) -> dict[str, object]:
    """The numbers a premise is checked against, as the report's latency object holds them."""
    return {"baseline": b.model_dump(mode="json"), "incident": i.model_dump(mode="json")}


def _ratio_premise(f: Facts, field: str, factor: float, what: str) -> Premise:
    b, i = getattr(f.b, field), getattr(f.i, field)
    return Premise(left=f"incident.{field}", op=">=", right=f"baseline.{field}", factor=factor,
                   text=f"{what} x{(i or 0) / b:.2f} ({fmt(b, '/s')} -> {fmt(i, '/s')})"
                   if b else f"{what}: no baseline number")


def arrivals_rose(f: Facts) -> list[Premise]:
    field = "arrival_rate_est" if f.b.arrival_rate_est and f.i.arrival_rate_est \
        else "request_rate"
    return [_ratio_premise(f, field, ARRIVALS_ROSE, "arrivals rose")]


def _length_rose(f: Facts, dist: str, what: str) -> list[Premise]:
    stat = "mean" if getattr(f.b, dist).mean and getattr(f.i, dist).mean else "p50"
    b, i = getattr(getattr(f.b, dist), stat), getattr(getattr(f.i, dist), stat)
    return [Premise(left=f"incident.{dist}.{stat}", op=">=", right=f"baseline.{dist}.{stat}",
                    factor=LENGTH_RISE, text=f"{what} x{(i or 0) / b:.2f} "
                    f"({fmt(b, ' tok')} -> {fmt(i, ' tok')})" if b else what)]


def prompts_longer(f: Facts) -> list[Premise]:
    return _length_rose(f, "prompt_tokens", "prompts got longer")


def outputs_longer(f: Facts) -> list[Premise]:
    return _length_rose(f, "output_tokens", "outputs got longer")


def kv_full(f: Facts) -> list[Premise]:
    i = f.i
    if i.kv_usage_max is not None and i.kv_usage_max >= KV_FULL_MAX:
        return [Premise(left="incident.kv_usage_max", op=">=", right=KV_FULL_MAX,
                        text=f"the KV cache peaks at {fmt(i.kv_usage_max, '%')}")]
    if i.kv_usage_mean is not None:
        return [Premise(left="incident.kv_usage_mean", op=">=", right=KV_FULL_MEAN,
                        text=f"the KV cache is {fmt(i.kv_usage_mean, '%')} full on average")]
    return [Premise(left="incident.preemption_rate", op=">=", right=0.01,
                    text=f"requests are preempted {fmt(i.preemption_rate, '/s')}")]


def at_batch_limit_with_cache_room(f: Facts) -> list[Premise]:
    i = f.i
    return [Premise(left="incident.running_max", op=">=", right="incident.config.max_num_seqs",
                    factor=AT_LIMIT, text=f"running requests reach {fmt(i.running_max, '')} "
                    f"of max_num_seqs {f.max_num_seqs}"),
            Premise(left="incident.kv_usage_max", op="<", right=KV_FULL_MAX,
                    text=f"the KV cache peaks at only {fmt(i.kv_usage_max, '%')}")]


Fix = tuple[str, str, Callable[[Facts], list[Premise]]]  # topic, what to do, its premises
FIXES: dict[str, list[Fix]] = {
    "kv_cache_pressure": [
        ("engine_setting", "more KV-cache memory: a higher --gpu-memory-utilization, a larger "
         "--tensor-parallel-size, --kv-cache-dtype fp8, or a lower --max-model-len", kv_full),
        ("capacity", "fewer tokens in flight: cap max_tokens, or add replicas", kv_full)],
    "prompt_length": [
        ("engine_setting", "prefix caching (--enable-prefix-caching) when prompts share a "
         "prefix", prompts_longer),
        ("engine_setting", "tuning --max-num-batched-tokens (chunked prefill) to trade TTFT "
         "against ITL", prompts_longer),
        ("traffic", "a separate pool or a length limit for long-prompt traffic",
         prompts_longer)],
    "output_length": [
        ("traffic", "capping max_tokens in the client or the API gateway", outputs_longer),
        ("capacity", "more replicas, if the longer answers are wanted (they hold slots "
         "longer)", outputs_longer)],
    "queueing": [
        ("capacity", "more capacity for the arrival rate: more replicas, or rate limiting "
         "upstream", arrivals_rose),
        ("engine_setting", "raising --max-num-seqs: running requests sit at the limit and the "
         "KV cache has room", at_batch_limit_with_cache_room)],
}


def flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def revert_premise(c: ConfigChange) -> Premise:
    """The direction of the change that makes it explain the verdict (decide.weigh)."""
    left, right = f"incident.config.{c.key}", f"baseline.config.{c.key}"
    try:
        op = "<" if float(c.incident or "nan") < float(c.baseline or "nan") else ">"
    except ValueError:
        op = "!="
    return Premise(left=left, op=op, right=right,  # type: ignore[arg-type]
                   text=f"{c.key} went {c.baseline} -> {c.incident} ({c.source})")


def revert(c: ConfigChange, why: str) -> Advice:
    return Advice(
        topic="engine_setting", text=f"set {flag(c.key)} back to {c.baseline} (it went "
        f"{c.baseline} -> {c.incident}: {c.source})", rationale=why,
        details={"key": c.key, "flag": flag(c.key), "from": c.incident, "to": c.baseline,
                 "source": c.source},
        missing="the bundle holds no workload or manifest that sets it: apply the revert "
                "where the engine's arguments live", premises=[revert_premise(c)])


def latency_advice(category: str, f: Facts, explaining: list[tuple[ConfigChange, str]],
                   would_not_fix: list[str]) -> list[Advice]:
    """The exact revert of each configuration change that explains the verdict; otherwise the
    verdict's remedies whose premises the windows bear out."""
    if explaining:
        return [revert(c, why) for c, why in explaining]
    numbers = _window_numbers(f.b, f.i)
    out = []
    for topic, text, premises_of in FIXES.get(category, []):
        premises = premises_of(f)
        if all_hold(premises, numbers):
            out.append(Advice(topic=topic, text=text,
                              rationale="; ".join(p.text for p in premises),
                              details={"would_not_fix": would_not_fix}, premises=premises))
    return out
