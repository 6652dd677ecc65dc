"""The scrapes in OpenMetrics under vLLM's metric names (old or new), and the DCGM series."""

from __future__ import annotations

import gzip
import hashlib
import io
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from goodput_agent.evals.latency.engine import HISTS, Engine
from goodput_agent.evals.latency.spec import SCRAPE_S, LatencyCaseSpec, Names


def _num(v: float) -> str:
    if isinstance(v, int):
        return f"{v}.0"
    r = round(v, 4)
    return repr(float(r)) if r != int(r) else f"{int(r)}.0"


def _le(b: float) -> str:
    return repr(float(b))


def _labels(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}"


@dataclass
class _Family:
    name: str
    kind: str  # histogram | counter | gauge
    help: str
    series: dict[tuple[tuple[str, str], ...], list[tuple[int, Any]]] = field(default_factory=dict)


def _families(names: Names) -> list[tuple[str, str, str, str]]:
    """(key, metric, kind, help) for the names a vLLM version exports."""
    kv = {"new": ["vllm:kv_cache_usage_perc"], "old": ["vllm:gpu_cache_usage_perc"],
          "both": ["vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"]}[names]
    itl = {"new": ["vllm:inter_token_latency_seconds"],
           "old": ["vllm:time_per_output_token_seconds"],
           "both": ["vllm:time_per_output_token_seconds",
                    "vllm:inter_token_latency_seconds"]}[names]
    out = [("running", "vllm:num_requests_running", "gauge",
            "Number of requests in model execution batches."),
           ("waiting", "vllm:num_requests_waiting", "gauge",
            "Number of requests waiting to be processed.")]
    out += [("kv", k, "gauge", "KV-cache usage. 1 means 100 percent usage.") for k in kv]
    out += [("preemptions", "vllm:num_preemptions", "counter",
             "Cumulative number of preemption from the engine."),
            ("prompt_tokens", "vllm:prompt_tokens", "counter",
             "Number of prefill tokens processed."),
            ("generation_tokens", "vllm:generation_tokens", "counter",
             "Number of generation tokens processed."),
            ("success", "vllm:request_success", "counter",
             "Count of successfully processed requests."),
            ("prompt", "vllm:request_prompt_tokens", "histogram",
             "Number of prefill tokens processed."),
            ("output", "vllm:request_generation_tokens", "histogram",
             "Number of generation tokens processed."),
            ("ttft", "vllm:time_to_first_token_seconds", "histogram",
             "Histogram of time to first token in seconds.")]
    out += [("itl", k, "histogram", "Histogram of inter-token latency in seconds.") for k in itl]
    if names == "new":
        out.append(("tpot", "vllm:request_time_per_output_token_seconds", "histogram",
                    "Histogram of time_per_output_token_seconds per request."))
    out += [("e2e", "vllm:e2e_request_latency_seconds", "histogram",
             "Histogram of e2e request latency in seconds."),
            ("queue", "vllm:request_queue_time_seconds", "histogram",
             "Histogram of time spent in WAITING phase for request."),
            ("prefill", "vllm:request_prefill_time_seconds", "histogram",
             "Histogram of time spent in PREFILL phase for request."),
            ("decode", "vllm:request_decode_time_seconds", "histogram",
             "Histogram of time spent in DECODE phase for request."),
            ("config", "vllm:cache_config_info", "gauge",
             "Information of the LLMEngine CacheConfig")]
    return out


HISTS_BY_NAME = {metric: HISTS[key] for key, metric, kind, _ in _families("both") + _families("new")
                 if kind == "histogram"}


def _collect(spec: LatencyCaseSpec) -> list[_Family]:
    fams = {metric: _Family(metric, kind, text) for _, metric, kind, text in _families(spec.names)}
    t0 = int(spec.start.timestamp())
    for mi, model in enumerate(spec.models):
        for e in range(spec.engines):
            base = [("model_name", model.name)] + ([] if spec.names == "old"
                                                   else [("engine", str(e))])
            rng = random.Random(_seed(spec.seed, spec.case_id, mi, e))
            engine = Engine(model, spec.engines, rng, t0, spec.duration_s)
            for sc in engine.run():
                for key, metric, kind, _ in _families(spec.names):
                    fam = fams[metric]
                    if key == "success":
                        for reason in ("length", "stop"):
                            labels = tuple(base + [("finished_reason", reason)])
                            fam.series.setdefault(labels, []).append((sc.t, sc.counters[reason]))
                    elif key == "config":
                        labels = tuple([*base, *sorted(sc.config.items())])
                        fam.series.setdefault(labels, []).append((sc.t, 1))
                    elif kind == "histogram":
                        fam.series.setdefault(tuple(base), []).append((sc.t, sc.hists[key]))
                    elif kind == "counter":
                        fam.series.setdefault(tuple(base), []).append((sc.t, sc.counters[key]))
                    else:
                        value = {"running": sc.running, "waiting": sc.waiting,
                                 "kv": sc.kv_usage}[key]
                        fam.series.setdefault(tuple(base), []).append((sc.t, value))
    return list(fams.values())


def _write_family(out: io.StringIO, fam: _Family) -> None:
    out.write(f"# TYPE {fam.name} {fam.kind}\n# HELP {fam.name} {fam.help}\n")
    for labels, points in fam.series.items():
        pairs = list(labels)
        if fam.kind == "counter":
            lab = _labels(pairs)
            for t, v in points:
                out.write(f"{fam.name}_total{lab} {_num(float(v))} {t}\n")
        elif fam.kind == "gauge":
            lab = _labels(pairs)
            for t, v in points:
                out.write(f"{fam.name}{lab} {_num(float(v))} {t}\n")
        else:
            bounds = HISTS_BY_NAME[fam.name]
            les = [_labels([*pairs, ("le", _le(b))]) for b in bounds]
            les.append(_labels([*pairs, ("le", "+Inf")]))
            lab = _labels(pairs)
            for t, (cum, n, total) in points:
                for le, c in zip(les, cum, strict=True):
                    out.write(f"{fam.name}_bucket{le} {c}.0 {t}\n")
                out.write(f"{fam.name}_count{lab} {n}.0 {t}\n")
                out.write(f"{fam.name}_sum{lab} {_num(total)} {t}\n")


def render_vllm_metrics(spec: LatencyCaseSpec) -> str:
    """The service's /metrics, scraped every SCRAPE_S seconds, as one OpenMetrics text."""
    out = io.StringIO()
    for fam in _collect(spec):
        _write_family(out, fam)
    out.write("# EOF\n")
    return out.getvalue()


def render_dcgm_metrics(spec: LatencyCaseSpec) -> str | None:
    """DCGM_FI_DEV_GPU_UTIL of the service's GPUs: a decoy that moves the wrong way (or not at
    all) when latency changes, or moves when latency does not."""
    if spec.gpu_util == "none":
        return None
    rng = random.Random(_seed(spec.seed, spec.case_id, "dcgm"))
    model = spec.models[0]
    gpus = spec.engines * model.before.tensor_parallel_size
    shift_at = spec.gpu_util_shift_s
    shift = {"flat": 0.0, "up": 32.0, "down": -34.0}[spec.gpu_util]
    out = io.StringIO()
    out.write("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization "
              "(in %).\n")
    t0 = int(spec.start.timestamp())
    for g in range(gpus):
        uuid = hashlib.sha256(f"{spec.case_id}-{g}".encode()).hexdigest()
        labels = _labels([("gpu", str(g)), ("UUID", f"GPU-{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-"
                                                     f"{uuid[16:20]}-{uuid[20:32]}"),
                          ("device", f"nvidia{g}"), ("modelName", "NVIDIA L40S"),
                          ("Hostname", f"{model.name}-0")])
        for t in range(SCRAPE_S, spec.duration_s + 1, SCRAPE_S):
            v = 58.0 + rng.gauss(0, 4) + (shift if shift_at is not None and t >= shift_at else 0)
            out.write(f"DCGM_FI_DEV_GPU_UTIL{labels} {max(0, min(100, round(v)))} {t0 + t}\n")
    out.write("# EOF\n")
    return out.getvalue()


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


def _gz(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as fh:
        fh.write(text.encode())
    return buf.getvalue()


def write_case_series(spec: LatencyCaseSpec, path: Path, which: Literal["vllm", "dcgm"] = "vllm",
                      compress: bool | None = None) -> Path | None:
    """Write one case's series as OpenMetrics text (gzipped when the path ends in .gz, or when
    `compress` says so): what a test backfills into a real Prometheus."""
    text = render_vllm_metrics(spec) if which == "vllm" else render_dcgm_metrics(spec)
    if text is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress if compress is not None else path.suffix == ".gz":
        path.write_bytes(_gz(text))
    else:
        path.write_text(text)
    return path
