"""The verdict on generated runs with one planted cause each (evals/slowdown_generator.py)."""

import pytest

from goodput_agent.analysis.slowdown import analyse
from goodput_agent.analysis.slowdown_model import PARTS
from goodput_agent.evals.slowdown_generator import CaseSpec, render_case
from goodput_agent.parsing.openmetrics import OpenMetricsParser
from goodput_agent.parsing.trace_load import load_trace
from goodput_agent.parsing.trace_model import Trace, TraceMeta


def _runs(tmp_path, **kw):
    spec = CaseSpec(case_id="x", seed=3, ranks=4, per_node=2, steps=4, **kw)
    render_case(spec, tmp_path)
    runs = {"incident": [], "baseline": []}
    for p in sorted(tmp_path.rglob("*.json.gz")):
        runs["baseline" if "baseline" in p.parts else "incident"].append(
            load_trace(p, rel_path=str(p.relative_to(tmp_path))))
    return runs


def _series(tmp_path):
    from goodput_agent.metrics.files import load_series

    om = tmp_path / "metrics" / "dcgm.om"
    return load_series([om]) if om.exists() else None


CASES = [
    (dict(category="input_stall", dataloader_ms=6.0), "input_stall", None),
    (dict(category="host_overhead", launch_gap_us=300.0), "host_overhead", None),
    (dict(category="communication", transfer_factor=3.0), "communication", None),
    (dict(category="straggler", culprit=2, slow_factor=1.5), "straggler", 2),
    (dict(category="gpu_throttling", culprit=1, slow_factor=1.4), "gpu_throttling", 1),
]


@pytest.mark.parametrize(("kw", "category", "rank"), CASES, ids=[c[1] for c in CASES])
def test_each_planted_cause_is_named(tmp_path, kw, category, rank):
    runs = _runs(tmp_path, **kw)
    breakdown, v = analyse(runs["incident"], runs["baseline"], _series(tmp_path))
    assert (v.category, v.rank) == (category, rank), v.summary
    assert v.evidence and all(e.locator.span for e in v.evidence)
    for r in breakdown.incident.ranks:
        m = r.median_step
        assert sum(getattr(m, p) for p in PARTS) == pytest.approx(m.step_us)
    if category == "gpu_throttling":
        assert v.gpu == "1" and v.node == "gpu-node-01"
        assert any(e.kind == "metric_series" for e in v.evidence)


def test_straggler_hides_in_step_totals_but_not_in_waits(tmp_path):
    runs = _runs(tmp_path, category="straggler", culprit=3, slow_factor=1.6, baseline=False)
    breakdown, v = analyse(runs["incident"])
    steps = {r.rank: r.median_step_us for r in breakdown.incident.ranks}
    assert max(steps.values()) - min(steps.values()) < 0.05 * min(steps.values())  # barrier
    waits = {r.rank: r.mean_parts["comm_wait_us"] for r in breakdown.incident.ranks}
    assert min(waits, key=waits.get) == 3 and v.category == "straggler" and v.rank == 3


def test_no_gpu_events_is_unknown_with_the_reason():
    cpu_only = Trace(meta=TraceMeta(path="traces/cpu.json"))
    _, v = analyse([cpu_only])
    assert v.category == "unknown" and "no GPU kernels" in v.unknowns[0]


def test_unchanged_run_is_not_called_a_slowdown(tmp_path):
    runs = _runs(tmp_path, category="input_stall", dataloader_ms=0.3)
    _, v = analyse(runs["incident"], runs["baseline"])
    assert v.category == "unknown"


def test_dcgm_parser_sees_the_series(tmp_path):
    _runs(tmp_path, category="gpu_throttling", culprit=0, slow_factor=1.3)
    assert OpenMetricsParser().sniff((tmp_path / "metrics" / "dcgm.om").read_text()[:4000],
                                     "dcgm.om")
