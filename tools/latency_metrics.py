"""An LLM service's latency metrics (vLLM names, old and new): a baseline window against the
incident window, from a live Prometheus (PromQL pushed down) or from the bundle's metric files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from goodput_agent.analysis.latency.model import LatencyResult
from goodput_agent.metrics.source import MetricsSource, MetricsUnavailable, TimeWindow
from goodput_agent.parsing.registry import METRICS_FORMATS, SERVING_LOG_FORMATS
from goodput_agent.toolkit import Tool, ToolContext, ToolUnavailable

if TYPE_CHECKING:
    from goodput_agent.analysis.latency.bench_compare import BenchResult


class LatencyInput(BaseModel):
    service: str | None = None  # model_name (or service/job label); None: the only one there
    baseline: TimeWindow | None = None  # None: chosen from the change point
    incident: TimeWindow | None = None
    search: TimeWindow | None = None  # where to look for the change (default: all the data)


def bundle_source(ctx: ToolContext) -> tuple[MetricsSource, list]:
    from goodput_agent.metrics.engine_args import load_engine_args
    from goodput_agent.metrics.file_source import FileMetricsSource
    if ctx.bundle is None:
        raise ToolUnavailable("no Prometheus given and no incident bundle open")
    root = ctx.bundle.root
    files = ctx.bundle.inventory.of_format(*METRICS_FORMATS)
    source = FileMetricsSource.from_files([root / f.rel_path for f in files], root=root)
    revisions = []
    for rel in _config_files(ctx):
        revisions.extend(load_engine_args(root / rel, rel))
    return source, revisions


def _config_files(ctx: ToolContext) -> list[str]:
    """Engine-argument files, wherever they are in the bundle (identified by content)."""
    assert ctx.bundle is not None
    return sorted(f.rel_path for f in ctx.bundle.inventory.of_format("engine_config"))


def engine_logs_only(ctx: ToolContext) -> list[str]:
    """The engine's own logs, when the bundle has no latency histograms to measure with."""
    from goodput_agent.kinds import has_serving_metrics

    if ctx.bundle is None:
        return []
    inv = ctx.bundle.inventory
    logs = sorted(f.rel_path for f in inv.of_format(*SERVING_LOG_FORMATS))
    if logs and any(has_serving_metrics(ctx.bundle.root / f.rel_path)
                    for f in inv.of_format(*METRICS_FORMATS)):
        return []
    return logs


def lone_benchmark(ctx: ToolContext) -> bool:
    """The bundle, every file of it read, holds one benchmark result and no other serving
    record: one window of latency, nothing to compare it with."""
    if ctx.bundle is None or ctx.bundle.inventory.unread:
        return False
    inv = ctx.bundle.inventory
    serving = inv.of_format(*SERVING_LOG_FORMATS)
    if not serving or any(f.format != "bench_summary" for f in serving):
        return False
    results = [ctx.bundle.parse(f) for f in serving]
    return sum((r.facts.get("benchmark_results", 1) if r else 2) for r in results) == 1


def benchmark_results(ctx: ToolContext) -> list[BenchResult] | None:
    """The bundle's benchmark results, one per file, when its serving records are only
    those (no engine log or metrics to weigh beside them), else None."""
    from goodput_agent.analysis.latency.bench_compare import BenchResult

    if ctx.bundle is None:
        return None
    serving = ctx.bundle.inventory.of_format(*SERVING_LOG_FORMATS)
    if not serving or any(f.format != "bench_summary" for f in serving):
        return None
    out = []
    for f in serving:
        r = ctx.bundle.parse(f)
        if r is None or r.facts.get("benchmark_results") != 1:
            return None
        out.append(BenchResult(path=f.rel_path, values=r.facts.get("benchmark") or {},
                               lines=r.facts.get("benchmark_lines") or {}))
    return out


class LatencyMetricsTool(Tool[LatencyInput, LatencyResult]):
    name = "latency_metrics"
    input_model = LatencyInput
    output_model = LatencyResult
    timeout_s = 300.0

    def run(self, ctx: ToolContext, args: LatencyInput) -> LatencyResult:
        from goodput_agent.analysis.latency.analyze import analyse, resolve_service, source_failed

        if ctx.metrics is None and (logs := engine_logs_only(ctx)):
            from goodput_agent.analysis.latency.bench_compare import compare_benchmarks
            from goodput_agent.analysis.latency.engine_log import analyse_engine_log
            from goodput_agent.toolkit import read_events

            if compared := compare_benchmarks(benchmark_results(ctx) or []):
                return compared

            return analyse_engine_log(read_events(ctx, SERVING_LOG_FORMATS).events, logs,
                                      lone_benchmark=lone_benchmark(ctx),
                                      unread_files=len(ctx.bundle.inventory.unread))
        if ctx.metrics is not None:
            source, revisions = ctx.metrics, []
            if ctx.bundle is not None:
                revisions = bundle_source(ctx)[1]
        else:
            source, revisions = bundle_source(ctx)
        try:
            labels = resolve_service(source, args.service)
        except MetricsUnavailable as exc:
            return source_failed(source, f"the service's series ({args.service or 'any'})",
                                 str(exc))
        return analyse(source, labels, args.baseline, args.incident, search=args.search,
                       revisions=revisions)


TOOL = LatencyMetricsTool()
