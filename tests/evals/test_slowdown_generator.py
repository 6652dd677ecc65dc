"""The slowdown eval suite (evals/slowdown_generator.py, shipped in evals/slowdown_cases/): it is
what the generator writes, it is small, and each planted cause is visible in the raw numbers."""

import functools
import gzip
import hashlib
import json
import statistics
import struct
from collections import defaultdict
from pathlib import Path

import pytest

from goodput_agent.evals.scorer import naive_slowdown_blame
from goodput_agent.evals.slowdown_generator import (
    CATEGORIES,
    CaseSpec,
    generate_suite,
    plan_suite,
    render_case,
)

SHIPPED = Path(__file__).resolve().parents[2] / "evals" / "slowdown_cases"
EXPECTED = sorted(SHIPPED.glob("*/expected.json"))


def _digest(root: Path, only: set[str] | None = None) -> dict[str, str]:
    """Content hashes; a .gz is hashed decompressed (zlib builds may differ) and must carry
    gzip MTIME 0."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or (only is not None and rel.parts[0] not in only):
            continue
        data = p.read_bytes()
        if p.suffix == ".gz":
            assert data[4:8] == b"\0\0\0\0", rel
            data = gzip.decompress(data)
        out[str(rel)] = hashlib.sha256(data).hexdigest()
    return out


def _expected(case: str) -> dict:
    return json.loads((SHIPPED / case / "expected.json").read_text())


@functools.cache
def _traces(case: Path, run: str = "incident") -> list:
    from goodput_agent.parsing.kineto import load as trace_load
    from goodput_agent.tools.profiler_traces import run_of

    out = []
    for p in sorted(case.rglob("*.json*")):
        rel = p.relative_to(case).as_posix()
        if p.name == "expected.json" or rel.startswith("metrics/") or run_of(rel) != run:
            continue
        parts = rel.split("/")
        hint = parts[parts.index("nodes") + 1] if "nodes" in parts else None
        out.append(trace_load.load_trace(p, rel_path=rel, node_hint=hint))
    return out


def _by_category(category: str) -> list[Path]:
    return [p.parent for p in EXPECTED if _expected(p.parent.name)["category"] == category]


def test_the_first_cases_are_what_the_generator_writes(tmp_path):
    first = {s.case_id for s in plan_suite()[:5]}  # one per cause; the whole suite takes ~8 s
    generate_suite(tmp_path, count=5)
    assert _digest(tmp_path, first) == _digest(SHIPPED, first)


def test_same_seed_same_case_other_seed_other_case(tmp_path):
    spec = plan_suite(seed=3, count=2)[1]
    render_case(spec, tmp_path / "a")
    render_case(spec, tmp_path / "b")
    render_case(spec.model_copy(update={"seed": spec.seed + 1}), tmp_path / "c")
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b") != _digest(tmp_path / "c")


def test_suite_json_lists_every_shipped_case_and_each_cause_often_enough():
    suite = json.loads((SHIPPED / "suite.json").read_text())
    ids = [c["id"] for c in suite["cases"]]
    assert ids == [p.parent.name for p in EXPECTED] == [s.case_id for s in plan_suite()]
    cats = [c["category"] for c in suite["cases"]]
    assert len(ids) >= 30 and all(cats.count(c) >= 6 for c in CATEGORIES)
    assert suite["seed"] == 7 and suite["kind"] == "slowdown"


def test_suite_is_small_and_mostly_gzipped():
    files = [p for p in SHIPPED.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 15_000_000
    traces = [p for p in files if ".json" in p.name and p.name not in ("expected.json",
                                                                         "suite.json")
              and p.parent.name != "metrics"]
    gz = [p for p in traces if p.suffix == ".gz"]
    assert len(gz) >= 0.9 * len(traces)
    for p in traces:  # uncompressed size: the gzip trailer's ISIZE
        size = struct.unpack("<I", p.read_bytes()[-4:])[0] if p.suffix == ".gz" \
            else p.stat().st_size
        assert size < 600_000, p  # a few hundred KB


def test_answer_keys_have_the_slowdown_shape():
    for p in EXPECTED:
        exp = json.loads(p.read_text())
        assert {"case_id", "kind", "category", "node", "rank", "gpu", "misleading",
                "notes"} <= set(exp)
        assert exp["kind"] == "slowdown" and exp["category"] in CATEGORIES
        assert exp["case_id"] == p.parent.name and exp["notes"]
        assert (exp["gpu"] is not None) == (exp["category"] == "gpu_throttling")
        if exp["category"] in ("straggler", "gpu_throttling"):
            assert exp["rank"] is not None and exp["node"]
        assert (p.parent / "incident.yaml").is_file()


def test_every_trace_head_says_rank_with_a_space_for_hta():
    for case in SHIPPED.iterdir():
        for p in list(case.rglob("*.json.gz"))[:2]:
            with gzip.open(p, "rt") as f:
                head = f.read(6000)
            assert '"distributedInfo": {"backend": "nccl", "rank": ' in head, p


def test_traces_load_with_hosts_where_the_answer_names_a_node():
    for case in (SHIPPED / "s03-straggler", SHIPPED / "s11-input-stall",
                 SHIPPED / "s31-input-stall"):
        exp = _expected(case.name)
        traces = _traces(case)
        assert len(traces) == exp["ranks"] and not any(t.warnings for t in traces)
        assert sorted(t.meta.rank for t in traces) == list(range(exp["ranks"]))
        if exp["node"]:
            assert exp["node"] in {t.meta.host for t in traces}
            assert all(t.meta.host for t in traces)


def _nccl(t) -> float:
    return sum(o.dur for o in t.gpu if o.kind == "comm")


def _compute(t) -> float:
    return sum(o.dur for o in t.gpu if o.kind == "compute")


def _median_step(t) -> float:
    return statistics.median(s.dur for s in t.steps)


@pytest.mark.parametrize("category", ["straggler", "gpu_throttling"])
def test_the_slow_rank_waits_least_but_its_step_is_not_the_longest(category):
    for case in _by_category(category):
        exp = _expected(case.name)
        traces = {t.meta.rank: t for t in _traces(case)}
        nccl = {r: _nccl(t) for r, t in traces.items()}
        compute = {r: _compute(t) for r, t in traces.items()}
        steps = {r: _median_step(t) for r, t in traces.items()}
        assert min(nccl, key=nccl.get) == exp["rank"], case.name
        assert max(compute, key=compute.get) == exp["rank"], case.name
        assert max(steps, key=steps.get) != exp["rank"], case.name  # the DDP barrier
        assert max(steps.values()) / min(steps.values()) < 1.05, case.name
        assert traces[exp["rank"]].meta.host == exp["node"]


def test_throttled_gpu_shows_in_its_dcgm_series_only():
    from goodput_agent.metrics.file_series import load_series

    for case in _by_category("gpu_throttling"):
        exp = _expected(case.name)
        series = load_series(sorted((case / "metrics").iterdir()))
        bits: dict[tuple[str, str], int] = defaultdict(int)
        clocks: dict[tuple[str, str], list[float]] = defaultdict(list)
        for s in series:
            key = (s.labels["Hostname"], s.labels["gpu"])
            if s.name.endswith("_REASONS"):
                for _, v in s.points:
                    bits[key] |= int(v)
            elif s.name == "DCGM_FI_DEV_SM_CLOCK":
                clocks[key] += [v for _, v in s.points]
        culprit = (exp["node"], exp["gpu"])
        assert bits[culprit] & 0xE8, case.name  # a HW/thermal/power-brake bit
        assert all(b & 0xE8 == 0 for k, b in bits.items() if k != culprit), case.name
        busy = [min(v) for k, v in clocks.items() if k != culprit and not bits[k] & 0x1]
        assert min(clocks[culprit]) < 0.85 * min(busy), case.name


def test_input_stalls_are_in_the_dataloader_spans_not_the_kernels():
    from goodput_agent.parsing.kineto.load import is_dataloader_span

    for case in _by_category("input_stall"):
        exp = _expected(case.name)

        def wait(t) -> float:
            return sum(a.dur for a in t.annotations if is_dataloader_span(a.name))

        inc = _traces(case)
        stalled = {t.meta.rank for t in inc if wait(t) > 3 * min(wait(x) for x in inc)} \
            if exp["node"] else {t.meta.rank for t in inc}
        if exp["node"]:  # one node's ranks stall, the others wait in the all-reduce
            assert {t.meta.host for t in inc if t.meta.rank in stalled} == {exp["node"]}
            calm = [t for t in inc if t.meta.rank not in stalled]
            assert min(_nccl(t) for t in calm) > max(_nccl(t) for t in inc
                                                       if t.meta.rank in stalled)
        base = _traces(case, "baseline")
        if base:
            assert min(wait(t) for t in inc if t.meta.rank in stalled) > \
                5 * max(wait(t) for t in base)
            per_call = [_compute(t) / sum(o.kind == "compute" for o in t.gpu) for t in inc]
            before = [_compute(t) / sum(o.kind == "compute" for o in t.gpu) for t in base]
            assert statistics.median(per_call) == pytest.approx(statistics.median(before),
                                                                rel=0.05)


def _exposed_nccl(t) -> float:
    """Communication time with no compute kernel running (a sweep over both kinds)."""
    edges = sorted((x, d, o.kind) for o in t.gpu if o.kind in ("comm", "compute")
                   for x, d in ((o.ts, 1), (o.end, -1)))
    depth, out, last = {"comm": 0, "compute": 0}, 0.0, None
    for x, d, kind in edges:
        if last is not None and depth["comm"] and not depth["compute"]:
            out += x - last
        depth[kind] += d
        last = x
    return out


def test_communication_cases_slow_every_rank_alike():
    for case in _by_category("communication"):
        inc = _traces(case)
        totals = [_nccl(t) for t in inc]
        assert max(totals) / min(totals) < 1.1, case.name  # no rank stands out
        base = _traces(case, "baseline")
        if base:
            assert statistics.median(_exposed_nccl(t) for t in inc) > \
                1.3 * statistics.median(_exposed_nccl(t) for t in base), case.name


def test_launch_gap_cases_have_gaps_longer_than_their_kernels():
    cases = [c for c in _by_category("host_overhead")
             if _expected(c.name)["variant"].startswith("launch_gaps")]
    assert cases
    for case in cases:
        t = _traces(case)[0]
        comp = sorted((o for o in t.gpu if o.kind == "compute" and o.stream == 7),
                      key=lambda o: o.ts)
        gaps = [b.ts - a.end for a, b in zip(comp, comp[1:], strict=False)]
        assert statistics.median(gaps) > statistics.median(o.dur for o in comp), case.name


def test_the_naive_answer_is_wrong_where_the_case_says_misleading():
    for p in EXPECTED:
        exp = json.loads(p.read_text())
        cat, node, rank = naive_slowdown_blame(p.parent)
        wrong = cat != exp["category"] or (exp["rank"] is not None and rank != exp["rank"]) \
            or (exp["node"] is not None and node != exp["node"])
        assert wrong == exp["misleading"], p.parent.name
    misleading = [json.loads(p.read_text())["misleading"] for p in EXPECTED]
    assert sum(misleading) >= 10


def test_the_defaults_make_a_small_healthy_baseline_and_a_planted_incident(tmp_path):
    render_case(CaseSpec(case_id="x", category="input_stall", seed=3, ranks=4, per_node=2,
                         steps=4, dataloader_ms=6.0), tmp_path)
    assert {p.parts[-2] for p in tmp_path.rglob("*.json.gz")} == {"incident", "baseline"}
    assert not (tmp_path / "metrics").exists()
    exp = json.loads((tmp_path / "expected.json").read_text())
    assert (exp["category"], exp["node"], exp["rank"]) == ("input_stall", None, None)
