"""The latency analysis against the planted answers of the shipped, seeded suite, and its
behaviour with user windows, missing evidence, failing sources and decoys."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path

import pytest
import yaml

from goodput_agent.analysis.latency.analyze import analyse, resolve_service
from goodput_agent.analysis.latency.decide import weigh
from goodput_agent.analysis.latency.model import NOT_ADDITIVE, ConfigChange, LatencyResult
from goodput_agent.core.errors import BadInput
from goodput_agent.core.events import EventKind
from goodput_agent.metrics.engine_args import load_engine_args
from goodput_agent.metrics.file_source import FileMetricsSource
from goodput_agent.metrics.source import MetricsUnavailable, Selector, TimeWindow
from goodput_agent.metrics.vllm_names import ConfigRevision
from goodput_agent.report import CATEGORIES

CASES = Path(__file__).resolve().parents[3] / "evals" / "latency_cases"
TOLERANCE_S = 300  # windows found within 5 minutes of the planted change
STRADDLE_S = 60  # how far a window may reach across the planted change


def case_dirs() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.is_dir())


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@cache
def bundle(name: str, with_dcgm: bool = True) -> tuple[FileMetricsSource, list[ConfigRevision]]:
    case = CASES / name
    files = sorted(p for p in (case / "metrics").iterdir() if with_dcgm or "dcgm" not in p.name)
    revisions: list[ConfigRevision] = []
    for f in sorted((case / "config").glob("*")) if (case / "config").is_dir() else []:
        revisions += load_engine_args(f, str(f.relative_to(case)))
    return FileMetricsSource.from_files(files, root=case), revisions


@cache
def result(name: str, with_dcgm: bool = True) -> LatencyResult:
    source, revisions = bundle(name, with_dcgm)
    incident = yaml.safe_load((CASES / name / "incident.yaml").read_text())
    windows = [TimeWindow(**incident[k]) if k in incident else None
               for k in ("baseline", "incident")]
    return analyse(source, resolve_service(source, incident["service"]), *windows,
                   revisions=revisions)


def expected(name: str) -> dict:
    return json.loads((CASES / name / "expected.json").read_text())


def test_the_suite_category_accuracy_and_windows() -> None:
    wrong, off = [], []
    names = [c.name for c in case_dirs()]
    for name in names:
        exp, r = expected(name), result(name)
        if r.verdict.category != exp["category"]:
            wrong.append(f"{name}: {r.verdict.category} ({r.verdict.summary})")
        if exp["change_at"] is None or r.windows is None or r.windows.how == "user":
            continue
        planted = _iso(exp["change_at"])
        w = r.windows
        found = w.change_at
        if found is None or abs((found - planted).total_seconds()) > TOLERANCE_S \
                or (w.baseline.end - planted).total_seconds() > STRADDLE_S \
                or (planted - w.incident.start).total_seconds() > STRADDLE_S \
                or (w.incident.start - planted).total_seconds() > TOLERANCE_S + STRADDLE_S \
                or w.baseline.seconds != w.incident.seconds or w.baseline.seconds < 600:
            off.append(f"{name}: change {found} vs {planted}, windows {w.baseline} {w.incident}")
    assert len(names) >= 30
    assert 1 - len(wrong) / len(names) >= 0.95, wrong
    assert not off, off


def test_every_category_is_in_the_suite() -> None:
    cats = {expected(c.name)["category"] for c in case_dirs()}
    assert cats == set(CATEGORIES["latency"]) | {"unknown"}


def test_gpu_utilization_never_decides() -> None:
    decoys = [c.name for c in case_dirs() if (c / "metrics" / "dcgm.om.gz").exists()]
    assert len(decoys) >= 5
    for name in decoys:
        with_gpu, without = result(name), result(name, with_dcgm=False)
        assert with_gpu.incident is not None and with_gpu.incident.gpu_util_mean is not None
        assert without.incident is not None and without.incident.gpu_util_mean is None
        assert (with_gpu.verdict.category, with_gpu.verdict.confidence,
                with_gpu.verdict.summary) == \
            (without.verdict.category, without.verdict.confidence, without.verdict.summary)


def test_the_decoy_moves_the_wrong_way() -> None:
    r = result("l04-queueing-gpu-util-falls")
    assert r.verdict.category == "queueing"
    assert r.incident.gpu_util_mean < r.baseline.gpu_util_mean - 20


def test_user_windows_are_used_as_given() -> None:
    name = "l08-queueing-user-windows"
    incident = yaml.safe_load((CASES / name / "incident.yaml").read_text())
    r = result(name)
    assert r.windows.how == "user"
    assert r.baseline.window == TimeWindow(**incident["baseline"])
    assert r.incident.window == TimeWindow(**incident["incident"])
    assert r.verdict.category == "queueing"


def test_explicit_windows_override_the_change_point() -> None:
    source, _ = bundle("l24-output-3x")
    auto = result("l24-output-3x")
    b = TimeWindow(start=auto.windows.baseline.start,
                   end=auto.windows.baseline.start + timedelta(minutes=10))
    r = analyse(source, {"model_name": "llama-3.1-8b"}, b, None)
    assert r.windows.how == "user+adjacent" and r.baseline.window == b
    assert r.incident.window.end == source.span("vllm:e2e_request_latency_seconds").end
    assert r.verdict.category == "output_length"


def test_evidence_is_metric_series_with_both_windows() -> None:
    r = result("l09-kv-gpu-memory-lowered-args")
    assert r.verdict.category == "kv_cache_pressure"
    assert r.verdict.evidence
    for ev in r.verdict.evidence:
        assert ev.kind == EventKind.metric_series
        assert (ev.locator.path, ev.locator.line_start, ev.locator.line_end) == \
            ("metrics/vllm.om.gz", 0, 0)
        assert " incident " in ev.locator.span and " vs baseline " in ev.locator.span
    spans = " | ".join(ev.locator.span for ev in r.verdict.evidence)
    assert 'histogram_quantile(0.9, vllm:e2e_request_latency_seconds{model_name="llama-3.1-8b"})' \
        in spans
    assert "vllm:num_preemptions_total" in spans
    assert any("raising --max-num-seqs" in x for x in r.verdict.would_not_fix)


def test_numbers_and_notes_of_a_window() -> None:
    r = result("l17-prompt-3x")
    assert NOT_ADDITIVE in r.notes
    b, i = r.baseline, r.incident
    assert b.e2e.p50 < b.e2e.p90 < b.e2e.p99
    ratio = i.prompt_tokens.mean / b.prompt_tokens.mean
    assert ratio == pytest.approx(r.ratios["prompt_tokens_mean"])
    assert r.ratios["prompt_tokens_mean"] > 2.5 and r.ratios["ttft_p90"] > 2
    assert b.request_rate == pytest.approx(3.0, rel=0.15) and b.success_rate == 1.0
    assert 0 < b.kv_usage_mean < b.kv_usage_max < 1
    assert set(r.timeline) == {"p50", "p90", "waiting", "kv_usage"}
    assert len(r.timeline["p90"]) > 40 and len(r.timeline["kv_usage"]) > 40
    json.dumps(r.report_object())  # the report's latency object is plain JSON


def test_config_changes_are_weighed() -> None:
    queue = result("l03-queueing-max-num-seqs-lowered")
    assert [(c.key, c.baseline, c.incident) for c in queue.config_diff] == \
        [("max_num_seqs", "128", "20")]
    assert "explains it" in queue.verdict.summary
    prompt = result("l22-prompt-unrelated-config-change")
    assert prompt.verdict.category == "prompt_length"
    assert "max_num_batched_tokens 8192 -> 16384" in prompt.verdict.summary
    assert "not the cause" in prompt.verdict.summary
    dtype = result("l16-kv-cache-dtype-fp8-dropped")
    assert ("kv_cache_dtype", "fp8", "auto") in \
        [(c.key, c.baseline, c.incident) for c in dtype.config_diff]


def test_weigh() -> None:
    def change(key: str, a: str, b: str) -> ConfigChange:
        return ConfigChange(key=key, baseline=a, incident=b, source="x")
    assert weigh("queueing", change("max_num_seqs", "256", "32")).startswith("explains")
    assert weigh("queueing", change("max_num_seqs", "32", "256")).startswith("not the cause")
    assert weigh("kv_cache_pressure",
                 change("gpu_memory_utilization", "0.9", "0.6")).startswith("explains")
    assert weigh("kv_cache_pressure", change("max_model_len", "4096", "32768")) \
        .startswith("explains")
    assert weigh("output_length", change("max_num_seqs", "256", "32")).startswith("not the")


def test_the_other_model_is_left_out() -> None:
    r = result("l19-prompt-second-model-decoy")
    assert r.service_labels == {"model_name": "llama-3.1-8b"}
    assert r.verdict.category == "prompt_length"


def test_a_missing_metric_makes_a_partial_result() -> None:
    case = CASES / "l01-queueing-arrival-surge"
    source = FileMetricsSource.from_files(
        [case / "metrics" / "vllm.om.gz"], root=case,
        want=lambda n: not n.startswith("vllm:kv_cache_usage_perc"))
    r = analyse(source, {"model_name": "llama-3.1-8b"})
    assert r.partial
    assert [m.what for m in r.missing] == ["KV-cache usage (1 = full)"]
    assert "vllm:kv_cache_usage_perc" in r.missing[0].why
    assert r.verdict.category == "queueing"
    assert any(u.startswith("partial") for u in r.verdict.unknowns)


class FlakySource:
    """A source whose server fails some queries (as a timeout or an HTTP error would)."""

    origin = None  # a server has no files to point at

    def __init__(self, inner: FileMetricsSource, failing: str):
        self.inner, self.failing, self.name = inner, failing, "prometheus http://127.0.0.1:1"

    def __getattr__(self, attr: str) -> object:
        return getattr(self.inner, attr)

    def quantile(self, q: float, histogram: Selector, window: TimeWindow) -> float | None:
        if self.failing in histogram.metric:
            raise MetricsUnavailable("prometheus http://127.0.0.1:1: timed out after 30 s")
        return self.inner.quantile(q, histogram, window)


def test_failed_queries_are_recorded_and_the_rest_goes_on() -> None:
    source, _ = bundle("l24-output-3x")
    r = analyse(FlakySource(source, "request_queue_time"), {"model_name": "llama-3.1-8b"})
    assert r.partial and r.verdict.category == "output_length"
    failed = [m for m in r.missing if "request_queue_time" in m.what]
    assert failed and all("timed out" in m.why for m in failed)
    assert all(ev.locator.path == "prometheus" for ev in r.verdict.evidence)


def _refused(*args: object) -> None:
    raise MetricsUnavailable("prometheus http://127.0.0.1:1: connection refused")


class DyingSource(FlakySource):
    """Answers which metrics there are and their span, then goes down."""

    quantile = histogram_mean = rate = gauge_mean = gauge_max = staticmethod(_refused)
    quantile_series = gauge_series = label_values = staticmethod(_refused)


def test_a_dead_source_stops_being_asked() -> None:
    source, _ = bundle("l24-output-3x")
    r = analyse(DyingSource(source, ""), {"model_name": "llama-3.1-8b"})
    assert r.partial and r.verdict.category == "unknown"
    asked = [m for m in r.missing if not m.why.startswith("not asked")]
    assert 3 <= len(asked) <= 12  # a few metrics, not the hundred numbers of two windows
    assert any(m.why.startswith("not asked: the source failed for 3 metrics") for m in r.missing)

    class Down(FlakySource):
        def metric_names(self) -> set[str]:
            raise MetricsUnavailable("prometheus http://127.0.0.1:1: connection refused")

    down = analyse(Down(source, "x"), {})
    assert down.partial and down.verdict.category == "unknown" and down.windows is None
    assert down.missing[0].why.endswith("connection refused")


def test_resolve_service() -> None:
    source, _ = bundle("l19-prompt-second-model-decoy")
    assert resolve_service(source, "llama-3.1-8b") == {"model_name": "llama-3.1-8b"}
    assert resolve_service(source, "mistral") == {"model_name": "mistral-7b"}
    with pytest.raises(BadInput, match="no service 'gpt-9'.*llama-3.1-8b, mistral-7b"):
        resolve_service(source, "gpt-9")
    with pytest.raises(BadInput, match="several models serve here"):
        resolve_service(source, None)
    single, _ = bundle("l17-prompt-3x")
    assert resolve_service(single, None) == {"model_name": "llama-3.1-8b"}
    with pytest.raises(BadInput, match="no vLLM end-to-end latency histogram"):
        resolve_service(FileMetricsSource([]), None)
