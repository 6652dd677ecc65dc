"""Generate before/after pairs for `goodput verify`: an incident bundle (what was investigated)
and bundles collected after a fix, each with the verdict a correct verification gives.

Built on the other generators, so the "after" runs come from the same simulations:
- slowdown: the Kineto DDP simulation (slowdown_generator) — the cause removed (recovered),
  halved (partly), left (not recovered), removed while communication got slower (regressed
  elsewhere), or removed on a different world size (incomparable conditions);
- latency: the vLLM load model (latency_generator) — the regime restored, partly restored,
  unchanged, restored with slower decoding (regressed elsewhere), or at another arrival rate
  (incomparable);
- failure: a shipped failure case (a GPU falling off the bus) and the scheduler's records after
  the requeue: completed elsewhere with the node drained, the node left in service, the job
  back on the faulty node, failed again before the failure point, failed later on other nodes,
  or no record of the job.

    python -m goodput_agent.evals.verify_generator --out DIR --seed 7
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from goodput_agent.evals import latency_generator as lg
from goodput_agent.evals import slowdown_generator as sg

CASES = Path(__file__).resolve().parent / "cases"


class Pair(BaseModel):
    pair_id: str
    kind: str
    before: str  # relative to the output folder
    after: str
    verdict: str
    notes: str


# --------------------------------------------------------------------------- slowdown


def _write_after(spec: sg.CaseSpec, out: Path, incident: bool, seed: int) -> None:
    rng = random.Random(seed)
    run = sg.simulate(spec, incident, rng).model_copy(update={"label": "incident"})
    sg._write_run(spec, run, out, rng)


def _halve(spec: sg.CaseSpec) -> sg.CaseSpec:
    """Half of the planted cause, whichever knob plants it."""
    upd: dict[str, Any] = {}
    if spec.category == "input_stall":
        upd["dataloader_ms"] = round((spec.dataloader_ms + 0.3) / 2, 2)
    if spec.category in ("straggler", "gpu_throttling"):
        upd["slow_factor"] = round(1 + (spec.slow_factor - 1) / 2, 3)
    if spec.category == "communication":
        upd["transfer_factor"] = round(1 + (spec.transfer_factor - 1) / 2, 3)
    return spec.model_copy(update=upd)


def slowdown_pairs(out: Path, seed: int) -> list[Pair]:
    pairs: list[Pair] = []
    plan = {s.category: s for s in reversed(sg.plan_suite(seed))}
    for cat in ("input_stall", "straggler", "communication"):
        spec = plan[cat].model_copy(update={"steps": 8, "layout": "tensorboard", "baseline": True,
                                            "baseline_elsewhere": False, "metrics": "none"})
        scen = f"slowdown-{cat.replace('_', '-')}"
        sg.render_case(spec, out / scen / "before", with_expected=False)
        afters: dict[str, tuple[str, Callable[[Path], None], str]] = {
            "recovered": ("recovered", lambda p, s=spec: _write_after(s, p, False, seed + 1),
                          "the cause removed: the healthy run again"),
            "partly": ("partly", lambda p, s=spec: _write_after(_halve(s), p, True, seed + 2),
                       "half of the cause left"),
            "not": ("not_recovered", lambda p, s=spec: _write_after(s, p, True, seed + 3),
                    "the same cause, a fresh run"),
        }
        if cat == "input_stall":
            afters["regressed"] = (
                "regressed_elsewhere",
                lambda p, s=spec: _write_after(s.model_copy(update={
                    "category": "communication", "transfer_factor": 3.0}), p, True, seed + 4),
                "input stall gone, but the all-reduce became 3x slower")
            other = 4 if spec.ranks == 8 else 8
            afters["incomparable"] = (
                "incomparable",
                lambda p, s=spec, o=other: _write_after(s.model_copy(update={
                    "ranks": o, "per_node": min(o, s.per_node)}), p, False, seed + 5),
                f"healthy, but on {other} ranks instead of {spec.ranks}")
        for slug, (verdict, write, notes) in afters.items():
            write(out / scen / f"after-{slug}")
            pairs.append(Pair(pair_id=f"{scen}-{slug}", kind="slowdown", before=f"{scen}/before",
                              after=f"{scen}/after-{slug}", verdict=verdict, notes=notes))
    return pairs


# --------------------------------------------------------------------------- latency


def _after_latency(spec: lg.LatencyCaseSpec, regime: lg.Regime, out: Path, tag: str) -> None:
    after_start = spec.start + timedelta(seconds=spec.duration_s + 600)
    model = spec.models[0].model_copy(update={"before": regime, "after": None,
                                               "change_s": None, "restart": False})
    s = spec.model_copy(update={"case_id": f"{spec.case_id}-after-{tag}", "start": after_start,
                                "duration_s": 1800, "models": [model], "gpu_util": "none",
                                "user_windows": False, "config_evidence": "none"})
    lg.render_latency_case(s, out, with_expected=False)


def latency_pairs(out: Path, seed: int) -> list[Pair]:
    pairs: list[Pair] = []
    plan = {s.variant: s for s in lg.plan_latency_suite(11)}
    q = plan["queueing-max-num-seqs-lowered"]  # max_num_seqs 128 -> 20 at 5 req/s
    kv = plan["kv-gpu-memory-lowered-args"]
    scenarios = {
        "latency-queueing": (q, {
            "recovered": ("recovered", q.models[0].before, "--max-num-seqs back to 128"),
            "partly": ("partly", q.models[0].before.model_copy(update={"max_num_seqs": 26}),
                       "--max-num-seqs raised only to 26: the queue still grows, slower"),
            "not": ("not_recovered", q.models[0].after, "nothing changed"),
            "regressed": ("regressed_elsewhere", q.models[0].before.model_copy(update={
                "slowdown": 2.2}), "queue gone, but decoding 2.2x slower (throttled GPUs)"),
            "incomparable": ("incomparable", q.models[0].before.model_copy(update={"rate": 2.5}),
                             "restored, but measured at half the arrival rate"),
        }),
        "latency-kv-cache": (kv, {
            "recovered": ("recovered", kv.models[0].before, "gpu_memory_utilization restored"),
            "not": ("not_recovered", kv.models[0].after, "nothing changed"),
            "incomparable": ("incomparable", kv.models[0].before.model_copy(update={
                "prompt_median": 500}), "restored, but the prompts are a third as long"),
        }),
    }
    for scen, (spec, afters) in scenarios.items():
        s = spec.model_copy(update={"seed": seed})
        lg.render_latency_case(s, out / scen / "before", with_expected=False)
        for slug, (verdict, regime, notes) in afters.items():
            _after_latency(s, regime, out / scen / f"after-{slug}", slug)
            pairs.append(Pair(pair_id=f"{scen}-{slug}", kind="latency", before=f"{scen}/before",
                              after=f"{scen}/after-{slug}", verdict=verdict, notes=notes))
    return pairs


# --------------------------------------------------------------------------- failure

SACCT_HEADER = ("JobID|JobName|Partition|Account|AllocTRES|State|ExitCode|DerivedExitCode|"
                "Start|End|NodeList")
FAILURE_CASE = "c01-gpu-hardware-xid79"  # job 48213; Xid 79 on nid00034
# the case's logs reach step 2230 before the failure; a requeue resumes from a checkpoint (2100)


def _failure_after(out: Path, state: str, nodes: str, steps: tuple[int, int] | None,
                   drained: bool | None, job: str = "48213") -> None:
    (out / "slurm").mkdir(parents=True)
    end = "Unknown" if state == "RUNNING" else "2025-04-22T16:40:11"
    code = "0:0" if state in ("COMPLETED", "RUNNING") else "1:0"
    (out / "slurm" / "sacct.txt").write_text(
        f"{SACCT_HEADER}\n{job}|llama3-70b-sft|train|ml-research|billing=768,cpu=768,"
        f"gres/gpu=32,mem=6400G,node=4|{state}|{code}|{code}|2025-04-22T10:31:02|{end}|"
        f"{nodes}\n")
    if drained is True:
        (out / "slurm" / "sinfo-R.txt").write_text(
            "REASON               USER      TIMESTAMP           NODELIST\n"
            "goodput: Xid 79 (GPU root      2025-04-22T10:29:47 nid00034\n")
    elif drained is False:
        (out / "slurm" / "sinfo.txt").write_text(
            "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
            "train*       up   infinite      4  alloc nid[00030-00032,00035]\n"
            "train*       up   infinite      1   idle nid00034\n")
    if steps:
        lines = [f"[default0]:2025-04-22 10:4{i % 10}:00,000 - INFO - trainer - step {n}/57328 "
                 f"| loss 2.9{i % 10}00 | lr 6.000e-04" for i, n in enumerate(range(*steps, 30))]
        (out / "logs").mkdir()
        (out / "logs" / f"slurm-{job}.out").write_text("\n".join(lines) + "\n")


def failure_pairs(out: Path, seed: int) -> list[Pair]:
    scen = "failure-gpu-hardware"
    shutil.copytree(CASES / FAILURE_CASE, out / scen / "before",
                    ignore=shutil.ignore_patterns("expected.json"))
    other = "nid[00030-00032,00035]"
    same = "nid[00030-00032,00034]"
    afters = {
        "recovered": ("recovered", ("COMPLETED", other, (2100, 2500), True),
                      "completed on other nodes; nid00034 drained"),
        "running-past": ("recovered", ("RUNNING", other, (2100, 2600), True),
                         "still running, past the failure point, on other nodes"),
        "not-drained": ("partly", ("COMPLETED", other, None, False),
                        "completed elsewhere, but nid00034 is still idle in the partition"),
        "same-node": ("partly", ("COMPLETED", same, None, True),
                      "completed, but on the faulty node again"),
        "not": ("not_recovered", ("FAILED", other, (2100, 2200), True),
                "failed again before the failure point"),
        "regressed": ("regressed_elsewhere", ("FAILED", other, (2100, 3000), True),
                      "passed the failure point, then failed on other nodes"),
        "incomparable": ("incomparable", ("COMPLETED", other, None, True, "51234"),
                         "the after bundle holds another job only"),
    }
    pairs = []
    for slug, (verdict, a, notes) in afters.items():
        state, nodes, steps, drained = a[:4]
        job = a[4] if len(a) > 4 else "48213"
        _failure_after(out / scen / f"after-{slug}", state, nodes, steps, drained, job)
        if slug == "incomparable":  # another job, and two of them: not the one investigated
            p = out / scen / f"after-{slug}" / "slurm" / "sacct.txt"
            p.write_text(p.read_text().replace("llama3-70b-sft", "eval-sweep") + p.read_text(
            ).splitlines()[1].replace("51234", "51235").replace("llama3-70b-sft", "eval-2")
                + "\n")
        pairs.append(Pair(pair_id=f"{scen}-{slug}", kind="failure", before=f"{scen}/before",
                          after=f"{scen}/after-{slug}", verdict=verdict, notes=notes))
    return pairs


def generate_pairs(out: Path, seed: int = 7) -> list[Pair]:
    out.mkdir(parents=True, exist_ok=True)
    pairs = failure_pairs(out, seed) + slowdown_pairs(out, seed) + latency_pairs(out, seed)
    (out / "pairs.json").write_text(json.dumps({"seed": seed, "pairs": [
        p.model_dump() for p in pairs]}, indent=2) + "\n")
    return pairs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    pairs = generate_pairs(a.out, a.seed)
    print(f"wrote {len(pairs)} before/after pairs to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
