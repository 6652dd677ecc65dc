import xml.etree.ElementTree as ET

import pytest

from goodput_agent.analysis.slowdown.model import (
    PARTS,
    Breakdown,
    RankBreakdown,
    RunBreakdown,
    StepBreakdown,
)
from goodput_agent.pictures import PART_COLOURS
from goodput_agent.pictures.breakdown_bars import draw_breakdown_bars, groups

NS = "{http://www.w3.org/2000/svg}"
BASE = {"compute_us": 50_000, "comm_transfer_us": 8_000, "comm_wait_us": 2_000,
        "memory_us": 1_000, "idle_input_us": 0, "idle_host_us": 1_500, "idle_other_us": 300}


def rank(r: int | None, path: str, host: str | None = None, **change: float) -> RankBreakdown:
    parts = {**BASE, **change}
    step = StepBreakdown(step=1, start_us=0, step_us=sum(parts.values()), **parts)
    return RankBreakdown(path=path, rank=r, host=host, steps=[step], median_step=step,
                         median_step_us=step.step_us)


def bars_of(path) -> dict[str, list[ET.Element]]:
    root = ET.parse(path).getroot()
    return {g.get("aria-label"): g.findall(f"{NS}rect") for g in root.iter(f"{NS}g")}


def test_one_stacked_bar_per_rank_and_run_in_part_order(tmp_path):
    hostile = "<node>&\x1b[2J"
    b = Breakdown(
        baseline=RunBreakdown(label="baseline", ranks=[rank(i, f"b/rank{i}.json", "n1")
                                                       for i in (1, 0)]),
        incident=RunBreakdown(label="incident", ranks=[
            rank(0, "i/rank0.json", "n1", idle_input_us=30_000),
            rank(1, "i/rank1.json", hostile, idle_input_us=30_000),
            rank(2, "i/rank2.json", "n2")]))
    bars = bars_of(draw_breakdown_bars(b, tmp_path / "bars.svg"))
    assert list(bars) == ["rank 0 · n1 · baseline", "rank 0 · n1 · incident",
                          "rank 1 · n1 · baseline", "rank 1 · <node>&[2J · incident",
                          "rank 2 · n2 · incident"]
    drawn = [p for p in PARTS if BASE[p] > 0]
    assert [r.get("fill") for r in bars["rank 0 · n1 · baseline"]] == \
        [PART_COLOURS[p] for p in drawn]
    incident = bars["rank 0 · n1 · incident"]
    assert [r.get("fill") for r in incident] == \
        [PART_COLOURS[p] for p in PARTS if p in drawn or p == "idle_input_us"]

    def width(rects):
        return sum(float(r.get("width")) for r in rects)

    # one ms axis: bar lengths are in the ratio of the step times
    ratio = sum(BASE.values()) / (sum(BASE.values()) + 30_000)
    assert width(bars["rank 0 · n1 · baseline"]) / width(incident) == pytest.approx(ratio,
                                                                                  rel=1e-3)
    # segments touch: each starts where the previous one ends
    xs = [(float(r.get("x")), float(r.get("width"))) for r in incident]
    assert all(abs(a[0] + a[1] - b[0]) < 0.02 for a, b in zip(xs, xs[1:], strict=False))


def test_one_trace_against_one_trace_is_a_pair_even_without_ranks():
    b = Breakdown(baseline=RunBreakdown(label="baseline", ranks=[rank(None, "good.json")]),
                  incident=RunBreakdown(label="incident", ranks=[rank(None, "slow.json")]))
    assert [[label for label, _ in g] for g in groups(b)] == [["baseline", "incident"]]


def test_incident_only_and_ranks_without_steps(tmp_path):
    b = Breakdown(incident=RunBreakdown(label="incident", ranks=[
        rank(3, "r3.json"), RankBreakdown(path="traces/odd.json")]))
    out = draw_breakdown_bars(b, tmp_path / "b.svg")
    bars = bars_of(out)
    assert list(bars) == ["rank 3 · incident"]
    texts = [t.text for t in ET.parse(out).getroot().iter(f"{NS}text")]
    assert "no steps" in texts and "Median step per rank, incident" in texts
