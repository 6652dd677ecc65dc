"""The shapes issue 24 asked of the independent generator: each family named by the issue's
class (c1-c11) and what it is, with its number of variants. Kind prefixes as in the suite:
f failure, s slowdown, l latency.

The forms were learned from real output, not from the main generator: NCCL's RAS client text
(NVIDIA/nccl src/ras/client_support.cc; NVIDIA/nccl#1911, #1730), `dcgmi diag` tables
(NVIDIA/DCGM#253, NVIDIA/go-dcgm#52), UnexpectedAdmissionError / nvml GPU is lost
(kubernetes/kubernetes#97131, NVIDIA/k8s-device-plugin#231), allocatable below capacity
(NVIDIA/k8s-device-plugin#58, #75), runc's init OOM (aws/amazon-ecs-agent#3021,
opencontainers/runc#2812), kubelet eviction messages (kubernetes/kubernetes#63415, #112927),
OpenPAI's exit diagnostics (microsoft/pai#5464), TensorFlow's CUDA event errors
(tensorflow/tensorflow#8483, tensorflow/models#4227, nagadit/DeepFaceLab_Linux#89), c10's CUDA
error in the NCCL watchdog (pytorch/pytorch#126544, vllm-project/vllm#2682), DataLoader bus
error / killed (pytorch/pytorch#5040, open-mmlab/mmsegmentation#1356), Ray's memory monitor
(ray-project/ray#30312, #29800), SGLang scheduler lines and retractions (sgl-project/sglang
#1270, #3909, #4184, #14972) and bench_serving blocks (#8285, #2097), key_averages tables
(pytorch/pytorch#45209, #60783), rsyslog's `#033` escapes (SiaFoundation/hostd#282,
pop-os/system-updater#15), terminal-wrapped pastes and /dev/shm NCCL errors
(../shared/realworld-corpus pytorch/vlmr1_257..., nccl/nccltests166...)."""

from __future__ import annotations

import random
from collections.abc import Callable

from . import (
    gpu_userspace,
    host_memory,
    k8s_cases,
    k8s_memory,
    long_logs,
    partial,
    peers,
    profiler_table,
    progress,
    sglang,
    transformed,
)
from .case import Case

Maker = Callable[[random.Random, str, int], Case]

SHAPES: tuple[tuple[str, str, Maker, int], ...] = (
    ("f", "c1-long_job_log", long_logs.long_job_log, 3),
    ("f", "c2-tf_cuda_ecc", gpu_userspace.tf_cuda_ecc, 2),
    ("f", "c2-dcgmi_fail", gpu_userspace.dcgmi_fail, 2),
    ("f", "c2-k8s_node_not_ready", k8s_cases.node_not_ready, 1),
    ("f", "c2-k8s_pods_oomkilled", k8s_cases.pods_oomkilled, 2),
    ("f", "c2-platform_exit", k8s_memory.platform_exit, 2),
    ("f", "c2-ras_mismatch_hang", peers.ras_mismatch_hang, 1),
    ("f", "c2-ras_dead_node", peers.ras_dead_node, 1),
    ("f", "c2-pyspy_hang", progress.pyspy_hang, 2),
    ("s", "c2-profiler_tables", profiler_table.profiler_tables, 2),
    ("f", "c3-killed_minus9", host_memory.killed_minus9, 2),
    ("f", "c3-dataloader_killed", host_memory.dataloader_killed, 1),
    ("f", "c3-ray_memory_monitor", host_memory.ray_memory_monitor, 1),
    ("f", "c4-shm_exhausted", host_memory.shm_exhausted, 2),
    ("f", "c5-c10_cuda_watchdog", gpu_userspace.c10_cuda_watchdog, 2),
    ("f", "c5-gpu_lost_smi", gpu_userspace.gpu_lost_smi, 3),
    ("f", "c5-connection_refused", peers.connection_refused, 2),
    ("f", "c5-frames_only_watchdog", partial.frames_only_watchdog, 1),
    ("f", "c6-one_rank_alone", partial.one_rank_alone, 2),
    ("f", "c7-host_named_files", partial.host_named_files, 1),
    ("f", "c7-nccl_prefix_network", partial.nccl_prefix_network, 2),
    ("s", "c8-megatron_slowdown", progress.megatron_slowdown, 2),
    ("s", "c8-per_rank_straggler", progress.per_rank_straggler, 1),
    ("f", "c8-progress_stops", progress.progress_stops, 2),
    ("l", "c9-sglang_log", sglang.sglang_log, 3),
    ("l", "c9-bench_serving", sglang.bench_serving, 2),
    ("f", "c10-gpu_lost_admission", k8s_cases.gpu_lost_admission, 2),
    ("f", "c10-allocatable_below_capacity", k8s_cases.allocatable_below_capacity, 1),
    ("f", "c10-runc_init_oom", k8s_memory.runc_init_oom, 2),
    ("f", "c11-eviction_block", k8s_memory.eviction_block, 2),
    ("f", "c11-hard_wrapped", transformed.hard_wrapped, 2),
    ("f", "c11-syslog_coloured", transformed.syslog_coloured, 1),
)
