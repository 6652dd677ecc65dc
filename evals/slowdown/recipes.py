"""Seven recipes per cause: what each case plants and how it may mislead."""

from __future__ import annotations

from typing import Any

from goodput_agent.evals.slowdown.spec import OLD_REASONS

Recipe = dict[str, Any]


# per category, the variants in order; each is CaseSpec fields (ranks etc. chosen per case)
RECIPES: dict[str, list[Recipe]] = {
    "input_stall": [
        dict(variant="all_ranks", dataloader_ms=(4.0, 8.0),
             notes="too few DataLoader workers: every rank waits in __next__, kernels unchanged"),
        dict(variant="bursty", dataloader_ms=(9.0, 14.0), stall_every=2, layout="nodes_rank",
             notes="prefetch runs dry every other step; the mean hides in the median"),
        dict(variant="one_node", dataloader_ms=(5.0, 9.0), culprit_node=True,
             layout="nodes_handler", notes="one node reads its shards from a slow mount: its "
             "ranks stall, everyone else waits in the first all-reduce (long NCCL kernels)"),
        dict(variant="pageable_h2d", dataloader_ms=(2.0, 3.0), h2d_pageable=True,
             notes="pin_memory=False: blocking pageable copies plus slower batches"),
        dict(variant="no_baseline", dataloader_ms=(6.0, 9.0), baseline=False,
             layout="tensorboard_flat", notes="no baseline run: the share of the step decides"),
        dict(variant="one_node_16", dataloader_ms=(6.0, 9.0), culprit_node=True, ranks=16,
             per_node=8, layout="nodes_rank", metrics="om",
             notes="16 ranks, one node's input is slow; healthy DCGM series beside it"),
        dict(variant="all_ranks_old_kineto", dataloader_ms=(4.0, 7.0), style="2.1",
             layout="rank_only", notes="PyTorch 2.1-era trace: absolute integer timestamps, "
             "old NCCL kernel names, rank-numbered files in before/ and after/"),
    ],
    "host_overhead": [
        dict(variant="launch_gaps", launch_gap_us=(60.0, 110.0), kernel_scale=(0.12, 0.2),
             notes="a small model, CPU-bound: tiny kernels with launch gaps longer than the "
             "kernels on every rank"),
        dict(variant="unfused_optimizer", unfused_optimizer=True, launch_gap_us=(180.0, 240.0),
             layout="nodes_rank", notes="optimizer switched to a per-parameter loop: hundreds "
             "of 3 us kernels launched one by one"),
        dict(variant="item_sync", item_sync_ms=(4.0, 7.0),
             notes="a .item() in the forward pass drains the queue, then Python works on it"),
        dict(variant="one_rank_cpu", culprit=True, launch_gap_us=(180.0, 260.0),
             layout="nodes_handler", notes="one rank's host is CPU-bound (a stray process on "
             "its cores): it is the straggler, the cause is its host; others wait in NCCL"),
        dict(variant="no_baseline", item_sync_ms=(5.0, 8.0), baseline=False,
             layout="tensorboard_flat", notes="no baseline: a sync plus host work every step"),
        dict(variant="launch_gaps_old_kineto", launch_gap_us=(50.0, 90.0),
             kernel_scale=(0.12, 0.2), style="2.1",
             layout="rank_only", notes="PyTorch 2.1-era trace format"),
        dict(variant="item_sync_16", item_sync_ms=(3.0, 5.0), ranks=16, per_node=8,
             style="2.6", notes="16 ranks, newest Kineto layout (base time before the events)"),
    ],
    "straggler": [
        dict(variant="bad_gpu", slow_factor=(1.3, 1.7), layout="nodes_rank",
             notes="one GPU computes slower with no clock metrics to explain it; the DDP "
             "barrier evens out step totals, the others' NCCL kernels are the long ones"),
        dict(variant="bad_gpu_metrics_healthy", slow_factor=(1.3, 1.6), metrics="om",
             reason_metric=OLD_REASONS, gpus_per_node=8, per_node=4, decoys=["idle_gpus"],
             notes="a slow GPU whose DCGM clocks look fine (not throttling); the idle GPUs of "
             "the nodes report GpuIdle and low clocks"),
        dict(variant="gemm_only", slow_factor=(1.5, 1.9), slow_ops=["aten::mm", "aten::addmm"],
             notes="only the straggler's GEMMs are slower (tensor cores degraded)"),
        dict(variant="no_baseline", slow_factor=(1.4, 1.7), baseline=False,
             layout="nodes_handler", notes="no baseline run: the waits alone name the rank"),
        dict(variant="sixteen_ranks", slow_factor=(1.3, 1.6), ranks=16, per_node=8,
             layout="nodes_rank", notes="16 ranks on 2 nodes"),
        dict(variant="baseline_elsewhere", slow_factor=(1.3, 1.6), baseline_elsewhere=True,
             notes="the baseline ran on other nodes: host names do not match across runs"),
        dict(variant="old_kineto", slow_factor=(1.4, 1.7), style="2.1",
             notes="PyTorch 2.1-era traces with tensorboard_trace_handler names"),
    ],
    "communication": [
        dict(variant="degraded_fabric", transfer_factor=(2.5, 4.0),
             notes="every all-reduce slower on every rank; no rank stands out"),
        dict(variant="socket_fallback", transfer_factor=(4.0, 6.0), layout="nodes_rank",
             notes="NCCL fell back to sockets (IB disabled): same kernels, much longer"),
        dict(variant="protocol_change", transfer_factor=(2.0, 3.0), nccl_kernel=(
            "ncclDevKernel_AllReduce_Sum_f32_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)"),
            notes="NCCL_PROTO=Simple forced: a new kernel family, slower for these sizes"),
        dict(variant="one_bucket", one_bucket=True, layout="nodes_handler",
             notes="bucket_cap_mb raised so the whole gradient is one bucket: the all-reduce "
             "starts after the backward pass and overlaps nothing"),
        dict(variant="swpowercap_decoy", transfer_factor=(2.5, 3.5), metrics="om",
             decoys=["swpowercap"], notes="slower fabric; every busy GPU touches SW power cap "
             "now and then (benign, on all GPUs alike)"),
        dict(variant="no_baseline", transfer_factor=(4.0, 6.0), baseline=False,
             layout="rank_only", plain_json=True, ranks=4, per_node=4,
             notes="no baseline: the exposed transfer share decides"),
        dict(variant="sixteen_ranks", transfer_factor=(2.5, 4.0), ranks=16, per_node=4,
             style="2.6", notes="16 ranks on 4 nodes, newest Kineto layout"),
    ],
    "gpu_throttling": [
        dict(variant="hw_thermal", slow_factor=(1.3, 1.6), metrics="om", throttle_bits=0x48,
             notes="HW slowdown + HW thermal on one GPU, SM clock down; its rank is the "
             "straggler, the longest NCCL kernels are on the other ranks"),
        dict(variant="old_reason_name", slow_factor=(1.3, 1.6), metrics="om",
             reason_metric=OLD_REASONS, throttle_bits=0x28, layout="nodes_rank",
             notes="the old DCGM_FI_DEV_CLOCK_THROTTLE_REASONS name; SW thermal + HW slowdown"),
        dict(variant="power_brake", slow_factor=(1.4, 1.8), metrics="om", throttle_bits=0x88,
             notes="HW power brake (PSU / BMC): low power and clock, normal temperature"),
        dict(variant="prometheus_json", slow_factor=(1.3, 1.6), metrics="prom_json",
             throttle_bits=0x48, layout="nodes_handler",
             notes="the series as a Prometheus query_range answer"),
        dict(variant="no_baseline", slow_factor=(1.4, 1.7), metrics="om", baseline=False,
             reason_metric=OLD_REASONS, notes="no baseline run"),
        dict(variant="idle_gpu_decoy", slow_factor=(1.3, 1.6), metrics="om", gpus_per_node=8,
             per_node=4, decoys=["idle_gpus"], notes="half of each node's GPUs are unused "
             "(GpuIdle, low clocks): only the busy one with HW slowdown is throttled"),
        dict(variant="sixteen_ranks", slow_factor=(1.3, 1.5), metrics="om", ranks=16,
             per_node=8, style="2.6", notes="16 ranks, newest Kineto layout"),
    ],
}
