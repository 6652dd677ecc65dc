"""Generate latency eval cases: a seeded load model of a vLLM service, scraped as Prometheus
would scrape it, for the question "why did inference latency rise?".

The model, per engine (one vLLM engine core; data-parallel engines are independent):
- Poisson arrivals; prompt and output lengths drawn from log-normal distributions (capped by
  `max_tokens` and `max_model_len`);
- admission in arrival order while fewer than `max_num_seqs` requests run and the KV cache
  (in 16-token blocks, sized from `gpu_memory_utilization`, tensor parallelism and the cache
  dtype) has room for the prompt;
- prefill at `prefill_tps` tokens/s in admission order; decode iterations whose time grows with
  the batch and the tokens in the cache, slowed by the share of the GPU prefill takes (chunked
  prefill shares iterations with decode);
- a full cache preempts the most recently admitted request (vLLM's RECOMPUTE: its KV is freed
  and it waits at the head of the queue to be prefilled again);
- 1-second ticks with sub-tick times for arrivals, first tokens and finishes; a restart drops
  what is in flight and resets the counters.
Each finished request is observed into histograms with vLLM's real bucket boundaries
(vllm/v1/metrics/loggers.py); gauges and counters are scraped every 15 s. The output is
OpenMetrics text with timestamps in seconds, each series strictly increasing in time, ending in
`# EOF` (what `promtool tsdb create-blocks-from openmetrics` backfills).

Deterministic: the same seed gives byte-identical files (fixed dates, seeded RNGs, gzip with no
timestamp).

    python -m goodput_agent.evals.latency_generator --out evals/latency_cases --seed 11
"""

from __future__ import annotations

import argparse
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from goodput_agent.evals.latency.engine import Engine
from goodput_agent.evals.latency.openmetrics import (
    render_dcgm_metrics,
    render_vllm_metrics,
    write_case_series,
)
from goodput_agent.evals.latency.plan import latency_spec, plan_latency_suite
from goodput_agent.evals.latency.spec import (
    EXPECTED_FILE,
    LATENCY_CATEGORIES,
    REQUEST_LATENCY_BUCKETS,
    TOKEN_BUCKETS,
    TOKEN_LATENCY_BUCKETS,
    TTFT_BUCKETS,
    LatencyCase,
    LatencyCaseSpec,
    LatencyExpected,
    ModelSpec,
    Regime,
)

__all__ = [
    "EXPECTED_FILE",
    "Engine",
    "LATENCY_CATEGORIES",
    "LatencyCase",
    "LatencyCaseSpec",
    "LatencyExpected",
    "ModelSpec",
    "REQUEST_LATENCY_BUCKETS",
    "Regime",
    "TOKEN_BUCKETS",
    "TOKEN_LATENCY_BUCKETS",
    "TTFT_BUCKETS",
    "latency_spec",
    "plan_latency_suite",
    "render_dcgm_metrics",
    "render_vllm_metrics",
    "write_case_series",
]


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def change_time(spec: LatencyCaseSpec) -> datetime | None:
    """When the service's latency changes (None: it does not, even if something else does)."""
    m = spec.models[0]
    if m.after is None or m.change_s is None or spec.latency_steady:
        return None
    return spec.start + timedelta(seconds=m.change_s)


def _revisions(spec: LatencyCaseSpec) -> list[dict[str, Any]]:
    m = spec.models[0]
    revs = [{"from": _iso(spec.start - timedelta(days=2)),
             "args": m.before.engine_args(m.name)}]
    if m.after is not None and m.change_s is not None and m.restart:
        revs.append({"from": _iso(spec.start + timedelta(seconds=m.change_s)),
                     "args": m.after.engine_args(m.name)})
    return revs


def user_windows(spec: LatencyCaseSpec) -> tuple[tuple[datetime, datetime],
                                                  tuple[datetime, datetime]] | None:
    c = change_time(spec)
    if not spec.user_windows or c is None:
        return None
    return ((c - timedelta(minutes=20), c - timedelta(minutes=5)),
            (c + timedelta(minutes=5), c + timedelta(minutes=20)))


def render_latency_case(spec: LatencyCaseSpec, out_dir: Path,
                        with_expected: bool = True) -> LatencyCase:
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / "incident.yaml").exists():
        raise FileExistsError(f"{out_dir}: not empty and not a latency case")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    service = spec.models[0].name
    end = spec.start + timedelta(seconds=spec.duration_s)
    incident: dict[str, Any] = {
        "question": f"why did inference latency of {service} rise?",
        "kind": "latency", "service": service,
        "window": {"start": _iso(spec.start), "end": _iso(end)},
    }
    uw = user_windows(spec)
    if uw:
        (b0, b1), (i0, i1) = uw
        incident["baseline"] = {"start": _iso(b0), "end": _iso(b1)}
        incident["incident"] = {"start": _iso(i0), "end": _iso(i1)}
    (out_dir / "incident.yaml").write_text(yaml.safe_dump(incident, sort_keys=False))
    files = ["incident.yaml"]
    write_case_series(spec, out_dir / "metrics" / "vllm.om.gz")
    files.append("metrics/vllm.om.gz")
    if write_case_series(spec, out_dir / "metrics" / "dcgm.om.gz", "dcgm"):
        files.append("metrics/dcgm.om.gz")
    if spec.config_evidence in ("args", "both"):
        (out_dir / "config").mkdir()
        doc = {"revisions": _revisions(spec)}
        (out_dir / "config" / "engine_args.yaml").write_text(
            "# engine arguments per deployment revision (from the pod spec's args)\n"
            + yaml.safe_dump(doc, sort_keys=False))
        files.append("config/engine_args.yaml")
    c = change_time(spec)
    decoys = [d for d in (f"gpu_util_{spec.gpu_util}" if spec.gpu_util in ("up", "down")
                          else "", "second_model" if len(spec.models) > 1 else "") if d]
    decoys += [d for d in spec.decoys if d not in decoys]
    expected = LatencyExpected(case_id=spec.case_id, category=spec.category, service=service,
                               change_at=_iso(c) if c else None, misleading=spec.misleading,
                               notes=spec.notes, variant=spec.variant, names=spec.names,
                               decoys=decoys)
    if with_expected:
        (out_dir / EXPECTED_FILE).write_text(expected.model_dump_json(indent=2) + "\n")
        files.append(EXPECTED_FILE)
    return LatencyCase(case_id=spec.case_id, path=out_dir, expected=expected, files=files)


def suite_index(specs: list[LatencyCaseSpec], seed: int) -> str:
    """suite.json: the cases, their answers' headlines and what makes them hard."""
    cases = []
    for spec in specs:
        c = change_time(spec)
        cases.append({"case_id": spec.case_id, "category": spec.category,
                      "change_at": _iso(c) if c else None, "misleading": spec.misleading,
                      "variant": spec.variant})
    return json.dumps({"seed": seed, "count": len(specs), "cases": cases}, indent=2) + "\n"


def generate_latency_suite(out_dir: Path, seed: int = 11) -> list[LatencyCase]:
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = plan_latency_suite(seed)
    cases = [render_latency_case(spec, out_dir / spec.case_id) for spec in specs]
    (out_dir / "suite.json").write_text(suite_index(specs, seed))
    return cases


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "latency_cases")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--only", help="generate only the cases whose id contains this")
    args = ap.parse_args(argv)
    if args.only:
        for spec in plan_latency_suite(args.seed):
            if args.only in spec.case_id:
                render_latency_case(spec, args.out / spec.case_id)
        return
    cases = generate_latency_suite(args.out, args.seed)
    print(f"wrote {len(cases)} latency cases to {args.out}")


if __name__ == "__main__":
    main()
