"""vLLM's old and new metric names resolve to one vocabulary; engine arguments normalise."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.metrics.file_series import load_series
from goodput_agent.metrics.vllm_names import (
    METRICS,
    config_from_info,
    parse_engine_args,
    resolve,
    resolve_all,
)


def test_new_name_wins_when_both_are_exported() -> None:
    both = {"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc",
            "vllm:time_per_output_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket"}
    assert resolve(both, "kv_usage") == "vllm:kv_cache_usage_perc"
    assert resolve(both, "itl") == "vllm:inter_token_latency_seconds"


def test_old_names_are_accepted() -> None:
    v0 = {"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds_bucket",
          "vllm:num_preemptions"}
    assert resolve(v0, "kv_usage") == "vllm:gpu_cache_usage_perc"
    assert resolve(v0, "itl") == "vllm:time_per_output_token_seconds"
    assert resolve(v0, "preemptions") == "vllm:num_preemptions"


def test_a_histogram_is_found_by_its_bucket_series_only() -> None:
    assert resolve({"vllm:e2e_request_latency_seconds_count"}, "e2e") is None
    assert resolve({"vllm:e2e_request_latency_seconds_bucket"}, "e2e") == \
        "vllm:e2e_request_latency_seconds"
    names = resolve_all(set())
    assert set(names) == set(METRICS) and not any(names.values())


def test_engine_args_in_their_spellings() -> None:
    args = parse_engine_args("vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 256 "
                             "--gpu-memory-utilization=0.85 -tp 2 --enable-chunked-prefill "
                             "--no-enable-prefix-caching --kv-cache-dtype fp8")
    assert args == {"model": "meta-llama/Llama-3.1-8B", "max_num_seqs": "256",
                    "gpu_memory_utilization": "0.85", "tensor_parallel_size": "2",
                    "enable_chunked_prefill": "true", "enable_prefix_caching": "false",
                    "kv_cache_dtype": "fp8"}


def test_engine_args_through_the_api_server_module() -> None:
    args = parse_engine_args(["python3", "-m", "vllm.entrypoints.openai.api_server",
                              "--model", "llama", "--max-num-batched-tokens", "8192"])
    assert args == {"model": "llama", "max_num_batched_tokens": "8192"}


def test_cache_config_info_labels_become_config() -> None:
    cfg = config_from_info({"__name__": "vllm:cache_config_info", "engine": "0",
                            "model_name": "m", "cache_dtype": "fp8", "num_gpu_blocks": "4005",
                            "gpu_memory_utilization": "0.9", "num_cpu_blocks": ""})
    assert cfg == {"kv_cache_dtype": "fp8", "num_gpu_blocks": "4005",
                   "gpu_memory_utilization": "0.9"}


def test_the_real_vllm_scrape_resolves(shared_dir: Path) -> None:
    """A real vLLM 0.10 /metrics excerpt (production-stack issue 617): the renamed KV-cache
    gauge is the one found."""
    prom = shared_dir / "realworld" / "F_vllm" / "prodstack617_vllm010_metrics_glm45.prom"
    series = load_series([prom], untimed_at=1.75e9)
    names = {s.name for s in series}
    assert resolve(names, "kv_usage") == "vllm:kv_cache_usage_perc"
    kv = next(s for s in series if s.name == "vllm:kv_cache_usage_perc")
    assert kv.labels == {"engine": "0", "model_name": "zai-org/GLM-4.5"}
    assert 0 < kv.points[0][1] < 1e-4
