"""The verdict on synthetic multi-rank runs with one planted cause each (trace_builders), and,
where the eval generator is importable, on its generated Kineto files."""

import pytest

from goodput_agent.analysis.record_levels import AMBIGUOUS, ONE_ARTIFACT
from goodput_agent.analysis.slowdown.analyze import analyse
from goodput_agent.analysis.slowdown.model import PARTS
from goodput_agent.parsing.kineto.model import Trace, TraceMeta
from tests.analysis.slowdown.trace_builders import RunPlan, dcgm_series, ddp_run

T0 = 1_700_000_000.0

CAUSES = [
    (dict(input_us=8000), "input_stall", None),
    (dict(launch_gap_us=1500), "host_overhead", None),
    (dict(allreduce_us=10000), "communication", None),
    (dict(slow={2: 1.5}), "straggler", 2),
    (dict(input_by_rank={1: 9000}), "input_stall", 1),  # one rank's loader holds all back
    (dict(launch_gap_by_rank={3: 1500}), "host_overhead", 3),
]


def baseline() -> list[Trace]:
    return ddp_run(RunPlan(folder="traces/baseline", seed=11))


def assert_parts_sum(breakdown) -> None:
    for run in (breakdown.incident, breakdown.baseline):
        for r in run.ranks if run else []:
            for s in r.steps:
                assert sum(getattr(s, p) for p in PARTS) == pytest.approx(s.step_us)
            assert sum(r.mean_parts.values()) == pytest.approx(
                sum(s.step_us for s in r.steps) / len(r.steps))


@pytest.mark.parametrize("with_baseline", [True, False], ids=["baseline", "alone"])
@pytest.mark.parametrize(("kw", "category", "rank"), CAUSES,
                         ids=[f"{c[1]}-{c[2]}" for c in CAUSES])
def test_each_planted_cause_is_named(kw, category, rank, with_baseline):
    breakdown, v = analyse(ddp_run(RunPlan(**kw)), baseline() if with_baseline else None)
    assert (v.category, v.rank) == (category, rank), v.summary
    assert v.node == ("node-0" if rank is not None else None)
    assert v.confidence >= 0.5
    assert v.evidence and all(e.kind == "trace_span" for e in v.evidence)
    for e in v.evidence:
        assert e.locator.path.startswith("traces/rank") and e.locator.line_start == 0
        assert e.locator.span.startswith("step ") and "ProfilerStep#" in e.locator.span
    assert_parts_sum(breakdown)
    assert (breakdown.baseline is not None) == with_baseline
    assert any("no DCGM clock metrics" in u for u in v.unknowns)
    assert any("no baseline" in u for u in v.unknowns) != with_baseline


@pytest.mark.parametrize(("kw", "category"), [
    (dict(input_by_rank={r: 9000 for r in (2, 3)}), "input_stall"),
    (dict(launch_gap_by_rank={r: 1500 for r in (2, 3)}), "host_overhead")])
def test_one_nodes_slow_input_is_its_cause_not_the_others_waiting(kw, category):
    """Ranks 2-3 (node-1) read their batches slowly; ranks 0-1 (node-0) wait for them in the
    all-reduce. No single straggler, the collectives' waiting is the slow node's cost."""
    plan = dict(gpus_per_node=2, **kw)
    _, v = analyse(ddp_run(RunPlan(**plan)), ddp_run(RunPlan(folder="traces/baseline",
                                                             seed=11, gpus_per_node=2)))
    assert (v.category, v.node, v.rank) == (category, "node-1", None), v.summary
    assert "ranks 2, 3 on node-1" in v.summary and v.confidence >= 0.7
    assert "communication" in {a[0] for a in v.alternatives} or v.confidence >= 0.8
    ranks_of_evidence = {e.rank for e in v.evidence}
    assert ranks_of_evidence and ranks_of_evidence <= {2, 3}


def test_slow_host_to_device_copies_are_an_input_stall():
    base = ddp_run(RunPlan(folder="traces/baseline", seed=11, h2d_us=300))
    for b in (base, None):
        _, v = analyse(ddp_run(h2d_us=9000), b)
        assert v.category == "input_stall" and v.rank is None, v.summary
        assert "Memcpy HtoD" in v.summary and "Memcpy HtoD" in v.evidence[0].locator.span


def test_input_stall_evidence_names_the_dataloader_span():
    _, v = analyse(ddp_run(input_us=8000), baseline())
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ 8.0 ms" in \
        v.evidence[0].locator.span
    assert "idle_input grew 0.0 ms -> 8.0 ms" in v.summary


def test_throttled_gpu_with_dcgm_is_throttling_of_that_rank():
    series = dcgm_series("node-0", [0, 1, 2, 3], T0, throttled={2: (0x48, 1110.0)},
                         throttle_from=10)
    for base in (baseline(), None):
        breakdown, v = analyse(ddp_run(slow={2: 1.4}), base, series,
                               {"DCGM_FI_DEV_SM_CLOCK": "metrics/dcgm.om"})
        assert (v.category, v.rank, v.node, v.gpu) == ("gpu_throttling", 2, "node-0", "2")
        assert v.confidence >= 0.85
        kinds = {e.kind for e in v.evidence}
        assert kinds == {"metric_series", "trace_span"}
        assert any(e.locator.path == "metrics/dcgm.om" and "1980 -> 1110 MHz" in e.locator.span
                   for e in v.evidence)
        assert v.alternatives and v.alternatives[0][0] == "straggler"
        assert "DCGM says why" in v.alternatives[0][2]
        assert_parts_sum(breakdown)


def test_straggler_whose_gpu_is_clean_in_dcgm_stays_a_straggler():
    series = dcgm_series("node-0", [0, 1, 2, 3], T0)
    _, v = analyse(ddp_run(slow={2: 1.4}), baseline(), series)
    assert (v.category, v.rank) == ("straggler", 2)
    assert any("DCGM shows no throttling" in u for u in v.unknowns)


def test_a_throttled_gpu_that_costs_nothing_is_only_an_alternative():
    series = dcgm_series("node-0", list(range(8)), T0, throttled={6: (0x40, 1100.0)})
    _, v = analyse(ddp_run(input_us=8000), baseline(), series)
    assert v.category == "input_stall"
    assert [a[0] for a in v.alternatives] == ["gpu_throttling"]


def test_every_gpu_slower_without_metrics_is_throttling_at_the_ambiguous_level():
    """A throttled GPU and one shared with another process show the same per-call numbers:
    more likely than not, below one artifact that states its class."""
    _, v = analyse(ddp_run(slow={r: 1.4 for r in range(4)}), baseline())
    assert v.category == "gpu_throttling" and v.rank is None
    assert 0.5 < v.confidence <= AMBIGUOUS < ONE_ARTIFACT
    assert "x1.40" in v.summary and any("no DCGM clock metrics" in u for u in v.unknowns)


def test_every_gpu_slower_while_dcgm_shows_no_throttling_is_contested():
    series = dcgm_series("node-0", [0, 1, 2, 3], T0)
    _, v = analyse(ddp_run(slow={r: 1.4 for r in range(4)}), baseline(), series)
    assert v.category == "gpu_throttling" and v.confidence < 0.5
    assert any("DCGM shows no throttling" in u for u in v.unknowns)


def test_node_wide_throttling_names_the_node_not_a_rank():
    series = dcgm_series("node-0", [0, 1, 2, 3], T0, throttled={g: (0x4, 1300.0)
                                                                for g in range(4)})
    _, v = analyse(ddp_run(slow={r: 1.4 for r in range(4)}), baseline(), series)
    assert (v.category, v.rank, v.node, v.gpu) == ("gpu_throttling", None, "node-0", None)
    assert "4 GPUs throttle" in v.summary and "SwPowerCap" in v.summary


def test_runs_without_profiler_steps_are_judged_on_found_iterations():
    _, v = analyse(ddp_run(slow={1: 1.5}, profiler_steps=False))
    assert (v.category, v.rank) == ("straggler", 1)
    assert "kernel-pattern step" in v.evidence[0].locator.span


def test_unchanged_run_is_not_called_a_slowdown():
    _, v = analyse(ddp_run(seed=3), baseline())
    assert v.category == "unknown" and "no slowdown" in v.summary


def test_a_healthy_run_alone_has_no_cause():
    _, v = analyse(ddp_run(seed=3))
    assert v.category == "unknown" and "no cause stands out" in v.summary


def test_no_gpu_events_is_unknown_with_the_reason():
    cpu_only = Trace(meta=TraceMeta(path="traces/cpu.json"))
    breakdown, v = analyse([cpu_only])
    assert v.category == "unknown" and "no GPU kernels" in v.unknowns[0]
    assert breakdown.incident.ranks == [] and breakdown.notes


def test_gpu_less_traces_beside_real_ones_are_named():
    _, v = analyse([*ddp_run(input_us=8000), Trace(meta=TraceMeta(path="traces/cpu.json"))])
    assert v.category == "input_stall"
    assert any(u.startswith("traces/cpu.json: no GPU kernels") for u in v.unknowns)


def test_one_rank_says_waits_cannot_be_measured():
    _, v = analyse(ddp_run(ranks=1, input_us=8000))
    assert v.category == "input_stall"
    assert any("one rank traced" in u for u in v.unknowns)


# --- the eval generator's Kineto files, through the real loader -------------------------

def _generated(tmp_path, **kw):
    from goodput_agent.evals import slowdown_generator as gen
    from goodput_agent.parsing.kineto.load import load_trace

    spec = gen.CaseSpec(case_id="x", seed=3, ranks=4, per_node=2, steps=4, **kw)
    gen.render_case(spec, tmp_path)
    runs = {"incident": [], "baseline": []}
    for p in sorted(tmp_path.rglob("*.json.gz")):
        runs["baseline" if "baseline" in p.parts else "incident"].append(
            load_trace(p, rel_path=str(p.relative_to(tmp_path))))
    om = tmp_path / "metrics" / "dcgm.om"
    if om.exists():
        from goodput_agent.metrics.file_series import load_series

        return runs, load_series([om])
    return runs, None


GENERATED = [
    (dict(category="input_stall", dataloader_ms=6.0), "input_stall", None),
    (dict(category="host_overhead", launch_gap_us=300.0), "host_overhead", None),
    (dict(category="communication", transfer_factor=3.0), "communication", None),
    (dict(category="straggler", culprit=2, slow_factor=1.5), "straggler", 2),
    (dict(category="gpu_throttling", culprit=1, slow_factor=1.4), "gpu_throttling", 1),
]


@pytest.mark.parametrize(("kw", "category", "rank"), GENERATED, ids=[c[1] for c in GENERATED])
def test_generated_cases_are_named(tmp_path, kw, category, rank):
    runs, series = _generated(tmp_path, **kw)
    breakdown, v = analyse(runs["incident"], runs["baseline"], series)
    assert (v.category, v.rank) == (category, rank), v.summary
    assert v.evidence and all(e.locator.span for e in v.evidence)
    assert_parts_sum(breakdown)
    if category == "gpu_throttling":
        assert v.gpu == "1" and v.node == "gpu-node-01"
        assert any(e.kind == "metric_series" for e in v.evidence)


@pytest.mark.parametrize(("gpus_per_node", "node"), [(8, "node-0"), (2, None)])
def test_kernels_slower_on_every_rank_are_located_only_when_the_ranks_share_a_host(
        gpus_per_node, node):
    _, v = analyse(ddp_run(slow={r: 1.4 for r in range(4)}, gpus_per_node=gpus_per_node),
                   baseline())
    assert (v.category, v.rank, v.node) == ("gpu_throttling", None, node)
