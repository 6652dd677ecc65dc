"""Deciding a latency verdict from the two windows' facts: the cause, its evidence, what would
and would not fix it, and whether a configuration change between the windows explains it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from goodput_agent.analysis.abstention import (
    NOTHING_TO_EXPLAIN,
    READ_NEGATIVE,
    SILENCE,
    UNEXPLAINED,
)
from goodput_agent.metrics.source import MissingEvidence
from goodput_agent.metrics.vllm_names import ConfigRevision

from .advice import ARRIVALS_ROSE, FLAG_KEYS, latency_advice
from .facts import LENGTH_RISE, RISE, Evidence, Facts, fmt, headline
from .model import ConfigChange, LatencyVerdict, WindowStats

# what would not fix each cause (what would: latency_advice.FIXES, each with its premise)
WOULD_NOT_FIX: dict[str, list[str]] = {
    "kv_cache_pressure": [
        "raising --max-num-seqs: the KV cache is the limit, not the batch size; more "
        "sequences only preempt each other more",
        "raising --max-num-batched-tokens: it sizes prefill chunks, not the cache"],
    "prompt_length": [
        "raising --max-num-seqs: requests are not waiting for a batch slot",
        "raising --gpu-memory-utilization: the KV cache has room"],
    "output_length": [
        "engine tuning: inter-token latency is as before, the engine is not slower; the "
        "answers are longer",
        "raising --max-num-seqs or --gpu-memory-utilization: neither shortens a generation"],
    "queueing": [
        "raising --gpu-memory-utilization: the KV cache is not full",
        "prompt or output changes: the requests are the same as before"],
}


@dataclass
class _Causes:
    """The causes seen so far, in the order they are weighed."""

    cand: list[tuple[str, float, str]] = field(default_factory=list)  # category, conf, summary
    also: dict[str, str] = field(default_factory=dict)  # why a cause also seen is not first
    why_not: dict[str, str] = field(default_factory=dict)


def decide(f: Facts, ev: Evidence, diff: list[ConfigChange],
           missing: list[MissingEvidence]) -> LatencyVerdict:
    """The cause of a latency rise, weighed in the module's order (KV cache, request lengths,
    queueing), or unknown with what did change."""
    deciding: dict[str, float | None] = {"e2e_p90_ratio": f.e2e_p90, "e2e_p50_ratio": f.e2e_p50}
    changed = {c.key: c for c in diff}
    if not f.rose():
        return _no_rise(f, ev, deciding, changed)
    causes = _Causes()
    _kv_cache_pressure(f, ev, deciding, causes)
    _request_lengths(f, ev, deciding, causes)
    _queueing(f, ev, deciding, changed, causes)
    if not causes.cand:
        return _unexplained(f, ev, deciding, causes.why_not, missing)
    return _verdict(f, ev, diff, missing, deciding, causes)


def _no_rise(f: Facts, ev: Evidence, deciding: dict[str, float | None],
             changed: dict[str, ConfigChange]) -> LatencyVerdict:
    b, i = f.b, f.i
    headline(ev, f, None)
    return LatencyVerdict(
        # measured over both windows, the absence of a rise is first-hand (abstention.py)
        category="unknown", confidence=NOTHING_TO_EXPLAIN if f.e2e_p90 is not None else SILENCE,
        summary=(f"End-to-end latency did not rise: p90 {fmt(b.e2e.p90)} -> "
                 f"{fmt(i.e2e.p90)}, p50 {fmt(b.e2e.p50)} -> {fmt(i.e2e.p50)}"
                 + (f"; configuration changed ({', '.join(changed)}) without a latency "
                    "effect" if changed else "")),
        deciding=deciding, evidence=ev.for_verdict(None),
        unknowns=["no latency rise between the windows: nothing to explain"])


def _kv_cache_pressure(f: Facts, ev: Evidence, deciding: dict[str, float | None],
                       causes: _Causes) -> None:
    b, i = f.b, f.i
    cand, why_not = causes.cand, causes.why_not
    kv_full, pre_up = f.kv_full(), f.preemptions_up()
    # a full cache that holds waiting requests back is the limit too (vLLM admits a request
    # only when its prompt's blocks are free), whether or not batch slots are free
    blocks_admission = kv_full and f.waiting_grew()
    deciding.update(kv_usage_max=i.kv_usage_max, kv_usage_mean=i.kv_usage_mean,
                    preemption_rate=i.preemption_rate,
                    baseline_preemption_rate=b.preemption_rate)
    if kv_full and (pre_up or blocks_admission) or (pre_up and i.kv_usage_max is None):
        conf = 0.9 if kv_full and pre_up else 0.75 if kv_full else 0.65
        held = ""
        if blocks_admission:
            held = f"; {i.waiting_mean or 0:.0f} requests wait for cache blocks"
            if f.below_batch_limit():
                held += (f" while at most {i.running_max or 0:.0f} of max_num_seqs "
                         f"{f.max_num_seqs} run")
        cand.append(("kv_cache_pressure", conf,
                     f"The KV cache is the limit: usage peaks at {fmt(i.kv_usage_max, '%')} "
                     f"(mean {fmt(i.kv_usage_mean, '%')}, baseline "
                     f"{fmt(b.kv_usage_mean, '%')}) and requests are preempted "
                     f"{fmt(i.preemption_rate, '/s')} (baseline "
                     f"{fmt(b.preemption_rate or 0.0, '/s')}){held}; decode p90 "
                     f"{fmt(b.decode.p90)} -> {fmt(i.decode.p90)}"))
        ev.add("kv_usage", "max_over_time({m})", b.kv_usage_max, i.kv_usage_max, "%",
               "kv_cache_pressure")
        ev.add("preemptions", "rate({m})", b.preemption_rate, i.preemption_rate, "/s",
               "kv_cache_pressure")
    else:
        why_not["kv_cache_pressure"] = (
            f"KV-cache usage peaks at {fmt(i.kv_usage_max, '%')} (mean "
            f"{fmt(i.kv_usage_mean, '%')}) with {fmt(i.preemption_rate or 0.0, '/s')} "
            "preemptions: the cache is not the limit")


def _request_lengths(f: Facts, ev: Evidence, deciding: dict[str, float | None],
                     causes: _Causes) -> None:
    b, i = f.b, f.i
    cand, also, why_not = causes.cand, causes.also, causes.why_not
    deciding.update(prompt_mean_ratio=f.prompt, prefill_p90_ratio=f.prefill_p90,
                    ttft_p90_ratio=f.ttft_p90, output_mean_ratio=f.output,
                    decode_p90_ratio=f.decode_p90, itl_ratio=f.itl)
    lengths = []
    if f.longer_prompts():
        share = f.share("prefill") or 0.0
        lengths.append(("prompt_length", 0.8 if (f.output or 1) < LENGTH_RISE else 0.6,
                        f"Prompts got longer: mean {fmt(b.prompt_tokens.mean, ' tok')} -> "
                        f"{fmt(i.prompt_tokens.mean, ' tok')} (x{f.prompt:.2f}); prefill p90 "
                        f"{fmt(b.prefill.p90)} -> {fmt(i.prefill.p90)}, TTFT p90 "
                        f"{fmt(b.ttft.p90)} -> {fmt(i.ttft.p90)}", share))
    elif f.prompt is None:
        why_not["prompt_length"] = "no prompt-length histogram"
    else:
        why_not["prompt_length"] = (
            f"prompt length x{f.prompt:.2f} (mean {fmt(b.prompt_tokens.mean, ' tok')} -> "
            f"{fmt(i.prompt_tokens.mean, ' tok')}), prefill p90 x{f.prefill_p90 or 0:.2f}, "
            f"TTFT p90 x{f.ttft_p90 or 0:.2f}: " + (
                "prompts did not get materially longer" if f.prompt < LENGTH_RISE else
                "longer prompts, but prefill and TTFT did not move"))
    if f.longer_outputs():
        share = f.share("decode") or 0.0
        flat_itl = f.itl is None or f.itl < LENGTH_RISE
        lengths.append(("output_length", 0.85 if flat_itl else 0.6,
                        f"Outputs got longer: mean {fmt(b.output_tokens.mean, ' tok')} -> "
                        f"{fmt(i.output_tokens.mean, ' tok')} (x{f.output:.2f}); decode p90 "
                        f"{fmt(b.decode.p90)} -> {fmt(i.decode.p90)} while inter-token "
                        f"latency moved x{f.itl or 0:.2f} ({fmt(b.itl.mean)} -> "
                        f"{fmt(i.itl.mean)}): the engine is as fast per token, the answers "
                        "are longer", share))
    elif f.output is None:
        why_not["output_length"] = "no output-length histogram"
    else:
        why_not["output_length"] = (
            f"output length x{f.output:.2f} (mean {fmt(b.output_tokens.mean, ' tok')} -> "
            f"{fmt(i.output_tokens.mean, ' tok')}), decode p90 x{f.decode_p90 or 0:.2f}: " + (
                "generations did not get materially longer" if f.output < LENGTH_RISE else
                "longer generations, but decode time did not move"))
    for k, (cat, conf, text, _share) in enumerate(sorted(lengths, key=lambda x: -x[3])):
        cand.append((cat, conf, text))
        also[cat] = ("the requests are longer too, but the cache is the limit they hit"
                     if cand[0][0] == "kv_cache_pressure" else
                     "longer too, but its phase rose less" if k else "")
        if cat == "prompt_length":
            ev.add("prompt_tokens", "mean of {m}", b.prompt_tokens.mean, i.prompt_tokens.mean,
                   " tok", cat)
            ev.add("prefill", "histogram_quantile(0.9, {m})", b.prefill.p90, i.prefill.p90,
                   "s", cat)
            ev.add("ttft", "histogram_quantile(0.9, {m})", b.ttft.p90, i.ttft.p90, "s", cat)
        else:
            ev.add("output_tokens", "mean of {m}", b.output_tokens.mean, i.output_tokens.mean,
                   " tok", cat)
            ev.add("decode", "histogram_quantile(0.9, {m})", b.decode.p90, i.decode.p90,
                   "s", cat)
            ev.add("itl", "mean of {m}", b.itl.mean, i.itl.mean, "s", cat)


def _queueing(f: Facts, ev: Evidence, deciding: dict[str, float | None],
              changed: dict[str, ConfigChange], causes: _Causes) -> None:
    b, i = f.b, f.i
    cand, also, why_not = causes.cand, causes.also, causes.why_not
    deciding.update(queue_p90=i.queue.p90, baseline_queue_p90=b.queue.p90,
                    waiting_mean=i.waiting_mean, baseline_waiting_mean=b.waiting_mean,
                    running_mean=i.running_mean, arrival_rate_ratio=f.rate,
                    queue_share_of_mean_rise=f.share("queue"))
    if f.queue_grew():
        why = []
        if f.rate is not None and f.rate >= ARRIVALS_ROSE:
            why.append(f"arrivals rose x{f.rate:.2f} ({fmt(b.arrival_rate_est, '/s')} -> "
                       f"{fmt(i.arrival_rate_est, '/s')})")
        if "max_num_seqs" in changed:
            c = changed["max_num_seqs"]
            why.append(f"--max-num-seqs changed {c.baseline} -> {c.incident}")
        if f.at_batch_limit():
            why.append(f"running requests reach the batch limit ({i.running_max:.0f} of "
                       f"max_num_seqs {f.max_num_seqs})")
        also["queueing"] = (
            f"requests do wait longer (queue p90 {fmt(b.queue.p90)} -> {fmt(i.queue.p90)}), "
            "but as a consequence: " + (
                "the full KV cache holds them back, so raising max_num_seqs would not help"
                if cand and cand[0][0] == "kv_cache_pressure" else
                "the requests changed and take the capacity"))
        cand.append(("queueing", 0.85 if why else 0.65,
                     f"Requests wait in the queue: queue p90 {fmt(b.queue.p90)} -> "
                     f"{fmt(i.queue.p90)}, waiting {b.waiting_mean or 0:.1f} -> "
                     f"{i.waiting_mean or 0:.1f} on average"
                     + (f"; {', '.join(why)}" if why else "")
                     + "; request lengths and the KV cache are not the limit"))
        ev.add("queue", "histogram_quantile(0.9, {m})", b.queue.p90, i.queue.p90, "s",
               "queueing")
        ev.add("waiting", "avg_over_time({m})", b.waiting_mean, i.waiting_mean, "", "queueing")
    else:
        why_not["queueing"] = (
            f"queue p90 {fmt(b.queue.p90)} -> {fmt(i.queue.p90)} and waiting "
            f"{fmt(b.waiting_mean, '')} -> {fmt(i.waiting_mean, '')}: requests do not wait "
            "materially longer for a slot")


def _unexplained(f: Facts, ev: Evidence, deciding: dict[str, float | None],
                 why_not: dict[str, str], missing: list[MissingEvidence]) -> LatencyVerdict:
    b, i = f.b, f.i
    headline(ev, f, None)
    slower = []
    if f.itl is not None and f.itl >= RISE:
        slower.append(f"inter-token latency rose x{f.itl:.2f} ({fmt(b.itl.mean)} -> "
                      f"{fmt(i.itl.mean)}) with the same lengths, no queue and no KV "
                      "pressure: each decode step is slower (GPU clocks, a noisy "
                      "neighbour, a different model build) - outside these metrics")
        ev.add("itl", "mean of {m}", b.itl.mean, i.itl.mean, "s", None)
    return LatencyVerdict(
        # every class ruled out by its own measured metric is a read negative; with metrics
        # missing, the class they would show may be the cause (abstention.py)
        category="unknown", confidence=UNEXPLAINED if missing else READ_NEGATIVE,
        deciding=deciding,
        evidence=ev.for_verdict(None),
        summary=(f"End-to-end latency rose (p90 {fmt(b.e2e.p90)} -> {fmt(i.e2e.p90)}) "
                 "but none of queueing, KV-cache pressure, prompt or output length explains "
                 "it" + (f": {slower[0]}" if slower else "")),
        alternatives=[(c, 0.1, w) for c, w in why_not.items()],
        unknowns=["what slowed the engine: look at GPU clocks and throttling "
                  "(DCGM_FI_DEV_SM_CLOCK, clock event reasons) or a profile"])


def _verdict(f: Facts, ev: Evidence, diff: list[ConfigChange], missing: list[MissingEvidence],
             deciding: dict[str, float | None], causes: _Causes) -> LatencyVerdict:
    cand, also, why_not = causes.cand, causes.also, causes.why_not
    cat, conf, summary = cand[0]
    headline(ev, f, cat)
    if missing:
        conf = max(0.2, conf - 0.2)
    config_notes = [f"{c.key} {c.baseline} -> {c.incident} ({c.source}; {weigh(cat, c)})"
                    for c in diff]
    if config_notes:
        summary += "; configuration diff between the windows: " + "; ".join(config_notes)
    would_not = WOULD_NOT_FIX[cat]
    explaining = [(c, w) for c in diff if c.key in FLAG_KEYS and c.baseline
                  and (w := weigh(cat, c)).startswith("explains")]
    advice = latency_advice(cat, f, explaining, would_not)
    alternatives = [(c, round(min(cf, conf) * 0.5, 2), also.get(c) or t)
                    for c, cf, t in cand[1:]]
    alternatives += [(c, 0.05, w) for c, w in why_not.items()]
    return LatencyVerdict(category=cat, confidence=round(conf, 2), summary=summary,
                          deciding=deciding, would_fix=[a.text for a in advice],
                          would_not_fix=list(would_not), advice=advice,
                          evidence=ev.for_verdict(cat), alternatives=alternatives)


# the direction of a change that takes capacity away, per cause it can explain
_LESS = {"max_num_seqs": ("queueing", -1), "gpu_memory_utilization": ("kv_cache_pressure", -1),
         "num_gpu_blocks": ("kv_cache_pressure", -1),
         "tensor_parallel_size": ("kv_cache_pressure", -1),
         "max_model_len": ("kv_cache_pressure", 1)}


def weigh(category: str, c: ConfigChange) -> str:
    """Whether a configuration change can explain the verdict."""
    if c.key == "kv_cache_dtype" and category == "kv_cache_pressure":
        fp8 = [str(v).startswith("fp8") for v in (c.baseline, c.incident)]
        return "explains it: fp8 halves the bytes per cached token" if fp8 == [True, False] \
            else "does not shrink the cache"
    rule = _LESS.get(c.key)
    try:
        up = float(c.incident or "nan") > float(c.baseline or "nan")
        down = float(c.incident or "nan") < float(c.baseline or "nan")
    except ValueError:
        up = down = False
    if rule and rule[0] == category and (down if rule[1] < 0 else up):
        return "explains it: " + ("fewer batch slots for the same arrivals"
                                  if category == "queueing" else "a smaller KV cache")
    if category in ("prompt_length", "output_length"):
        return "not the cause: configuration does not change request lengths"
    if rule and rule[0] == category:
        return "not the cause: it adds capacity"
    return "not a known cause of this"


def config_diff(b: WindowStats, i: WindowStats, revisions: list[ConfigRevision],
                info_metric: str | None) -> list[ConfigChange]:
    out = []
    for key in sorted(set(b.config) | set(i.config)):
        vb, vi = b.config.get(key), i.config.get(key)
        if vb != vi:
            src = next((r.source for r in revisions if key in r.args), None) or \
                (info_metric or "config")
            out.append(ConfigChange(key=key, baseline=vb, incident=vi, source=src))
    return out
