"""Which run a trace belongs to: incident.yaml's folders or windows, folder names, else start
times of run folders far apart (the older the baseline, said as an assumption)."""

from datetime import UTC, datetime

from goodput_agent.analysis.slowdown.trace_runs import split_runs
from goodput_agent.core.incident import IncidentSpec
from goodput_agent.parsing.kineto.model import Trace, TraceMeta

JUL16 = datetime(2026, 7, 16, 9, 0, tzinfo=UTC).timestamp()
JUL18 = datetime(2026, 7, 18, 9, 0, tzinfo=UTC).timestamp()


def trace(path: str, at: float | None) -> Trace:
    """A hand-built trace: only its path and start time matter here."""
    return Trace(meta=TraceMeta(path=path, started_at=at,
                                started_from="file name" if at else None))


def paths(ts: list[Trace]) -> list[str]:
    return sorted(t.meta.path for t in ts)


RUNS = [trace("traces/run-0716/a.json", JUL16), trace("traces/run-0716/b.json", JUL16 + 2),
        trace("traces/run-0718/a.json", JUL18), trace("traces/run-0718/b.json", JUL18 + 1)]


def test_folders_named_in_incident_yaml() -> None:
    spec = IncidentSpec(baseline="traces/run-0716/", incident="./traces/run-0718")
    out = split_runs(RUNS, spec)
    assert paths(out.baseline) == ["traces/run-0716/a.json", "traces/run-0716/b.json"]
    assert paths(out.incident) == ["traces/run-0718/a.json", "traces/run-0718/b.json"]
    assert out.how == "incident.yaml folders" and out.assumptions == []


def test_one_folder_named_makes_the_rest_the_other_run() -> None:
    out = split_runs(RUNS, IncidentSpec(baseline="traces/run-0716"))
    assert len(out.baseline) == 2 and paths(out.incident)[0] == "traces/run-0718/a.json"


def test_windows_place_each_trace_by_its_own_time() -> None:
    spec = IncidentSpec.model_validate({
        "baseline": {"start": "2026-07-16T08:00:00Z", "end": "2026-07-16T10:00:00Z"},
        "incident": {"start": "2026-07-18T08:00:00Z", "end": "2026-07-18T10:00:00Z"}})
    mixed = [trace("all/x.json", JUL18), trace("all/y.json", JUL16), trace("all/z.json", None),
             trace("all/w.json", JUL18 + 86400)]
    out = split_runs(mixed, spec)
    assert paths(out.baseline) == ["all/y.json"] and paths(out.incident) == ["all/x.json"]
    said = " ".join(out.assumptions)
    assert "all/z.json: no start time" in said and "all/w.json: began 2026-07-19" in said


def test_naive_windows_take_the_bundle_time_zone() -> None:
    spec = IncidentSpec.model_validate({
        "timezone": "America/Chicago",  # 09:00 UTC is 04:00 in Chicago in July
        "baseline": {"start": "2026-07-16T03:30:00", "end": "2026-07-16T04:30:00"},
        "incident": {"start": "2026-07-18T03:30:00", "end": "2026-07-18T04:30:00"}})
    out = split_runs(RUNS, spec)
    assert len(out.baseline) == 2 and len(out.incident) == 2


def test_an_incident_window_alone_makes_earlier_traces_the_baseline() -> None:
    spec = IncidentSpec.model_validate(
        {"incident": {"start": "2026-07-18T08:00:00Z", "end": "2026-07-18T10:00:00Z"}})
    out = split_runs(RUNS, spec)
    assert paths(out.baseline) == ["traces/run-0716/a.json", "traces/run-0716/b.json"]


def test_unnamed_run_folders_hours_apart_are_two_runs_the_older_the_baseline() -> None:
    out = split_runs(list(reversed(RUNS)))
    assert paths(out.baseline) == ["traces/run-0716/a.json", "traces/run-0716/b.json"]
    assert paths(out.incident) == ["traces/run-0718/a.json", "traces/run-0718/b.json"]
    assert out.how == "start times"
    assert out.assumptions and out.assumptions[0].startswith("assumption:")
    assert "traces/run-0716/" in out.assumptions[0]


def test_per_node_folders_of_one_run_stay_one_run() -> None:
    one_run = [trace("nodes/a/t.json", JUL16), trace("nodes/b/t.json", JUL16 + 40)]
    out = split_runs(one_run)
    assert len(out.incident) == 2 and out.baseline == [] and out.assumptions == []


def test_a_baseline_folder_name_still_decides() -> None:
    named = [trace("traces/good/a.json", JUL18), trace("traces/now/a.json", JUL16)]
    out = split_runs(named)  # named, so not reordered by time
    assert paths(out.baseline) == ["traces/good/a.json"] and out.how == "folder names"


def test_a_third_older_run_is_set_aside_and_said() -> None:
    older = [trace("traces/run-0714/a.json", JUL16 - 2 * 86400), *RUNS]
    out = split_runs(older)
    assert len(out.baseline) == 2 and len(out.incident) == 2
    assert any("traces/run-0714/" in a and "not analysed" in a for a in out.assumptions)
