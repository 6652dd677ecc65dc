"""What decides one slowdown case: the job's shape, the planted cause, the trace layout."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from goodput_agent.evals.kineto.spec import Style

CATEGORIES = ("input_stall", "host_overhead", "straggler", "communication", "gpu_throttling")


BASE = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)


NEW_REASONS = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"


OLD_REASONS = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"


HOST_STYLES = {"gpu-node": "gpu-node-{:02d}", "nid": "nid{:05d}", "dgx": "dgx-h100-{:03d}",
               "a100": "a100-{:02d}"}


BUS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")


TINY = ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, "
        "float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<"
        "char*, 2> >(int, at::native::AUnaryFunctor<float, float, float, at::native::"
        "binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2>)")


Layout = Literal["tensorboard", "tensorboard_flat", "nodes_rank", "nodes_handler", "rank_only"]


Metrics = Literal["none", "om", "prom_json"]


class CaseSpec(BaseModel):
    """Everything that decides one case; the incident run carries the planted cause, the
    baseline run (when there is one) the same job healthy."""

    case_id: str
    category: str
    seed: int = 7
    variant: str = "plain"
    ranks: int = 8
    per_node: int = 4
    gpus_per_node: int | None = None  # physical GPUs per node (default: per_node)
    steps: int = 6
    layers: int = 3
    kernel_scale: float = 1.0
    culprit: int | None = None  # the slow / throttled / CPU-bound rank
    culprit_node: int | None = None  # the node whose ranks stall on input
    slow_factor: float = 1.0  # the culprit's compute kernels this much slower
    slow_ops: list[str] = Field(default_factory=list)  # only these CPU ops' kernels (default all)
    dataloader_ms: float = 0.3  # input wait per step (all ranks, or culprit_node's)
    stall_every: int = 1  # the wait hits every n-th step (prefetching covers the others)
    h2d_pageable: bool = False
    launch_gap_us: float = 8.0  # host time between launches (all ranks, or the culprit's)
    unfused_optimizer: bool = False
    item_sync_ms: float = 0.0  # a .item() in the forward pass, then this much host work
    transfer_factor: float = 1.0
    one_bucket: bool = False  # the whole gradient in one bucket, after the backward pass
    nccl_kernel: str | None = None  # the incident's all-reduce kernel name, when it changed
    baseline: bool = True
    baseline_elsewhere: bool = False  # the baseline ran on other nodes
    host_style: str = "gpu-node"
    first_node: int = 1
    layout: Layout = "tensorboard"
    style: Style = "2.4"
    metrics: Metrics | None = None  # default: "om" for gpu_throttling, else "none"
    reason_metric: str = NEW_REASONS
    throttle_bits: int = 0x48  # HwSlowdown | HwThermalSlowdown
    decoys: list[str] = Field(default_factory=list)  # idle_gpus, swpowercap
    plain_json: bool = False  # rank_only layout: .json instead of .json.gz
    notes: str = ""

    @property
    def metrics_format(self) -> Metrics:
        return self.metrics or ("om" if self.category == "gpu_throttling" else "none")

    @property
    def slow_rank(self) -> int | None:
        return self.culprit if self.category in ("straggler", "gpu_throttling") or \
            (self.category == "host_overhead" and self.culprit is not None) else None


def host(spec: CaseSpec, node: int, elsewhere: bool = False) -> str:
    return HOST_STYLES[spec.host_style].format(spec.first_node + node + (40 if elsewhere else 0))


def node_of(spec: CaseSpec, rank: int) -> int:
    return rank // spec.per_node
