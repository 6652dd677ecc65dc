"""Which run each profiler trace belongs to: the good (baseline) run or the incident run.

In this order: the runs `incident.yaml` names (folders, or time windows each trace is placed in
by its own start time); folder names that say baseline; else, with no baseline named anywhere,
run folders whose traces began far apart in time are separate runs, the older the baseline
(an assumption the report states).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from zoneinfo import ZoneInfo

from goodput_agent.core.incident import IncidentSpec, Window
from goodput_agent.parsing.kineto.model import Trace

BASELINE_FOLDERS = frozenset({"baseline", "base", "good", "control", "before"})
# the ranks of one run start their profilers within seconds; two runs of a job, hours apart
RUN_GAP_S = 30 * 60
RUNS = ("baseline", "incident")


@dataclass
class RunSplit:
    baseline: list[Trace] = field(default_factory=list)
    incident: list[Trace] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)  # one line each, for the report
    how: str = "folder names"


def run_of(rel_path: str) -> str:
    """`baseline` when a folder on the path says so, else `incident`."""
    folders = PurePosixPath(rel_path).parts[:-1]
    return "baseline" if any(p.lower() in BASELINE_FOLDERS for p in folders) else "incident"


def _folder(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/")).parent.as_posix()


def _under(path: str, folder: str) -> bool:
    f = PurePosixPath(folder.replace("\\", "/").strip().strip("/")).as_posix()
    return f in ("", ".") or path == f or path.startswith(f + "/")


def _epoch(t: datetime, zone: str | None) -> float:
    if t.tzinfo is None:
        t = t.replace(tzinfo=ZoneInfo(zone) if zone and zone.upper() != "UTC" else UTC)
    return t.timestamp()


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def split_runs(traces: Sequence[Trace], spec: IncidentSpec | None = None) -> RunSplit:
    spec = spec or IncidentSpec()
    given = {r: getattr(spec, r) for r in RUNS if getattr(spec, r) is not None}
    if any(isinstance(v, str) for v in given.values()):
        out = _by_paths(traces, {r: v for r, v in given.items() if isinstance(v, str)})
    elif given:
        out = _by_windows(traces, given, spec.timezone)  # type: ignore[arg-type]
    else:
        out = RunSplit()
        for t in traces:
            getattr(out, run_of(t.meta.path)).append(t)
        if not out.baseline:
            out = _by_time(traces) or out
    if not out.incident and out.baseline:  # a lone run is the one asked about
        out.incident, out.baseline = out.baseline, []
    return out


def _by_paths(traces: Sequence[Trace], given: dict[str, str]) -> RunSplit:
    out = RunSplit(how="incident.yaml folders")
    for t in traces:
        run = next((r for r, f in given.items() if _under(t.meta.path, f)), None)
        if run is None and len(given) == 1:  # the one not named is the other run
            run = "incident" if "baseline" in given else "baseline"
        if run is None:
            out.assumptions.append(f"{t.meta.path}: under neither run folder of incident.yaml, "
                                   "not analysed")
            continue
        getattr(out, run).append(t)
    for run, folder in given.items():
        if not getattr(out, run):
            out.assumptions.append(f"incident.yaml's {run} folder {folder!r} holds no trace")
    return out


def _by_windows(traces: Sequence[Trace], given: dict[str, Window], zone: str | None
                ) -> RunSplit:
    out = RunSplit(how="incident.yaml windows")
    spans = {r: (_epoch(w.start, zone), _epoch(w.end, zone)) for r, w in given.items()}
    for t in traces:
        at = t.meta.started_at
        if at is None:
            out.assumptions.append(f"{t.meta.path}: no start time (no baseTimeNanoseconds, "
                                   "event time or profiler file name): not placed in a run")
            continue
        run = next((r for r, (a, b) in spans.items() if a <= at <= b), None)
        if run is None and len(given) == 1:
            run = _other_side(given, spans, at)
        if run is None:
            out.assumptions.append(f"{t.meta.path}: began {_iso(at)}, outside the windows of "
                                   "incident.yaml: not analysed")
            continue
        getattr(out, run).append(t)
    return out


def _other_side(given: dict[str, Window], spans: dict[str, tuple[float, float]], at: float
                ) -> str | None:
    """With one window given, the other run is on its own side of it: a baseline before the
    incident window, an incident after the baseline window."""
    if "incident" in given:
        return "baseline" if at < spans["incident"][0] else None
    return "incident" if at > spans["baseline"][1] else None


def _by_time(traces: Sequence[Trace]) -> RunSplit | None:
    """Run folders, grouped while their traces began within RUN_GAP_S of each other; two or
    more groups are runs: the newest the incident, the one before it the baseline."""
    folders: dict[str, list[Trace]] = {}
    for t in traces:
        if t.meta.started_at is None:
            return None  # a trace that cannot be placed: no split on time at all
        folders.setdefault(_folder(t.meta.path), []).append(t)
    if len(folders) < 2:
        return None
    spans = sorted(((min(t.meta.started_at for t in ts), max(t.meta.started_at for t in ts), f)
                    for f, ts in folders.items()), key=lambda s: s[0])  # type: ignore[type-var]
    groups: list[list[tuple[float, float, str]]] = [[spans[0]]]
    for span in spans[1:]:
        if span[0] - max(s[1] for s in groups[-1]) >= RUN_GAP_S:
            groups.append([span])
        else:
            groups[-1].append(span)
    if len(groups) < 2:
        return None
    base, inc = groups[-2], groups[-1]
    out = RunSplit(how="start times",
                   baseline=[t for s in base for t in folders[s[2]]],
                   incident=[t for s in inc for t in folders[s[2]]])
    names = lambda g: ", ".join(f"{s[2]}/" for s in g)  # noqa: E731
    out.assumptions.append(
        f"assumption: no baseline named (no baseline/ folder, no baseline in incident.yaml); "
        f"the traces in {names(base)} (began {_iso(base[0][0])}) are taken as the baseline run "
        f"and those in {names(inc)} (began {_iso(inc[0][0])}) as the incident run, the older "
        "being the good one")
    for g in groups[:-2]:
        out.assumptions.append(f"older traces in {names(g)} (began {_iso(g[0][0])}) "
                               "not analysed: a third run")
    return out
