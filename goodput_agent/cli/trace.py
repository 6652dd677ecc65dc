"""`goodput trace`: one profiler trace's step breakdown, two runs compared, one step drawn.

Bad input (a missing file, not a trace, a trace cut before any GPU op) is one line on stderr
naming the file, exit 2, through the `cli` group's BadInput handling. In a directory of traces an
unreadable trace is skipped with a warning line; the command fails only when none is left.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from goodput_agent.analysis.slowdown.trace_select import load_one, pick_step
from goodput_agent.cli.options import json_option
from goodput_agent.cli.ray_option import ray_option, ray_runner
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import json_dumps, json_text, line, markup

if TYPE_CHECKING:  # imported where used: `goodput --help` stays quick
    from rich.console import Console
    from rich.table import Table

    from goodput_agent.analysis.slowdown.model import (
        Breakdown,
        RankBreakdown,
        SlowdownVerdict,
    )
    from goodput_agent.analysis.slowdown.rank_digest import TraceDigest
    from goodput_agent.core.parallel import Runner
    from goodput_agent.parsing.kineto.model import Trace

EXIT_NO_VERDICT = 3
_top = click.option("--top", default=10, show_default=True, type=click.IntRange(1, 1000),
                    help="Kernel families to list.")


def _warn(lines: list[str]) -> None:
    for text in lines:
        click.echo(f"goodput: warning: {line(text)}", err=True)


def load_run(path: Path) -> list[Trace]:
    """A trace file, or every Kineto trace under a directory (found by content, as in a
    bundle), named by their path under `path`'s own name."""
    if not path.is_dir():
        return [load_one(path)]
    from goodput_agent.parsing.kineto.load import load_traces

    found = _trace_jobs(path)
    return _kept(path, load_traces(found))


def _trace_jobs(path: Path) -> list[tuple[Path, str, str | None]]:
    """(file, name, node hint) of every Kineto trace under a directory, found by content."""
    from goodput_agent.bundle import scan

    found = scan(path).of_format("kineto_trace")
    if not found:
        raise BadInput(f"{path}: no Kineto trace in this directory (JSON with traceEvents, "
                       "plain or .gz)")
    return [(path / f.rel_path, str(path / f.rel_path), f.node_hint) for f in found]


def _kept(path: Path, loaded: list) -> list:
    """The traces (or digests) that loaded; a warning line for each that did not."""
    from goodput_agent.parsing.base import ParseError

    traces, skipped = [], []
    for t in loaded:
        if isinstance(t, ParseError | str):
            skipped.append(f"skipped: {str(t).splitlines()[0]}")
        else:
            traces.append(t)
    _warn(skipped)
    if not traces:
        raise BadInput(f"{path}: none of its {len(loaded)} traces could be loaded")
    return traces


def load_runs(paths: list[Path], runner: Runner | None) -> list[list]:
    """`load_run` of each path; with a runner (--ray), every rank of every path digested on
    the cluster in one go (progress counts them all), digests instead of whole traces."""
    if runner is None:
        return [load_run(p) for p in paths]
    from goodput_agent.analysis.slowdown.rank_digest import digest_traces

    jobs: list[list[tuple[Path, str, str | None]]] = []
    for p in paths:
        if p.is_dir():
            jobs.append(_trace_jobs(p))
        elif not p.exists():
            raise BadInput(f"{p}: no such file or directory")
        else:
            jobs.append([(p, str(p), None)])
    loaded = digest_traces(runner, [j for js in jobs for j in js])
    out, at = [], 0
    for p, js in zip(paths, jobs, strict=True):
        mine, at = loaded[at:at + len(js)], at + len(js)
        if not p.is_dir() and isinstance(mine[0], str):  # as load_one: the file's own line
            raise BadInput(mine[0].splitlines()[0] if mine[0] else f"{p}: not a trace")
        out.append(_kept(p, mine))
    return out


def _has_gpu(t: Trace | TraceDigest) -> bool:
    return bool(t.gpu) if hasattr(t, "gpu") else t.has_gpu  # type: ignore[union-attr]


def _need_gpu(traces: list, where: Path) -> list:
    with_gpu = [t for t in traces if _has_gpu(t)]
    if not with_gpu:
        which = "the trace" if len(traces) == 1 else "any trace"
        raise BadInput(f"{where}: no usable GPU kernels in {which} (CPU-only, or none with a "
                       "valid duration): no step breakdown")
    return with_gpu


def _ms(us: float) -> str:
    return f"{us / 1000:.1f}"


def _table(title: str) -> Table:
    from rich.table import Table

    return Table(title=title, padding=(0, 1), collapse_padding=True)


def _part_cols(t: Table) -> None:
    from goodput_agent.analysis.slowdown.model import PART_LABELS, PARTS

    for p in PARTS:
        t.add_column(PART_LABELS[p], justify="right")


def _who(rk: RankBreakdown) -> str:
    rank = f"rank {rk.rank}" if rk.rank is not None else "rank unknown"
    host = f"host {rk.host} ({rk.host_source})" if rk.host else "host unknown"
    return f"{rank} · {host}"


def _steps_table(rk: RankBreakdown) -> Table:
    from goodput_agent.analysis.slowdown.model import PARTS

    t = _table("Steps on the GPU timeline (ms; the seven parts sum to the step)")
    t.add_column("step", justify="right")
    t.add_column("at", justify="right")
    t.add_column("step ms", justify="right")
    _part_cols(t)
    t.add_column("ops", justify="right")
    first = rk.steps[0].start_us if rk.steps else 0.0
    median = rk.median_step.step if rk.median_step else None
    for s in rk.steps:
        t.add_row(str(s.step), _ms(s.start_us - first), _ms(s.step_us),
                  *(_ms(getattr(s, p)) for p in PARTS), str(s.kernels),
                  style="bold" if s.step == median else None)
    return t


def _families_table(rk: RankBreakdown, top: int) -> Table:
    steps = max(len(rk.steps), 1)
    t = _table(f"Kernel families (top {top} by GPU time)")
    for col in ("family", "kind", "calls", "total ms", "ms per step", "mean µs"):
        t.add_column(col, justify="left" if col in ("family", "kind") else "right",
                     no_wrap=col != "family")
    for f in rk.kernel_families[:top]:
        t.add_row(markup(f.family), f.kind, str(f.calls), _ms(f.total_us),
                  _ms(f.total_us / steps), f"{f.mean_us:.1f}")
    return t


@click.group("trace")
def trace() -> None:
    """PyTorch profiler (Kineto) traces: step breakdown, two runs compared, one step drawn."""


@trace.command("summary")
@click.argument("trace_file", metavar="TRACE", type=click.Path(path_type=Path))
@json_option
@_top
@ray_option
def summary(trace_file: Path, as_json: bool, top: int, ray_address: str | None) -> None:
    """The per-step breakdown of one trace and its heaviest kernel families."""
    from goodput_agent.analysis.slowdown.trace_steps import rank_breakdown

    runner = ray_runner(ray_address)
    if runner is not None and trace_file.is_dir():  # as load_one says it
        raise BadInput(f"{trace_file}: a directory, not a trace file")
    tr = _need_gpu(load_runs([trace_file], runner)[0], trace_file)[0]
    _warn(tr.warnings)
    rk = tr.breakdown if runner else rank_breakdown(tr)
    if as_json:
        click.echo(json_text(rk.model_dump_json(indent=2)))
        return

    from goodput_agent.cli.render import TerminalConsole

    console = TerminalConsole()
    median = f"median step {_ms(rk.median_step_us)} ms" if rk.steps else "no steps"
    console.print(f"[bold]{markup(rk.path)}[/] · {markup(_who(rk))} · {len(rk.steps)} steps · "
                  f"{median}")
    console.print(_steps_table(rk))
    console.print(_families_table(rk, top))


@trace.command("diff")
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("slow", type=click.Path(path_type=Path))
@json_option
@_top
@ray_option
def diff_cmd(base: Path, slow: Path, as_json: bool, top: int, ray_address: str | None) -> None:
    """What changed from BASE to SLOW (each a trace or a directory of one run's traces): the
    median step's parts per rank, kernel families per call, and the verdict. --json prints
    {"breakdown": <Breakdown>, "verdict": <SlowdownVerdict>}; exit 3 when there is no verdict."""

    from goodput_agent.analysis.slowdown.analyze import analyse
    from goodput_agent.analysis.slowdown.rank_digest import analyse_digests

    runner = ray_runner(ray_address)
    base_traces, slow_traces = load_runs([base, slow], runner)
    _warn([w for t in (*base_traces, *slow_traces) for w in t.warnings])
    _need_gpu(base_traces, base)
    _need_gpu(slow_traces, slow)
    verdict_of = analyse_digests if runner else analyse
    breakdown, verdict = verdict_of(slow_traces, baseline=base_traces)  # type: ignore
    if as_json:
        click.echo(json_dumps({"breakdown": breakdown.model_dump(mode="json"),
                               "verdict": verdict.model_dump(mode="json")}))
    else:
        from goodput_agent.cli.render import TerminalConsole

        _render_diff(breakdown, verdict, top, TerminalConsole())
    if verdict.category == "unknown":
        sys.exit(EXIT_NO_VERDICT)


def _render_diff(b: Breakdown, verdict: SlowdownVerdict, top: int, console: Console) -> None:
    from goodput_agent.analysis.slowdown.model import PARTS
    from goodput_agent.pictures.breakdown_bars import groups, rank_label

    t = _table("Median step per rank (ms): baseline, incident and the change")
    t.add_column("rank", no_wrap=True)
    t.add_column("run", no_wrap=True)
    t.add_column("step", justify="right", no_wrap=True)
    _part_cols(t)
    for group in groups(b):
        rows = {label: rk for label, rk in group}
        for label, rk in group:
            m = rk.median_step
            t.add_row(markup(rank_label(rk)), label, _ms(rk.median_step_us),
                      *(_ms(getattr(m, p)) if m else "—" for p in PARTS))
        old, new = rows.get("baseline"), rows.get("incident")
        if old and new and old.median_step and new.median_step:
            t.add_row("", "change", _delta(old.median_step_us, new.median_step_us),
                      *(_delta(getattr(old.median_step, p), getattr(new.median_step, p))
                        for p in PARTS), style="bold", end_section=True)
    console.print(t)
    if verdict.kernel_changes:
        k = _table("Kernel families per call (in both runs)")
        for col in ("family", "kind", "calls", "baseline µs", "incident µs", "ratio"):
            k.add_column(col, justify="left" if col in ("family", "kind") else "right",
                         no_wrap=col != "family")
        for c in verdict.kernel_changes[:top]:
            k.add_row(markup(c.family), c.kind, str(c.calls), f"{c.baseline_mean_us:.1f}",
                      f"{c.incident_mean_us:.1f}", f"×{c.ratio:.2f}")
        console.print(k)
    where = ", ".join(x for x in (f"rank {verdict.rank}" if verdict.rank is not None else "",
                                  f"node {verdict.node}" if verdict.node else "") if x)
    console.print(f"[bold]verdict: {verdict.category}[/] (confidence {verdict.confidence:.2f})"
                  + (f" · {markup(where)}" if where else "") + f" — {markup(verdict.summary)}")
    for u in verdict.unknowns:
        console.print(f"[dim]unknown: {markup(u)}[/]")


def _delta(old: float, new: float) -> str:
    d = (new - old) / 1000
    return f"{d:+.1f}" if abs(d) >= 0.05 else "0"


def _default_out(trace_file: Path, step: int) -> Path:
    name = trace_file.name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return Path(f"{name or 'trace'}.step{step}.svg")


@trace.command("timeline")
@click.argument("trace_file", metavar="TRACE", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="SVG file to write (default: <trace>.step<N>.svg here; a folder: in it).")
@click.option("--step", "step_number", type=int, default=None,
              help="Step number (default: the median step).")
@click.option("--json", "as_json", is_flag=True,
              help="Print what was drawn as JSON (the file, the step, its breakdown).")
def timeline(trace_file: Path, output: Path | None, step_number: int | None,
             as_json: bool) -> None:
    """Draw one step: CPU threads and GPU streams as rows on one clock, phases coloured."""
    from goodput_agent.pictures.trace_timeline import draw_step_timeline

    tr = load_one(trace_file)
    _warn(tr.warnings)
    step, breakdown = pick_step(tr, step_number)
    out = output or _default_out(trace_file, step.number)
    if out.is_dir():
        out = out / _default_out(trace_file, step.number)
    try:
        written = draw_step_timeline(tr, step, breakdown, out)
    except OSError as exc:
        raise BadInput(f"{out}: cannot write ({exc.strerror or exc})") from None
    if as_json:
        click.echo(json_dumps({"trace": str(trace_file), "svg": str(written.resolve()),
                               "step": step.number, "duration_ms": round(step.dur / 1000, 3),
                               "breakdown": breakdown.model_dump(mode="json")}))
        return
    click.echo(line(f"step {step.number} ({_ms(step.dur)} ms) drawn: {written.resolve()}"))
