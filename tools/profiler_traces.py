"""Profiler (Kineto) traces of the bundle: per rank and per run, each step's time split on one
clock, cross-rank collective waits, kernel families, and the slowdown verdict they support."""

from __future__ import annotations

from pydantic import BaseModel, Field

from goodput_agent.analysis.slowdown.model import Breakdown, SlowdownVerdict
from goodput_agent.analysis.slowdown.throttle import ThrottleFinding, throttle_findings
from goodput_agent.analysis.slowdown.trace_runs import (  # noqa: F401 - run_of, BASELINE_FOLDERS: re-exported
    BASELINE_FOLDERS,
    run_of,
    split_runs,
)
from goodput_agent.parsing.base import ParseError
from goodput_agent.parsing.kineto.model import Trace, TraceMeta
from goodput_agent.parsing.openmetrics import Series
from goodput_agent.toolkit import Tool, ToolContext, ToolUnavailable

# what throttling is judged from, when the bundle has DCGM metrics
DCGM_CLOCK_METRICS = frozenset({
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"})


class TracesInput(BaseModel):
    pass


class TracesOutput(BaseModel):
    traces: list[TraceMeta] = Field(default_factory=list)
    breakdown: Breakdown | None = None
    verdict: SlowdownVerdict | None = None
    problems: dict[str, str] = Field(default_factory=dict)  # file -> one-line reason
    # without traces of the incident: what the bundle's DCGM clocks say of each GPU (the
    # training log's slowdown is weighed against them: analysis/slowdown/log_clocks.py)
    clocks: list[ThrottleFinding] = Field(default_factory=list)
    # how the traces were told apart into runs, and what that assumed (one line each)
    runs_from: str | None = None
    assumptions: list[str] = Field(default_factory=list)

    def summary(self) -> dict[str, object]:
        return {"traces": len(self.traces), "problems": len(self.problems),
                "verdict": self.verdict.category if self.verdict else None}


def read_clock_series(ctx: ToolContext) -> tuple[list[Series], list[str]]:
    from goodput_agent.metrics.file_series import load_series
    from goodput_agent.parsing.registry import METRICS_FORMATS

    assert ctx.bundle is not None
    files = ctx.bundle.inventory.of_format(*METRICS_FORMATS)
    paths = [ctx.bundle.root / f.rel_path for f in files]
    series = load_series(paths, want=lambda name: name in DCGM_CLOCK_METRICS)
    return series, [f.rel_path for f in files]


def _clock_paths(files: list[str]) -> dict[str, str] | None:
    """Each clock metric's file, for the evidence: the file that names it (a collected bundle
    writes one per metric), else the only metrics file; None leaves the evidence at `metrics`."""
    paths = {n: f for n in DCGM_CLOCK_METRICS for f in files if n in f}
    if len(files) == 1:
        paths = dict.fromkeys(DCGM_CLOCK_METRICS, files[0])
    return paths or None


class ProfilerTracesTool(Tool[TracesInput, TracesOutput]):
    name = "profiler_traces"
    input_model = TracesInput
    output_model = TracesOutput
    timeout_s = 600.0

    def run(self, ctx: ToolContext, args: TracesInput) -> TracesOutput:
        from goodput_agent.analysis.slowdown.analyze import analyse
        from goodput_agent.analysis.slowdown.rank_digest import (
            TraceDigest,
            analyse_digests,
            digest_traces,
        )
        from goodput_agent.parsing.kineto.load import load_traces

        if ctx.bundle is None:
            raise ToolUnavailable("no incident bundle is open")
        out = TracesOutput()
        traces: list[Trace | TraceDigest] = []
        found = ctx.bundle.inventory.of_format("kineto_trace")
        jobs = [(ctx.bundle.root / f.rel_path, f.rel_path, f.node_hint) for f in found]
        runner = ctx.bundle.runner
        # on a cluster each rank is digested where it lies; here the whole traces are loaded
        loaded = digest_traces(runner, jobs, here_only=ctx.bundle.unpacked) if runner \
            else load_traces(jobs)
        for f, trace in zip(found, loaded, strict=True):
            if isinstance(trace, ParseError | str):
                out.problems[f.rel_path] = str(trace)
                ctx.bundle.mark_unread(f, str(trace))
                continue
            out.traces.append(trace.meta)
            for w in trace.warnings:
                out.problems.setdefault(f.rel_path, w)
            traces.append(trace)
        runs = split_runs(traces, ctx.bundle.inventory.incident)  # type: ignore[arg-type]
        out.runs_from, out.assumptions = runs.how, runs.assumptions
        series, files = read_clock_series(ctx)
        paths = _clock_paths(files)
        if not runs.incident:
            out.clocks = throttle_findings(series, paths)
            return out
        verdict_of = analyse_digests if runner else analyse
        out.breakdown, out.verdict = verdict_of(runs.incident, runs.baseline or None,
                                                series or None, paths)
        return out


TOOL = ProfilerTracesTool()
