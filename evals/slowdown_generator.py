"""Generate slowdown eval cases: a seeded simulation of a DDP training job traced with the PyTorch
profiler on every rank (Kineto format, evals/kineto_writer.py), with one cause planted per case.

Every step on every rank: DataLoader `__next__` (the GPU idles), the batch copied to the GPU,
forward kernels, backward kernels on the autograd thread with gradient all-reduce buckets
launched as they become ready, the optimizer, `loss.item()`. Ranks meet at the collectives: the
k-th all-reduce ends on every rank at the last arrival plus the transfer, so a slow rank makes
everyone else's NCCL kernels long while per-rank step totals even out. Every host has its own
clock offset, every process its own profiler base time.

Causes and their variants (the plan is a table, `RECIPES`): input stalls on all ranks, in
bursts, on one node's ranks only, or through pageable H2D copies; host overhead from launch
gaps longer than the kernels, an unfused optimizer, a `.item()` sync in the forward pass, or one
CPU-bound rank; a straggler GPU (no clock metrics, or metrics that look healthy, or only its
GEMMs slower); slower all-reduce everywhere (a degraded fabric, a socket fallback, a protocol
change, one bucket that overlaps nothing); a throttled GPU with its DCGM series (HW slowdown +
thermal, power brake; old and new reason names; OpenMetrics text or Prometheus query_range
JSON). Deterministic: the same seed gives byte-identical files (gzip mtime 0).

    python -m goodput_agent.evals.slowdown_generator --out DIR --seed 7
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from goodput_agent.evals.kineto_writer import (
    A100,
    H100,
    NCCL_NEW,
    NCCL_OLD,
    Bucket,
    HostSync,
    Kernel,
    RankTrace,
    StepPlan,
    Style,
    model_step,
    synchronize,
    write_trace,
)

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


# --------------------------------------------------------------------------- simulation


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


# --------------------------------------------------------------------------- files


def _trace_path(spec: CaseSpec, run: _Run, rt: RankTrace, rng: random.Random) -> Path:
    node = host(spec, node_of(spec, rt.rank), run.label == "baseline" and spec.baseline_elsewhere)
    stamp = run.epoch.timestamp() + 2 + rt.steps[-1].start_us / 1e6
    stamp_s = (f"{int(stamp * 1000)}" if spec.style != "2.6"
               else f"{int(stamp * 1e9) + rng.randrange(1_000_000)}")
    handler = f"{node}_{rt.pid}.{stamp_s}.pt.trace.json.gz"
    folder = {"incident": "incident", "baseline": "baseline"}[run.label]
    if spec.layout == "tensorboard":
        return Path("traces") / folder / handler
    if spec.layout == "tensorboard_flat":
        return Path("traces") / handler if run.label == "incident" else \
            Path("traces") / "baseline" / handler
    if spec.layout == "nodes_rank":
        return Path("nodes") / node / "traces" / folder / f"rank{rt.rank}.json.gz"
    if spec.layout == "nodes_handler":
        root = Path() if run.label == "incident" else Path("baseline")
        return root / "nodes" / node / "profiler" / handler
    width = len(str(spec.ranks - 1))
    name = f"rank-{rt.rank:0{width}d}.pt.trace.json" + ("" if spec.plain_json else ".gz")
    return Path("traces") / ("after" if run.label == "incident" else "before") / name


def _write_run(spec: CaseSpec, run: _Run, out: Path, rng: random.Random) -> list[str]:
    written = []
    for rt in run.traces:
        rel = _trace_path(spec, run, rt, rng)
        tmp = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(8))
        # export_chrome_trace writes a .gz through a temporary .json
        rt.trace_name = (f"/tmp/tmp{tmp}.json" if rel.suffix == ".gz"
                         else f"/workspace/runs/profiler/{rel.name}")
        write_trace(out / rel, rt)
        written.append(str(rel))
    return written


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _Gpu(BaseModel):
    node: str
    index: int
    uuid: str
    bus: str
    used: bool
    throttled: bool


def _gpus(spec: CaseSpec, rng: random.Random) -> list[_Gpu]:
    nodes = -(-spec.ranks // spec.per_node)
    per = spec.gpus_per_node or spec.per_node
    throttled = (node_of(spec, spec.culprit), spec.culprit % spec.per_node) \
        if spec.category == "gpu_throttling" and spec.culprit is not None else None
    return [_Gpu(node=host(spec, n), index=g, uuid=_uuid(rng), bus=BUS[g % len(BUS)],
                 used=g < spec.per_node, throttled=(n, g) == throttled)
            for n in range(nodes) for g in range(per)]


DCGM_HELP = {
    "DCGM_FI_DEV_SM_CLOCK": "SM clock frequency (in MHz).",
    NEW_REASONS: "Current clock event reasons (bitmask of DCGM_CLOCKS_EVENT_REASON_*).",
    OLD_REASONS: "Current clock throttle reasons (bitmask of DCGM_CLOCKS_THROTTLE_REASON_*).",
    "DCGM_FI_DEV_POWER_USAGE": "Power draw (in W).",
    "DCGM_FI_DEV_GPU_TEMP": "GPU temperature (in C).",
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilization (in %).",
}


def _dcgm_values(spec: CaseSpec, g: _Gpu, t: int, start: int,
                 rng: random.Random) -> dict[str, float]:
    top = 1410 if spec.host_style == "a100" else 1980
    if not g.used:
        return {"DCGM_FI_DEV_SM_CLOCK": 345 if top == 1980 else 210, spec.reason_metric: 0x1,
                "DCGM_FI_DEV_POWER_USAGE": round(rng.uniform(68, 74), 3),
                "DCGM_FI_DEV_GPU_TEMP": rng.randrange(30, 35), "DCGM_FI_DEV_GPU_UTIL": 0}
    bad = g.throttled and t >= start
    reasons = 0
    if bad:
        reasons = spec.throttle_bits
    elif "swpowercap" in spec.decoys and rng.random() < 0.3:
        reasons = 0x4  # every busy GPU touches its power cap now and then
    clock = top / (spec.slow_factor ** 1.1) if bad else top - rng.choice((0, 0, 0, 15, 30))
    if reasons == 0x4:
        clock = top - rng.choice((45, 60, 75))
    brake = bad and spec.throttle_bits & 0x80
    return {"DCGM_FI_DEV_SM_CLOCK": int(round(clock / 15) * 15), spec.reason_metric: reasons,
            "DCGM_FI_DEV_POWER_USAGE": round(rng.uniform(190, 240) if brake else
                                             rng.uniform(420, 470) if bad else
                                             rng.uniform(560, 690), 3),
            "DCGM_FI_DEV_GPU_TEMP": rng.randrange(88, 93) if bad and not brake
            else rng.randrange(57, 69),
            "DCGM_FI_DEV_GPU_UTIL": rng.randrange(97, 101)}


def write_dcgm(spec: CaseSpec, run: _Run, out: Path, rng: random.Random) -> str:
    """dcgm-exporter series of every GPU of the job's nodes around the incident run, as
    OpenMetrics text (timestamps in seconds) or a Prometheus query_range answer."""
    gpus = _gpus(spec, rng)
    t0 = int(run.epoch.timestamp()) - 420
    times = list(range(t0, t0 + 600, 20))
    start = int(run.epoch.timestamp()) - 300  # the throttling began 5 minutes before
    names = ["DCGM_FI_DEV_SM_CLOCK", spec.reason_metric, "DCGM_FI_DEV_POWER_USAGE",
             "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL"]
    values = {(g.node, g.index): [_dcgm_values(spec, g, t, start, rng) for t in times]
              for g in gpus}
    model = "NVIDIA A100-SXM4-80GB" if spec.host_style == "a100" else "NVIDIA H100 80GB HBM3"

    def labels(g: _Gpu) -> dict[str, str]:
        return {"gpu": str(g.index), "UUID": g.uuid, "pci_bus_id": f"00000000:{g.bus}:00.0",
                "device": f"nvidia{g.index}", "modelName": model, "Hostname": g.node,
                "DCGM_FI_DRIVER_VERSION": "550.90.07"}

    if spec.metrics_format == "prom_json":
        result = [{"metric": {"__name__": name, **labels(g), "container": "nvidia-dcgm-exporter",
                              "instance": f"{g.node}:9400", "job": "dcgm-exporter"},
                   "values": [[t, _num(v[name])] for t, v in zip(times, values[(g.node,
                                                                                g.index)],
                                                                 strict=True)]}
                  for name in names for g in gpus]
        rel = "metrics/dcgm_query_range.json"
        (out / "metrics").mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(json.dumps({"status": "success", "data": {
            "resultType": "matrix", "result": result}}, separators=(",", ":")) + "\n")
        return rel
    lines = []
    for name in names:
        lines += [f"# HELP {name} {DCGM_HELP[name]}", f"# TYPE {name} gauge"]
        for g in gpus:
            lab = ",".join(f'{k}="{v}"' for k, v in labels(g).items())
            lines += [f"{name}{{{lab}}} {_num(v[name])} {t}"
                      for t, v in zip(times, values[(g.node, g.index)], strict=True)]
    text = "\n".join(lines) + "\n# EOF\n"
    (out / "metrics").mkdir(parents=True, exist_ok=True)
    if len(gpus) <= 8:
        (out / "metrics" / "dcgm.om").write_text(text)
        return "metrics/dcgm.om"
    with open(out / "metrics" / "dcgm.om.gz", "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(text.encode())
    return "metrics/dcgm.om.gz"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


# --------------------------------------------------------------------------- one case


class Case(BaseModel):
    case_id: str
    path: Path
    expected: dict[str, Any]
    files: list[str]
    total_bytes: int


def expected_of(spec: CaseSpec) -> dict[str, Any]:
    rank = spec.slow_rank
    node = (host(spec, node_of(spec, rank)) if rank is not None else
            host(spec, spec.culprit_node) if spec.culprit_node is not None else None)
    return {"case_id": spec.case_id, "kind": "slowdown", "category": spec.category,
            "node": node, "rank": rank,
            "gpu": str(rank % spec.per_node) if spec.category == "gpu_throttling"
            and rank is not None else None,
            "misleading": False, "notes": spec.notes, "variant": spec.variant,
            "baseline": spec.baseline, "ranks": spec.ranks, "decoys": list(spec.decoys)}


def median_steps(run: _Run) -> dict[int, float]:
    """Each rank's median ProfilerStep duration (µs)."""
    return {t.rank: statistics.median((s.end_us or s.start_us) - s.start_us for s in t.steps)
            for t in run.traces}


def _longest_step_is(run: _Run, rank: int, margin_us: float = 3.0) -> bool:
    """Whether `rank`'s median step is the longest, or within `margin_us` of it (so integer
    timestamps cannot make it so)."""
    med = median_steps(run)
    return med[rank] >= max(v for r, v in med.items() if r != rank) - margin_us


def _step_ms(run: _Run) -> float:
    steps = run.traces[0].steps
    return (steps[-1].start_us - steps[0].start_us) / max(len(steps) - 1, 1) / 1000


def _incident_yaml(spec: CaseSpec, run: _Run, before: _Run | None) -> str:
    iso = "%Y-%m-%dT%H:%M:%SZ"
    q = "why did training slow down?"
    if before is not None:
        q = (f"why did training slow down? a step took about {_step_ms(before):.0f} ms in the "
             f"good run and takes {_step_ms(run):.0f} ms now")
    return yaml.safe_dump({
        "question": q, "kind": "slowdown", "job": f"pretrain-{spec.seed % 9000 + 1000}",
        "window": {"start": (run.epoch - timedelta(minutes=15)).strftime(iso),
                   "end": (run.epoch + timedelta(minutes=5)).strftime(iso)}}, sort_keys=False)


def render_case(spec: CaseSpec, out: Path, *, with_expected: bool = True,
                blame: Callable[[Path], Any] | None = None) -> Case:
    """Write the bundle with `out` as its root. `blame(case_dir) -> (category, node, rank)`
    (the naive baseline) sets `misleading`: whether it answers differently from the key."""
    for attempt in range(50):
        rng = random.Random(spec.seed + 104_729 * attempt)
        incident = simulate(spec, True, rng)
        if spec.slow_rank is None or not _longest_step_is(incident, spec.slow_rank):
            break  # on purpose: the slow rank's own step is not the longest (DDP barrier)
    baseline = simulate(spec, False, rng) if spec.baseline else None
    files = _write_run(spec, incident, out, rng)
    if baseline is not None:
        files += _write_run(spec, baseline, out, rng)
    if spec.metrics_format != "none":
        files.append(write_dcgm(spec, incident, out, rng))
    (out / "incident.yaml").write_text(_incident_yaml(spec, incident, baseline))
    files.append("incident.yaml")
    exp = expected_of(spec)
    if blame is not None:
        cat, node, rank = blame(out)
        exp["misleading"] = cat != exp["category"] or (
            exp["rank"] is not None and rank != exp["rank"]) or (
            exp["node"] is not None and node != exp["node"])
    if with_expected:
        (out / "expected.json").write_text(json.dumps(exp, indent=2) + "\n")
        files.append("expected.json")
    total = sum((out / f).stat().st_size for f in files)
    return Case(case_id=spec.case_id, path=out, expected=exp, files=sorted(files),
                total_bytes=total)


# --------------------------------------------------------------------------- the plan


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


def _plan(category: str, idx: int, recipe: Recipe, seed: int, number: int) -> CaseSpec:
    rng = random.Random(seed * 7919 + number)
    kw: dict[str, Any] = {}
    for key, val in recipe.items():
        kw[key] = round(rng.uniform(*val), 2) if isinstance(val, tuple) else val
    ranks = kw.pop("ranks", rng.choice((4, 8, 8)))
    per_node = kw.pop("per_node", min(ranks, rng.choice((2, 4, 4))))
    if kw.get("culprit_node") is True:
        kw["culprit_node"] = rng.randrange(ranks // per_node)
    if kw.get("culprit") is True or category in ("straggler", "gpu_throttling"):
        kw["culprit"] = rng.randrange(ranks)
    styles = ("gpu-node", "nid", "dgx", "a100")
    return CaseSpec(case_id=f"s{number:02d}-{category.replace('_', '-')}", category=category,
                    seed=seed * 1000 + number, ranks=ranks, per_node=per_node,
                    steps=6 if ranks <= 4 else 5, layers=3,
                    kernel_scale=kw.pop("kernel_scale", round(rng.uniform(1.0, 1.6), 2)),
                    host_style=styles[(idx + number) % len(styles)],
                    first_node=rng.choice((1, 3, 7, 12, 121)), **kw)


def plan_suite(seed: int = 7, count: int | None = None) -> list[CaseSpec]:
    """The cases, categories interleaved (s01 input_stall, s02 host_overhead, ...)."""
    depth = max(len(v) for v in RECIPES.values())
    order = [(c, i) for i in range(depth) for c in CATEGORIES if i < len(RECIPES[c])]
    if count is not None:
        order = order[:count]
    return [_plan(c, i, RECIPES[c][i], seed, n + 1) for n, (c, i) in enumerate(order)]


def generate_suite(out_dir: Path, seed: int = 7, count: int | None = None) -> list[Case]:
    from goodput_agent.evals.scorer import naive_slowdown_blame

    out_dir.mkdir(parents=True, exist_ok=True)
    cases = []
    for spec in plan_suite(seed, count):
        case_dir = out_dir / spec.case_id
        if case_dir.exists() and not (case_dir / "expected.json").exists() and \
                any(case_dir.iterdir()):
            raise FileExistsError(f"{case_dir}: not empty and not a case; not overwriting")
        cases.append(render_case(spec, case_dir, blame=naive_slowdown_blame))
    (out_dir / "suite.json").write_text(json.dumps({
        "seed": seed, "count": len(cases), "kind": "slowdown",
        "cases": [{"id": c.case_id, "category": c.expected["category"],
                   "variant": c.expected["variant"], "misleading": c.expected["misleading"],
                   "bytes": c.total_bytes} for c in cases]}, indent=2) + "\n")
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent /
                    "slowdown_cases")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--count", type=int, default=None, help="first N cases of the plan")
    a = ap.parse_args(argv)
    cases = generate_suite(a.out, a.seed, a.count)
    total = sum(c.total_bytes for c in cases)
    print(f"wrote {len(cases)} slowdown cases to {a.out} ({total / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
