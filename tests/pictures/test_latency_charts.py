import xml.etree.ElementTree as ET
from pathlib import Path

from goodput_agent.analysis.latency.analyze import analyse, resolve_service
from goodput_agent.metrics.file_source import FileMetricsSource
from goodput_agent.pictures.latency_charts import (
    draw_latency_over_time,
    draw_latency_pictures,
    draw_phase_bars,
)
from tests.conftest import REPO

NS = "{http://www.w3.org/2000/svg}"
CASE = REPO / "evals" / "latency_cases" / "l17-prompt-3x"


def _result(source_name: str | None = None):
    src = FileMetricsSource.from_files(sorted((CASE / "metrics").glob("*")), root=CASE)
    if source_name:
        src.name = source_name
    return analyse(src, resolve_service(src, None))


def _groups(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {g.get("aria-label"): g for g in root.iter(f"{NS}g")}


def test_percentiles_over_time_with_both_windows_and_the_change(tmp_path: Path) -> None:
    lat = _result()
    out = draw_latency_over_time(lat, tmp_path / "t.svg")
    assert out is not None
    groups = _groups(out)
    assert {"baseline window", "incident window", "change point", "e2e p50",
            "e2e p90"} <= set(groups)
    base = groups["baseline window"].find(f"{NS}rect")
    inc = groups["incident window"].find(f"{NS}rect")
    change = groups["change point"].find(f"{NS}line")
    assert base is not None and inc is not None and change is not None
    # the baseline is left of the change, the incident right of it
    assert float(base.get("x")) + float(base.get("width")) <= float(change.get("x1"))
    assert float(inc.get("x")) >= float(change.get("x1"))
    line = groups["e2e p90"].find(f"{NS}polyline")
    assert line is not None
    points = line.get("points").split()
    assert len(points) == len(lat.timeline["p90"])
    xs = [float(p.split(",")[0]) for p in points]
    assert xs == sorted(xs)


def test_phase_bars_carry_each_windows_numbers(tmp_path: Path) -> None:
    lat = _result()
    out = draw_phase_bars(lat, tmp_path / "p.svg")
    assert out is not None
    groups = _groups(out)
    for phase in ("queue", "prefill", "decode", "ttft", "e2e"):
        for run in (lat.baseline, lat.incident):
            v = getattr(run, phase).p90
            rect = groups[f"{phase} p90 {run.label}"].find(f"{NS}rect")
            assert rect is not None
            assert rect.find(f"{NS}title").text == f"{phase} p90 {run.label}: {v:.3f} s"
    # longer bar for the larger number (one axis)
    width = {k: float(g.find(f"{NS}rect").get("width")) for k, g in groups.items()
             if g.find(f"{NS}rect") is not None}
    assert (width["e2e p90 incident"] > width["e2e p90 baseline"]) == \
        (lat.incident.e2e.p90 > lat.baseline.e2e.p90)


def test_text_from_the_source_is_escaped(tmp_path: Path) -> None:
    lat = _result('prometheus http://x/"><script>alert(1)</script>')
    written = draw_latency_pictures(lat.model_dump(mode="json"), tmp_path)
    assert len(written) == 4  # latency, waiting, KV cache over time; the phases
    for path in written:
        text = path.read_text()
        assert "<script>" not in text
        ET.parse(path)  # still well-formed


def test_nothing_measured_draws_nothing(tmp_path: Path) -> None:
    lat = _result().model_copy(update={"timeline": {}, "baseline": None, "incident": None})
    assert draw_latency_pictures(lat, tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def test_the_highest_point_is_below_the_top_edge_and_the_load_is_drawn(tmp_path: Path) -> None:
    """The p90 line never runs along the plot's top edge (it read as cut), and the engine's
    load is drawn on the same clock: requests waiting and KV-cache usage (in %)."""
    from goodput_agent.pictures.latency_charts import TOP

    lat = _result()
    out = draw_latency_over_time(lat, tmp_path / "t.svg")
    assert out is not None
    ys = [float(p.split(",")[1]) for p in
          _groups(out)["e2e p90"].find(f"{NS}polyline").get("points").split()]
    assert min(ys) > TOP + 5
    pictures = {p.name: p for p in draw_latency_pictures(lat, tmp_path)}
    assert {"waiting-over-time.svg", "kv-cache-over-time.svg"} <= set(pictures)
    for name, key in (("waiting-over-time.svg", "waiting"), ("kv-cache-over-time.svg",
                                                              "kv_usage")):
        line = _groups(pictures[name])[key].find(f"{NS}polyline")
        assert line is not None and len(line.get("points").split()) == len(lat.timeline[key])
    kv = ET.parse(pictures["kv-cache-over-time.svg"]).getroot()
    assert any((t.text or "").endswith(" %") for t in kv.iter(f"{NS}text"))
