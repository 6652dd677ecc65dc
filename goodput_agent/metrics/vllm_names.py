"""vLLM's metric and engine-argument names across versions, resolved to one logical vocabulary.

Names checked against vLLM's own code (vllm/engine/metrics.py for the V0 engine,
vllm/v1/metrics/loggers.py for V1) and docs/design/metrics.md:
- `vllm:gpu_cache_usage_perc` was renamed `vllm:kv_cache_usage_perc` (deprecated in 0.9);
- `vllm:time_per_output_token_seconds` (an inter-token histogram) was renamed
  `vllm:inter_token_latency_seconds` in 0.11, and `vllm:request_time_per_output_token_seconds`
  (one observation per request: its mean time per output token) was added;
- counters are exposed with `_total` (`vllm:num_preemptions_total`, `vllm:request_success_total`
  with a `finished_reason` label); V1 labels every series with `model_name` and `engine`,
  V0 with `model_name` only;
- `vllm:cache_config_info` is a gauge fixed at 1 whose labels are the CacheConfig fields
  (`gpu_memory_utilization`, `num_gpu_blocks`, `block_size`, `cache_dtype`, ...).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel


class Kind(StrEnum):
    histogram = "histogram"
    counter = "counter"
    gauge = "gauge"


@dataclass(frozen=True)
class Logical:
    key: str
    kind: Kind
    names: tuple[str, ...]  # preferred (newest) first
    what: str


_LOGICAL = (
    Logical("e2e", Kind.histogram, ("vllm:e2e_request_latency_seconds",),
            "end-to-end request latency"),
    Logical("queue", Kind.histogram, ("vllm:request_queue_time_seconds",),
            "time waiting in the queue"),
    Logical("prefill", Kind.histogram, ("vllm:request_prefill_time_seconds",), "prefill time"),
    Logical("decode", Kind.histogram, ("vllm:request_decode_time_seconds",), "decode time"),
    Logical("ttft", Kind.histogram, ("vllm:time_to_first_token_seconds",),
            "time to first token"),
    Logical("itl", Kind.histogram,
            ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
            "inter-token latency"),
    Logical("tpot", Kind.histogram, ("vllm:request_time_per_output_token_seconds",),
            "time per output token (per request)"),
    Logical("prompt_tokens", Kind.histogram, ("vllm:request_prompt_tokens",),
            "prompt length (tokens)"),
    Logical("output_tokens", Kind.histogram, ("vllm:request_generation_tokens",),
            "output length (tokens)"),
    Logical("running", Kind.gauge, ("vllm:num_requests_running",), "requests running"),
    Logical("waiting", Kind.gauge, ("vllm:num_requests_waiting",), "requests waiting"),
    Logical("kv_usage", Kind.gauge, ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
            "KV-cache usage (1 = full)"),
    Logical("preemptions", Kind.counter,
            ("vllm:num_preemptions_total", "vllm:num_preemptions"), "preemptions"),
    Logical("success", Kind.counter, ("vllm:request_success_total", "vllm:request_success"),
            "finished requests by finished_reason"),
    Logical("cache_config", Kind.gauge, ("vllm:cache_config_info",),
            "CacheConfig as labels"),
    # context only: GPU utilization is never the success metric of a service
    Logical("gpu_util", Kind.gauge, ("DCGM_FI_DEV_GPU_UTIL",), "GPU utilization (%)"),
)
METRICS: dict[str, Logical] = {m.key: m for m in _LOGICAL}
HISTOGRAMS = tuple(m.key for m in _LOGICAL if m.kind is Kind.histogram)

MODEL_LABEL = "model_name"
ENGINE_LABEL = "engine"
REASON_LABEL = "finished_reason"


def sample_name(name: str, kind: Kind) -> str:
    """The series name that proves a metric is there (a histogram's `_bucket` series)."""
    return f"{name}_bucket" if kind is Kind.histogram else name


def resolve(available: set[str], key: str) -> str | None:
    """The first of a logical metric's names (newest first) that the source has."""
    m = METRICS[key]
    return next((n for n in m.names if sample_name(n, m.kind) in available), None)


def resolve_all(available: set[str]) -> dict[str, str | None]:
    return {key: resolve(available, key) for key in METRICS}


# --------------------------------------------------------------------------- engine arguments

# the arguments that decide capacity, with the aliases vLLM's CLI accepts
ENGINE_ARGS = ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization",
               "tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
               "kv_cache_dtype", "block_size", "num_gpu_blocks", "enable_chunked_prefill",
               "enable_prefix_caching")
_ALIASES = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size",
            "cache_dtype": "kv_cache_dtype", "num_gpu_blocks_override": "num_gpu_blocks"}
_LAUNCHERS = {"vllm", "serve", "python", "python3", "-m"}
_INFO_SKIP = {"__name__", MODEL_LABEL, ENGINE_LABEL, "instance", "job"}


class ConfigRevision(BaseModel):
    """Engine arguments in effect from `since` (None: for the whole bundle)."""

    since: datetime | None
    args: dict[str, str]
    source: str  # the file, or "vllm:cache_config_info"


def arg_key(flag: str) -> str:
    key = flag.lstrip("-").replace("-", "_")
    return _ALIASES.get(key, key)


def parse_engine_args(argv: list[str] | str) -> dict[str, str]:
    """`vllm serve MODEL --max-num-seqs 256 -tp=2 --enable-chunked-prefill` -> {"model": MODEL,
    "max_num_seqs": "256", "tensor_parallel_size": "2", "enable_chunked_prefill": "true"}.
    A `--no-x` flag sets x to "false"."""
    words = shlex.split(argv) if isinstance(argv, str) else list(argv)
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        w = words[i]
        if w in _LAUNCHERS:
            i += 2 if w == "-m" else 1
            continue
        if w.startswith("-") and len(w) > 1:
            flag, eq, value = w.partition("=")
            key = arg_key(flag)
            if eq:
                out[key] = value
            elif i + 1 < len(words) and not words[i + 1].startswith("-"):
                out[key] = words[i + 1]
                i += 1
            elif key.startswith("no_"):
                out[key[3:]] = "false"
            else:
                out[key] = "true"
        elif "model" not in out:
            out["model"] = w
        i += 1
    return out


def config_from_info(labels: dict[str, str]) -> dict[str, str]:
    """The CacheConfig fields carried as labels of `vllm:cache_config_info`."""
    return {arg_key(k): v for k, v in labels.items() if k not in _INFO_SKIP and v != ""}
