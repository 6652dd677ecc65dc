"""The suite's plan: the cases each cause plants, the decoys, and the cases with no change."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from goodput_agent.evals.latency.spec import BASE_TIME, LatencyCaseSpec, ModelSpec, Regime


class _Plan:
    """The suite being planned: the seed's random source, the specs so far."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.specs: list[LatencyCaseSpec] = []

    def add(self, slug: str, category: str, before: Regime, after: Regime | None, *,
            ramp_s: float = 0.0, restart: bool = False, second: ModelSpec | None = None,
            **kw: Any) -> None:
        i = len(self.specs) + 1
        change_s = float(self.rng.randrange(1620, 2400, 15)) if after is not None else None
        model = ModelSpec(name=kw.pop("model", "llama-3.1-8b"), before=before, after=after,
                          change_s=change_s, ramp_s=ramp_s, restart=restart)
        models = [model] + ([second] if second else [])
        if kw.get("gpu_util") in ("up", "down") and "gpu_util_shift_s" not in kw:
            shift = change_s if change_s else float(self.rng.randrange(1620, 2400, 15))
            kw["gpu_util_shift_s"] = shift
        self.specs.append(LatencyCaseSpec(case_id=f"l{i:02d}-{slug}", category=category,
                                     variant=slug, seed=self.seed,
                                     start=BASE_TIME + timedelta(hours=3 * i), models=models,
                                     **kw))


def _queueing(add: Callable[..., None]) -> None:
    """queueing: more arrivals than the batch limit can serve, or a lower limit."""
    base = Regime()
    busy = Regime(rate=3.8, max_num_seqs=24)  # ~80% of what 24 slots serve
    add("queueing-arrival-surge", "queueing", busy, busy.model_copy(update={"rate": 5.8}),
        notes="arrivals 3.8 -> 5.8 req/s against max_num_seqs 24: the batch is full and the "
              "waiting queue grows; lengths and the KV cache are unchanged")
    add("queueing-old-names", "queueing", busy, busy.model_copy(update={"rate": 5.6}),
        names="old", notes="V0 metric names (gpu_cache_usage_perc, time_per_output_token)")
    add("queueing-max-num-seqs-lowered", "queueing", Regime(rate=5.0, max_num_seqs=128),
        Regime(rate=5.0, max_num_seqs=20), restart=True, config_evidence="both",
        notes="a redeploy lowered --max-num-seqs 128 -> 20: the same load now queues")
    add("queueing-gpu-util-falls", "queueing", busy, busy.model_copy(update={"rate": 6.0}),
        gpu_util="down", misleading=True,
        notes="GPU utilization falls as latency rises (a decoy): the queue is the cause")
    add("queueing-two-engines", "queueing", Regime(rate=7.6, max_num_seqs=24),
        Regime(rate=11.5, max_num_seqs=24), engines=2,
        notes="data parallel: two engines, the sum of their histograms")
    add("queueing-both-names-two-models", "queueing", busy, busy.model_copy(update={"rate": 5.7}),
        names="both", second=ModelSpec(name="qwen2.5-7b", before=base,
                                       after=base.model_copy(update={"prompt_median": 2000}),
                                       change_s=1500.0),
        misleading=True,
        notes="vLLM 0.10 exports old and new names; a second model's prompts grow at another "
              "time (a decoy outside the service)")
    add("queueing-ramp", "queueing", busy, busy.model_copy(update={"rate": 5.8}), ramp_s=240.0,
        notes="arrivals ramp up over 4 minutes")
    add("queueing-user-windows", "queueing", busy, busy.model_copy(update={"rate": 5.8}),
        user_windows=True, notes="the user names the windows (incident.yaml)")


def _kv_cache_pressure(add: Callable[..., None]) -> None:
    """kv_cache_pressure: the cache is the limit, preemptions rise."""
    kvb = Regime(rate=4.0, max_num_seqs=256, prompt_median=1500, output_median=400)
    add("kv-gpu-memory-lowered-args", "kv_cache_pressure", kvb,
        kvb.model_copy(update={"gpu_memory_utilization": 0.5}), restart=True,
        config_evidence="both",
        notes="--gpu-memory-utilization 0.9 -> 0.5 at a redeploy: the KV cache shrinks, "
              "requests are preempted; raising max_num_seqs would not help")
    add("kv-num-gpu-blocks-info-only", "kv_cache_pressure", kvb,
        kvb.model_copy(update={"gpu_memory_utilization": 0.52}), restart=True,
        config_evidence="info",
        notes="only vllm:cache_config_info shows the change (num_gpu_blocks falls)")
    add("kv-arrivals-with-high-batch-limit", "kv_cache_pressure",
        Regime(rate=1.5, max_num_seqs=512, prompt_median=2000, output_median=500,
               gpu_memory_utilization=0.7),
        Regime(rate=3.2, max_num_seqs=512, prompt_median=2000, output_median=500,
               gpu_memory_utilization=0.7), misleading=True, config_evidence="both",
        decoys=["arrival_rate_rise"],
        notes="arrivals doubled, but the batch limit is far away: the KV cache fills, "
              "preemptions rise; a naive reading says queueing")
    add("kv-old-names", "kv_cache_pressure", kvb,
        kvb.model_copy(update={"gpu_memory_utilization": 0.5}), restart=True, names="old",
        config_evidence="args", notes="V0 names (vllm:gpu_cache_usage_perc)")
    add("kv-gpu-util-rises", "kv_cache_pressure", kvb,
        kvb.model_copy(update={"gpu_memory_utilization": 0.5}), restart=True,
        gpu_util="up", misleading=True, config_evidence="none",
        notes="GPU utilization rises (a decoy suggesting compute saturation); no config file")
    add("kv-two-engines", "kv_cache_pressure", kvb.model_copy(update={"rate": 8.0}),
        kvb.model_copy(update={"rate": 8.0, "gpu_memory_utilization": 0.5}), restart=True,
        engines=2, notes="two engines, both short of KV cache")
    add("kv-tensor-parallel-halved", "kv_cache_pressure",
        kvb.model_copy(update={"tensor_parallel_size": 2, "gpu_memory_utilization": 0.6,
                               "rate": 5.0}),
        kvb.model_copy(update={"tensor_parallel_size": 1, "gpu_memory_utilization": 0.6,
                               "rate": 5.0}), restart=True, config_evidence="args",
        notes="--tensor-parallel-size 2 -> 1: half the GPUs, far less KV cache")
    add("kv-cache-dtype-fp8-dropped", "kv_cache_pressure",
        kvb.model_copy(update={"kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.55,
                               "rate": 2.5}),
        kvb.model_copy(update={"kv_cache_dtype": "auto", "gpu_memory_utilization": 0.55,
                               "rate": 2.5}), restart=True, config_evidence="info",
        notes="--kv-cache-dtype fp8 -> auto: twice the bytes per token")


def _prompt_length(add: Callable[..., None]) -> None:
    """prompt_length: longer prompts drive prefill and TTFT."""
    busy = Regime(rate=3.8, max_num_seqs=24)  # ~80% of what 24 slots serve
    rag = Regime(prompt_median=800, output_median=60)  # long-context traffic, short answers
    add("prompt-3x", "prompt_length", rag, rag.model_copy(update={"prompt_median": 2800}),
        notes="prompts 3.5x longer: prefill and TTFT rise, decode per token barely")
    add("prompt-old-names", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 3000}), names="old", notes="V0 names")
    add("prompt-second-model-decoy", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 2900}),
        second=ModelSpec(name="mistral-7b", before=busy,
                         after=busy.model_copy(update={"rate": 7.0}), change_s=1200.0),
        misleading=True, notes="another model on the same Prometheus queues at another time")
    add("prompt-gpu-util-up", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 2800}), gpu_util="up", misleading=True,
        notes="GPU utilization rises with the change (looks like compute saturation)")
    add("prompt-two-engines", "prompt_length", rag.model_copy(update={"rate": 6.0}),
        rag.model_copy(update={"rate": 6.0, "prompt_median": 2800}), engines=2,
        notes="two engines")
    add("prompt-unrelated-config-change", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 2900, "max_num_batched_tokens": 16384}),
        restart=True, config_evidence="both", misleading=True, decoys=["config_change"],
        notes="a redeploy raised --max-num-batched-tokens at the same time; the config diff "
              "is not the cause")
    add("prompt-moderate", "prompt_length", rag,
        rag.model_copy(update={"prompt_median": 1800}), names="both",
        notes="prompts ~2x longer")


def _output_length(add: Callable[..., None]) -> None:
    """output_length: longer generations drive e2e but not per-token latency."""
    base = Regime()
    kvb = Regime(rate=4.0, max_num_seqs=256, prompt_median=1500, output_median=400)
    add("output-3x", "output_length", base, base.model_copy(update={"output_median": 540}),
        notes="outputs 3x longer: decode time and e2e rise, inter-token latency barely")
    add("output-old-names", "output_length", base,
        base.model_copy(update={"output_median": 500}), names="old", notes="V0 names")
    add("output-gpu-util-down", "output_length", base,
        base.model_copy(update={"output_median": 520}), gpu_util="down", misleading=True,
        notes="GPU utilization falls (a decoy)")
    add("output-two-engines", "output_length", base.model_copy(update={"rate": 6.0}),
        base.model_copy(update={"rate": 6.0, "output_median": 520}), engines=2,
        notes="two engines")
    add("output-both-names", "output_length", base,
        base.model_copy(update={"output_median": 480}), names="both", notes="old and new names")
    add("output-unrelated-config-change", "output_length", base,
        base.model_copy(update={"output_median": 520, "gpu_memory_utilization": 0.92}),
        restart=True, config_evidence="args", misleading=True, decoys=["config_change"],
        notes="a redeploy raised --gpu-memory-utilization at the same time (more KV cache): "
              "not the cause")
    add("output-second-model", "output_length", base,
        base.model_copy(update={"output_median": 520}),
        second=ModelSpec(name="qwen2.5-7b", before=kvb,
                         after=kvb.model_copy(update={"gpu_memory_utilization": 0.5}),
                         change_s=1600.0, restart=True),
        notes="a second model runs short of KV cache at another time (a decoy)")


def _no_change(add: Callable[..., None]) -> None:
    """No change, and a change the four causes do not explain."""
    base = Regime()
    busy = Regime(rate=3.8, max_num_seqs=24)  # ~80% of what 24 slots serve
    add("no-change-gpu-util-jumps", "unknown", base, None, gpu_util="up", misleading=True,
        notes="latency is steady; GPU utilization jumps (a decoy)")
    add("no-change-steady", "unknown", base, None, notes="nothing changes")
    add("no-change-old-names", "unknown", busy.model_copy(update={"rate": 3.0}), None,
        names="old", notes="steady, V0 names")
    add("no-change-restart", "unknown", base, base.model_copy(), restart=True,
        config_evidence="both", latency_steady=True,
        notes="a restart with the same config: counters reset, latency unchanged")
    add("no-change-config-change", "unknown", base,
        base.model_copy(update={"max_num_seqs": 128}), restart=True, config_evidence="both",
        latency_steady=True, misleading=True, decoys=["config_change"],
        notes="--max-num-seqs 64 -> 128 at a redeploy; latency unchanged")
    add("decode-slower-per-token", "unknown", base, base.model_copy(update={"slowdown": 1.8}),
        gpu_util="flat", notes="every decode iteration is 1.8x slower (throttled clocks or a "
                               "noisy neighbour) with the same load: none of the four causes")


def plan_latency_suite(seed: int = 11) -> list[LatencyCaseSpec]:
    """The shipped recipes: each cause and "no change", with name, label, config and decoy
    variants. Change times are drawn from the seed."""
    plan = _Plan(seed)
    _queueing(plan.add)
    _kv_cache_pressure(plan.add)
    _prompt_length(plan.add)
    _output_length(plan.add)
    _no_change(plan.add)
    return plan.specs


def latency_spec(case_id: str, seed: int = 11) -> LatencyCaseSpec:
    """One shipped recipe by its id (or a unique part of it)."""
    found = [s for s in plan_latency_suite(seed) if case_id in s.case_id]
    if len(found) != 1:
        raise KeyError(f"{case_id!r} names {len(found)} latency cases")
    return found[0]
