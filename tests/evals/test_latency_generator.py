"""The latency-case generator: deterministic, the shipped suite is its output, the files are
what promtool backfills, and the load model obeys queueing's arithmetic."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from goodput_agent.evals.latency_generator import (
    REQUEST_LATENCY_BUCKETS,
    latency_spec,
    plan_latency_suite,
    render_latency_case,
    suite_index,
    write_case_series,
)
from goodput_agent.report import CATEGORIES

SHIPPED = Path(__file__).resolve().parents[2] / "evals" / "latency_cases"
SEED = 11
SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+) (\S+)$")


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def om_lines(case: str, name: str = "vllm.om.gz") -> list[str]:
    return gzip.decompress((SHIPPED / case / "metrics" / name).read_bytes()).decode() \
        .splitlines()


def samples(lines: list[str]) -> dict[tuple[str, str], list[tuple[int, float]]]:
    out: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    for line in lines:
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, line
        out[(m.group(1), m.group(2) or "")].append((int(m.group(4)), float(m.group(3))))
    return out


def test_the_plan_covers_each_cause_and_no_change() -> None:
    specs = plan_latency_suite(SEED)
    assert len(specs) >= 30 and len({s.case_id for s in specs}) == len(specs)
    per = Counter(s.category for s in specs)
    assert set(per) == set(CATEGORIES["latency"]) | {"unknown"}
    assert min(per.values()) >= 5
    assert {s.names for s in specs} == {"new", "old", "both"}
    assert any(s.engines > 1 for s in specs) and any(len(s.models) > 1 for s in specs)
    assert {s.gpu_util for s in specs} >= {"up", "down"}
    assert {s.config_evidence for s in specs} >= {"args", "info", "both", "none"}
    assert any(s.user_windows for s in specs)
    assert all(s.decoys or s.gpu_util in ("up", "down") or len(s.models) > 1
               for s in specs if s.misleading)


def test_rendering_is_deterministic_and_the_shipped_cases_are_its_output(
        tmp_path: Path) -> None:
    assert suite_index(plan_latency_suite(SEED), SEED) == (SHIPPED / "suite.json").read_text()
    for case_id in ("l33-no-change-old-names", "l13-kv-gpu-util-rises"):
        spec = latency_spec(case_id, SEED)
        render_latency_case(spec, tmp_path / "a" / case_id)
        render_latency_case(spec, tmp_path / "b" / case_id)
        assert digest(tmp_path / "a" / case_id) == digest(tmp_path / "b" / case_id)
        assert digest(tmp_path / "a" / case_id) == digest(SHIPPED / case_id), \
            "regenerate evals/latency_cases (see evals/README.md)"


def test_a_case_is_openmetrics_promtool_can_backfill() -> None:
    lines = om_lines("l03-queueing-max-num-seqs-lowered")
    assert lines[-1] == "# EOF"
    families = [ln.split()[2] for ln in lines if ln.startswith("# TYPE ")]
    assert len(families) == len(set(families))  # each family in one block
    series = samples(lines)
    start = datetime(2025, 6, 3, tzinfo=UTC).timestamp()
    for key, pts in series.items():
        times = [t for t, _ in pts]
        assert all(a < b for a, b in zip(times, times[1:], strict=False)), key
        assert all(start < t < 1e11 and t % 15 == 0 for t in times), key  # seconds


def test_histograms_are_cumulative_with_vllm_buckets() -> None:
    series = samples(om_lines("l24-output-3x"))
    name = "vllm:e2e_request_latency_seconds"
    buckets = {k[1]: v for k, v in series.items() if k[0] == f"{name}_bucket"}
    les = [re.search(r'le="([^"]+)"', lab).group(1) for lab in buckets]
    assert les == [repr(b) for b in REQUEST_LATENCY_BUCKETS] + ["+Inf"]
    count = next(v for k, v in series.items() if k[0] == f"{name}_count")
    cols = list(buckets.values())
    for k, (t, total) in enumerate(count):
        per_scrape = [col[k][1] for col in cols]
        assert per_scrape == sorted(per_scrape) and per_scrape[-1] == total, t


def test_a_restart_resets_counters_once_and_leaves_a_gap() -> None:
    spec = latency_spec("l03-queueing-max-num-seqs-lowered", SEED)
    restart = spec.start.timestamp() + spec.models[0].change_s
    series = samples(om_lines(spec.case_id))
    (pts,) = [v for k, v in series.items() if k[0] == "vllm:e2e_request_latency_seconds_count"]
    drops = [t for (_, a), (t, b) in zip(pts, pts[1:], strict=False) if b < a]
    assert len(drops) == 1 and restart < drops[0] <= restart + 90
    gaps = [(a, b) for (a, _), (b, _) in zip(pts, pts[1:], strict=False) if b - a > 15]
    assert len(gaps) == 1 and gaps[0][1] - gaps[0][0] >= 60


def test_old_new_and_both_names() -> None:
    def names(case: str) -> set[str]:
        return {k[0] for k in samples(om_lines(case))}

    def labels(case: str) -> set[str]:
        return {lab for _, lab in samples(om_lines(case))}

    old, new, both = names("l02-queueing-old-names"), names("l01-queueing-arrival-surge"), \
        names("l06-queueing-both-names-two-models")
    assert "vllm:gpu_cache_usage_perc" in old and "vllm:kv_cache_usage_perc" not in old
    assert "vllm:time_per_output_token_seconds_bucket" in old
    assert not any('engine="' in lab for lab in labels("l02-queueing-old-names"))
    assert "vllm:inter_token_latency_seconds_bucket" in new
    assert "vllm:request_time_per_output_token_seconds_bucket" in new
    assert "vllm:num_preemptions_total" in new and "vllm:request_success_total" in new
    assert {"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"} <= both


def test_the_gpu_utilization_decoy_moves_as_stated() -> None:
    for case, sign in (("l04-queueing-gpu-util-falls", -1), ("l31-no-change-gpu-util-jumps", 1)):
        spec = latency_spec(case, SEED)
        shift = spec.start.timestamp() + spec.gpu_util_shift_s
        vals = [v for pts in samples(om_lines(case, "dcgm.om.gz")).values() for v in pts]
        before = [v for t, v in vals if t < shift]
        after = [v for t, v in vals if t >= shift]
        delta = sum(after) / len(after) - sum(before) / len(before)
        assert sign * delta > 20, case


def test_answer_keys_and_questions() -> None:
    total = 0
    for case in sorted(p for p in SHIPPED.iterdir() if p.is_dir()):
        exp = json.loads((case / "expected.json").read_text())
        assert exp["case_id"] == case.name and exp["kind"] == "latency"
        assert exp["category"] in CATEGORIES["latency"] + ("unknown",)
        assert exp["notes"] and isinstance(exp["misleading"], bool)
        if exp["change_at"]:
            datetime.fromisoformat(exp["change_at"].replace("Z", "+00:00"))
        else:
            assert exp["category"] == "unknown"
        incident = yaml.safe_load((case / "incident.yaml").read_text())
        assert incident["service"] == exp["service"] and incident["kind"] == "latency"
        assert set(incident["window"]) == {"start", "end"}
        total += sum(p.stat().st_size for p in case.rglob("*") if p.is_file())
    assert total < 10 * 1024 * 1024


def test_littles_law_holds_in_the_load_model() -> None:
    """Requests in the engine = finished per second x time in the engine (after the queue)."""
    from goodput_agent.analysis.latency.analyze import analyse
    from goodput_agent.metrics.file_source import FileMetricsSource

    case = SHIPPED / "l32-no-change-steady"
    source = FileMetricsSource.from_files([case / "metrics" / "vllm.om.gz"], root=case)
    st = analyse(source, {"model_name": "llama-3.1-8b"}).baseline
    in_engine = st.request_rate * (st.e2e.mean - st.queue.mean)
    assert st.running_mean == pytest.approx(in_engine, rel=0.1)


def test_write_case_series_plain_or_gzipped(tmp_path: Path) -> None:
    spec = latency_spec("l32-no-change-steady", SEED).model_copy(update={"duration_s": 120})
    plain = write_case_series(spec, tmp_path / "vllm.om")
    text = plain.read_text()
    assert text.startswith("# TYPE vllm:num_requests_running gauge") and text.endswith("# EOF\n")
    packed = write_case_series(spec, tmp_path / "vllm.om.gz")
    assert gzip.decompress(packed.read_bytes()).decode() == text
    assert write_case_series(spec, tmp_path / "dcgm.om", "dcgm") is None  # no decoy here
