"""A run's files: Kineto traces in the layouts real runs leave, and DCGM series where a GPU
throttles or healthy metrics are a decoy."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from pydantic import BaseModel

from goodput_agent.evals.kineto.render import write_trace
from goodput_agent.evals.kineto.spec import RankTrace
from goodput_agent.evals.slowdown.simulation import _Run
from goodput_agent.evals.slowdown.spec import BUS, NEW_REASONS, OLD_REASONS, CaseSpec, host, node_of


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
