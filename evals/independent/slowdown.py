"""Training slowdowns: a small DDP job (2-8 ranks, ~20 steps) profiled in a good run and a slow
one, one cause planted in the slow run; traces laid out as torch.profiler writes them."""

from __future__ import annotations

import gzip
import json
import random
from datetime import UTC, datetime, timedelta

import yaml

from .case import Case, Expected
from .kineto import RankTrace, StepPlan
from .model import HOST_STYLES
from .openmetrics import Family, render

BASE_FOLDERS = ("baseline", "good", "before", "control", "base")
SLOW_FOLDERS = ("traces", "slow", "incident", "run-slow")
QUESTIONS = ("why did training slow down?", "step time went from ~80ms to much more after the "
             "last deploy, why?", "training throughput dropped, what changed?",
             "why is this run slower than yesterday's?")


def _plans(rng: random.Random, world: int, cause: str | None, culprit: int, steps: int
           ) -> list[list[StepPlan]]:
    """Per step, per rank. Compute ends are aligned by the all-reduce: every rank waits for
    the slowest one, so a late rank shows up as the others' wait."""
    out = []
    for _ in range(steps):
        raw = []
        for r in range(world):
            kernels = [rng.uniform(13000, 16000) for _ in range(4)]
            inp, host, comm = rng.uniform(200, 400), 0.0, rng.uniform(7000, 9000)
            if cause == "input_stall":
                inp = rng.uniform(35000, 50000)
            elif cause == "host_overhead":
                host = rng.uniform(30000, 45000)
            elif cause == "communication":
                comm *= rng.uniform(3.5, 4.5)
            elif cause == "gpu_throttling":
                kernels = [k * rng.uniform(1.33, 1.4) for k in kernels]
            elif cause == "straggler" and r == culprit:
                kernels = [k * rng.uniform(1.5, 1.7) for k in kernels]
            raw.append((inp, host, kernels, comm))
        ends = [inp + host + sum(k) for inp, host, k, _ in raw]
        comm_max = max(c for *_, c in raw)
        out.append([StepPlan(inp, host, k, max(ends) - e, comm_max)
                     for (inp, host, k, _), e in zip(raw, ends, strict=True)])
    return out


def _run_traces(rng: random.Random, hosts: list[str], per_host: int, start: datetime,
                cause: str | None, culprit: int) -> list[tuple[int, dict]]:
    world = len(hosts) * per_host
    plans = _plans(rng, world, cause, culprit, rng.randint(16, 22))
    traces = [RankTrace(r, world, rng.randint(3000, 90000), int(start.timestamp() * 1e9))
              for r in range(world)]
    t = 1000.0
    for n, step in enumerate(plans, start=rng.randint(1, 40)):
        t = max(tr.step(n, t, plan) for tr, plan in zip(traces, step, strict=True)) + 50
    return [(tr.rank, tr.document()) for tr in traces]


def _write_run(files: dict[str, bytes], rng: random.Random, folder: str, hosts: list[str],
               per_host: int, traces: list[tuple[int, dict]], layout: int,
               start: datetime) -> None:
    for rank, doc in traces:
        host = hosts[rank // per_host]
        data = json.dumps(doc).encode()
        if layout == 0:
            pid = doc["traceEvents"][0]["pid"]
            name = f"{folder}/{host}_{pid}.{int(start.timestamp() * 1000) + rank}.pt.trace.json.gz"
            files[name] = gzip.compress(data, mtime=0)
        else:
            files[f"{folder}/nodes/{host}/rank{rank}.json"] = data


def _dcgm(rng: random.Random, hosts: list[str], per_host: int, base: datetime, slow: datetime,
          throttled: bool) -> str:
    clock, reasons = Family("DCGM_FI_DEV_SM_CLOCK", "gauge"), Family(
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge")
    temp = Family("DCGM_FI_DEV_GPU_TEMP", "gauge")
    for run_start, bad in ((base, False), (slow, throttled)):
        for k in range(20):
            ts = (run_start + timedelta(seconds=15 * k - 120)).timestamp()
            for host in hosts:
                for gpu in range(per_host):
                    lab = {"gpu": str(gpu), "Hostname": host, "modelName": "NVIDIA H100 80GB HBM3"}
                    clock.add(ts, lab, rng.choice((1410, 1395)) if bad else 1980)
                    reasons.add(ts, lab, 72 if bad else 0)
                    temp.add(ts, lab, rng.randint(89, 93) if bad else rng.randint(55, 66))
    return render([clock, reasons, temp], {})


def _case(rng: random.Random, case_id: str, variant: int, cause: str) -> Case:
    style = rng.choice(HOST_STYLES)
    per_host = rng.choice((1, 2, 4))
    n_hosts = 1 if cause == "gpu_throttling" else rng.choice((2, 2, 4)) if per_host < 4 else 2
    hosts = [style(rng.randint(1, 30) + i) for i in range(n_hosts)]
    world = per_host * n_hosts
    culprit = rng.randrange(world)
    slow_start = datetime(2026, rng.randint(1, 11), rng.randint(2, 27), rng.randint(0, 22),
                          tzinfo=UTC)
    base_start = slow_start - timedelta(days=1, hours=rng.randint(0, 5))
    with_baseline = variant % 4 != 3 or cause in ("straggler", "gpu_throttling")
    layout = rng.randrange(2)
    files: dict[str, bytes] = {}
    slow_folder = rng.choice(SLOW_FOLDERS)
    _write_run(files, rng, slow_folder, hosts, per_host,
               _run_traces(rng, hosts, per_host, slow_start, cause, culprit), layout, slow_start)
    if with_baseline:
        _write_run(files, rng, rng.choice(BASE_FOLDERS), hosts, per_host,
                   _run_traces(rng, hosts, per_host, base_start, None, culprit), layout,
                   base_start)
    if cause == "gpu_throttling" and variant % 3 != 2 or cause == "straggler" and variant % 2:
        files["metrics/dcgm.om"] = _dcgm(rng, hosts, per_host, base_start, slow_start,
                                         cause == "gpu_throttling").encode()
    if rng.random() < 0.5:
        files["incident.yaml"] = yaml.safe_dump({"question": rng.choice(QUESTIONS)}).encode()
    node = hosts[culprit // per_host] if cause == "straggler" else (
        hosts[0] if cause == "gpu_throttling" else None)
    notes = {
        "input_stall": "every rank waits ~40 ms per step in the DataLoader's __next__ before "
                       "launching; kernels and all-reduce unchanged",
        "host_overhead": "gaps between kernels filled by host syncs (aten::item / "
                         "cudaStreamSynchronize) on every rank; kernels unchanged",
        "communication": "the all-reduce kernel takes ~4x longer on every rank; compute and "
                         "input unchanged",
        "gpu_throttling": "every compute kernel ~35% longer on every rank of the one host"
                          + (" while DCGM shows SM clock 1980->1410 MHz with thermal throttle "
                             "reasons" if "metrics/dcgm.om" in files else " (no DCGM here)"),
        "straggler": f"rank {culprit}'s kernels take ~1.6x; the other ranks wait for it in the "
                     "all-reduce",
    }[cause] + ("" if with_baseline else "; no baseline run: the part takes a large share")
    return Case(expected=Expected(case_id=case_id, kind="slowdown", category=cause, node=node,
                                  rank=culprit if cause == "straggler" else None, notes=notes),
                binary=files)


def _maker(cause: str):  # type: ignore[no-untyped-def]
    return lambda rng, case_id, variant: _case(rng, case_id, variant, cause)


CAUSES = {c: (_maker(c), n) for c, n in (("input_stall", 3), ("host_overhead", 3),
                                         ("straggler", 3), ("communication", 3),
                                         ("gpu_throttling", 3))}
