"""What decides one latency case: the regimes before and after the change, the model served,
vLLM's metric buckets."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

LATENCY_CATEGORIES = ("queueing", "kv_cache_pressure", "prompt_length", "output_length")


EXPECTED_FILE = "expected.json"


SCRAPE_S = 15


TICK_S = 1.0


BLOCK_TOKENS = 16


MAX_MODEL_LEN = 8192


BASE_TIME = datetime(2025, 6, 3, 8, 0, tzinfo=UTC)


# vLLM's bucket boundaries (vllm/v1/metrics/loggers.py)
REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
                           40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)


TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)


TOKEN_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
                         2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)


def build_1_2_5_buckets(max_value: int) -> tuple[float, ...]:
    out, exponent = [], 0
    while True:
        for m in (1, 2, 5):
            v = m * 10 ** exponent
            if v > max_value:
                return tuple(float(b) for b in out)
            out.append(v)
        exponent += 1


TOKEN_BUCKETS = build_1_2_5_buckets(MAX_MODEL_LEN)


Names = Literal["new", "old", "both"]  # vLLM >= 0.11 | V0 engine | 0.9-0.10 (old and new)


class Regime(BaseModel):
    """The service and its load from some time on."""

    rate: float = 3.0  # arrivals per second (all engines together)
    prompt_median: float = 600.0
    prompt_sigma: float = 0.6
    output_median: float = 180.0
    output_sigma: float = 0.5
    max_tokens: int = 1024
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 8192
    gpu_memory_utilization: float = 0.9
    tensor_parallel_size: int = 1
    kv_cache_dtype: str = "auto"
    prefill_tps: float = 20000.0  # prompt tokens per second of GPU time
    itl_base_s: float = 0.020
    itl_per_seq_s: float = 0.00005
    itl_per_kv_token_s: float = 2e-8
    slowdown: float = 1.0  # multiplies decode iteration time (e.g. throttled clocks)

    def kv_blocks(self) -> int:
        """KV-cache blocks of one engine: an 8B model (16 GB of fp16 weights) on 48 GB GPUs."""
        gpu_gb, weights_gb, activations_gb = 48.0, 16.0, 2.0
        per_gpu = gpu_gb * self.gpu_memory_utilization - weights_gb / self.tensor_parallel_size \
            - activations_gb
        bytes_per_token = 131072 / (2 if self.kv_cache_dtype.startswith("fp8") else 1)
        tokens = max(per_gpu, 0.5) * 1e9 * self.tensor_parallel_size / bytes_per_token
        return int(tokens // BLOCK_TOKENS)

    def engine_args(self, model: str) -> list[str]:
        return ["vllm", "serve", model, "--max-num-seqs", str(self.max_num_seqs),
                "--max-num-batched-tokens", str(self.max_num_batched_tokens),
                "--gpu-memory-utilization", str(self.gpu_memory_utilization),
                "--tensor-parallel-size", str(self.tensor_parallel_size),
                "--max-model-len", str(MAX_MODEL_LEN), "--kv-cache-dtype", self.kv_cache_dtype,
                "--enable-chunked-prefill"]

    def cache_config(self) -> dict[str, str]:
        """`vllm:cache_config_info` labels (CacheConfig fields as strings)."""
        return {"block_size": str(BLOCK_TOKENS), "cache_dtype": self.kv_cache_dtype,
                "enable_prefix_caching": "False",
                "gpu_memory_utilization": str(self.gpu_memory_utilization),
                "num_gpu_blocks": str(self.kv_blocks()), "swap_space": "4"}


class ModelSpec(BaseModel):
    name: str
    before: Regime
    after: Regime | None = None  # None: no change
    change_s: float | None = None  # seconds from the start
    ramp_s: float = 0.0  # arrival rate moves linearly over this long
    restart: bool = False  # the engines restart at the change (counters reset)


class LatencyCaseSpec(BaseModel):
    case_id: str
    category: str  # a latency category, or "unknown" (no change / nothing in the taxonomy)
    variant: str
    seed: int = 11
    start: datetime
    duration_s: int = 3600
    names: Names = "new"
    engines: int = 1
    models: list[ModelSpec]  # the first is the service the question is about
    config_evidence: Literal["none", "args", "info", "both"] = "info"
    gpu_util: Literal["none", "flat", "up", "down"] = "none"  # DCGM decoy
    gpu_util_shift_s: float | None = None  # when the GPU utilization decoy moves
    user_windows: bool = False  # incident.yaml names the windows
    latency_steady: bool = False  # something changes, but not the service's latency
    decoys: list[str] = Field(default_factory=list)  # what a one-signal reading would follow
    misleading: bool = False
    notes: str = ""


class LatencyExpected(BaseModel):
    case_id: str
    kind: Literal["latency"] = "latency"
    category: str
    service: str
    change_at: str | None  # ISO 8601 UTC; None when latency did not change
    misleading: bool
    notes: str
    variant: str = ""
    names: str = "new"
    decoys: list[str] = Field(default_factory=list)


class LatencyCase(BaseModel):
    case_id: str
    path: Path
    expected: LatencyExpected
    files: list[str]
