"""The DDP job simulated step by step on every rank, with the planted cause when it is the
incident run."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from pydantic import BaseModel

from goodput_agent.evals.kineto.large import model_step
from goodput_agent.evals.kineto.layout import synchronize
from goodput_agent.evals.kineto.spec import (
    A100,
    H100,
    NCCL_NEW,
    NCCL_OLD,
    Bucket,
    HostSync,
    Kernel,
    RankTrace,
    StepPlan,
)
from goodput_agent.evals.slowdown.spec import BASE, TINY, CaseSpec, node_of


class _Run(BaseModel):
    label: str  # incident | baseline
    epoch: datetime  # when its first profiled step began
    first_step: int
    traces: list[RankTrace]


def _slow(spec: CaseSpec, incident: bool, rank: int, k: Kernel) -> float:
    if not incident or rank != spec.culprit or spec.category not in ("straggler",
                                                                     "gpu_throttling"):
        return 1.0
    return spec.slow_factor if not spec.slow_ops or k.op in spec.slow_ops else 1.0


def _dataloader_us(spec: CaseSpec, incident: bool, rank: int, n: int,
                   rng: random.Random) -> float:
    stalls = incident and spec.category == "input_stall" and (
        spec.culprit_node is None or node_of(spec, rank) == spec.culprit_node)
    if stalls and n % spec.stall_every == 0:
        return spec.dataloader_ms * 1000 * rng.uniform(0.85, 1.15)
    return 300.0 * rng.uniform(0.9, 1.1)


def _optimizer(spec: CaseSpec, incident: bool, template: list[Kernel]) -> list[Kernel]:
    if incident and spec.unfused_optimizer:
        # foreach=False, fused=False: a handful of tiny kernels per parameter, one at a time
        return [Kernel(name=TINY, op="aten::mul_", dur_us=3.1 + (i % 4) * 0.7, grid=(8, 1, 1),
                       block=(128, 1, 1)) for i in range(8 * spec.layers)]
    return template


def _step(spec: CaseSpec, incident: bool, rank: int, n: int, number: int, tmpl: StepPlan,
          transfers: list[float], rng: random.Random) -> StepPlan:
    jitter = rng.uniform(0.99, 1.01)

    def ks(kernels: list[Kernel]) -> list[Kernel]:
        return [k.model_copy(update={"dur_us": round(k.dur_us * jitter * _slow(
            spec, incident, rank, k) * rng.uniform(0.98, 1.02), 3)}) for k in kernels]

    gap, opt_gap = 8.0, None
    planted_host = incident and spec.category == "host_overhead"
    if planted_host and spec.unfused_optimizer:
        opt_gap = spec.launch_gap_us  # the per-parameter Python loop
    elif planted_host and (spec.culprit is None or spec.culprit == rank):
        gap = spec.launch_gap_us
    pageable = incident and spec.h2d_pageable
    fwd = ks(tmpl.forward)
    syncs = ([HostSync(after=len(fwd) // 2, host_us=spec.item_sync_ms * 1000 *
                       rng.uniform(0.9, 1.1))] if planted_host and spec.item_sync_ms else [])
    one = incident and spec.one_bucket
    buckets = ([Bucket(after=len(tmpl.backward) - 1, transfer_us=sum(transfers) * 0.92,
                       nelems=sum(b.nelems for b in tmpl.buckets))] if one else
               [b.model_copy(update={"transfer_us": t}) for b, t in zip(tmpl.buckets, transfers,
                                                                        strict=True)])
    return StepPlan(number=number, dataloader_us=round(_dataloader_us(spec, incident, rank, n,
                                                                       rng), 3),
                    h2d_us=round((1900.0 if pageable else 180.0) * rng.uniform(0.95, 1.05), 3),
                    h2d_pinned=not pageable, forward=fwd, backward=ks(tmpl.backward),
                    optimizer=ks(_optimizer(spec, incident, tmpl.optimizer)), buckets=buckets,
                    launch_gap_us=gap, optimizer_gap_us=opt_gap, syncs=syncs, overlap=not one)


def simulate(spec: CaseSpec, incident: bool, rng: random.Random) -> _Run:
    label = "incident" if incident else "baseline"
    epoch = BASE + timedelta(days=spec.seed % 40, hours=spec.seed % 7)
    if not incident:  # the good run: a few hours or a day before
        epoch -= timedelta(hours=rng.choice((3, 20, 26)))
    tmpl = model_step(layers=spec.layers, scale=spec.kernel_scale)
    first = rng.choice((2, 12, 102, 1002))
    comm = incident and spec.category == "communication"
    traces = []
    skews = []
    node_offset = [rng.uniform(-4_000, 4_000) for _ in range(spec.ranks // spec.per_node + 1)]
    node_pid = [rng.randrange(2_000, 3_900_000) for _ in range(spec.ranks // spec.per_node + 1)]
    run_transfers = [[b.transfer_us * spec.kernel_scale * rng.uniform(0.98, 1.02) *
                      (spec.transfer_factor if comm else 1.0)
                      for b in tmpl.buckets] for _ in range(spec.steps)]
    gpu = A100 if spec.host_style == "a100" else H100
    for r in range(spec.ranks):
        node, local = node_of(spec, r), r % spec.per_node
        steps = [_step(spec, incident, r, n, first + n, tmpl, run_transfers[n], rng)
                 for n in range(spec.steps)]
        steps[0].start_us = rng.uniform(0, 150)
        proc_start = epoch.timestamp() - rng.uniform(90, 600)
        base_ns = int(proc_start) * 1_000_000_000
        epoch_us = epoch.timestamp() * 1e6 + node_offset[node]
        nccl = spec.nccl_kernel if incident and spec.nccl_kernel else (
            NCCL_OLD if spec.style == "2.1" else NCCL_NEW)
        traces.append(RankTrace(
            rank=r, world_size=spec.ranks, pid=node_pid[node] + 17 * local + rng.randrange(5),
            device=local, devices=spec.gpus_per_node or spec.per_node, gpu=dict(gpu),
            style=spec.style, base_ns=base_ns,
            clock_us=epoch_us if spec.style == "2.1" else epoch_us - base_ns / 1000,
            nccl_kernel=nccl, nccl_stream=rng.choice((20, 24, 40)) if r == 0 else 0,
            nccl_version="2.18.3" if spec.style == "2.1" else "2.21.5", steps=steps))
        skews.append(rng.uniform(0.0, 4.0))
    for t in traces:  # one NCCL stream id per job
        t.nccl_stream = traces[0].nccl_stream
    synchronize(traces, skews)
    return _Run(label=label, epoch=epoch, first_step=first, traces=traces)
