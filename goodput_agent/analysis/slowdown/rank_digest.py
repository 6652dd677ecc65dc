"""One rank's trace reduced, where it lies, to what the cross-rank analysis and the verdict read.

`digest_trace` runs where the trace is (a worker process or a Ray task): it loads the trace,
splits every step with no collective waits (`rank_breakdown`), and keeps per step only
- the communication ops that overlap it, in start order (the collectives the ranks are aligned
  by, and the longest collective the evidence names),
- the compute time inside those ops' windows (what hides a collective's wait),
- the exposed communication intervals (re-split into wait and transfer once the waits are
  known), and the longest memory op, DataLoader span and sync in the step (evidence).
That is a few hundred bytes per collective instead of every op of the trace.

On the driver, `DigestTimeline` answers exactly the step-window queries `trace_ranks` and
`slowdown` make of a `RankTimeline`, so `collective_waits` runs unchanged, and `with_waits`
re-splits each step's exposed communication as `trace_steps` does: the verdict is the one the
full traces give.
"""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from goodput_agent.analysis.intervals import Intervals, clip, intersect, subtract, total, union
from goodput_agent.core.parallel import Runner
from goodput_agent.parsing.base import ParseError
from goodput_agent.parsing.kineto.model import COMM, COMPUTE, CpuSpan, GpuOp, Step, TraceMeta
from goodput_agent.parsing.openmetrics import Series

from .kernel_families import family_of
from .model import PARTS, Breakdown, RankBreakdown, SlowdownVerdict
from .trace_steps import RankTimeline, rank_breakdown


@dataclass(slots=True)
class StepDigest:
    """One step, kept as flat arrays (a few bytes per collective, not an object each)."""

    step: Step
    comm_ts: array  # 'd': the communication ops overlapping the step, by start
    comm_dur: array  # 'd'
    comm_family: array  # 'H': index into TraceDigest.comm_names
    longest_comm: GpuOp | None  # the first longest of them, whole (the evidence names it)
    longest_other: GpuOp | None  # the longest memory op overlapping the step
    compute_in_comm: array  # 'd' pairs: compute (clipped to the step) in the comm ops' windows
    exposed_comm: array  # 'd' pairs: communication not under compute, clipped to the step
    longest_input: CpuSpan | None  # DataLoader __next__ span
    longest_sync: CpuSpan | None


@dataclass(slots=True)
class TraceDigest:
    meta: TraceMeta
    warnings: list[str] = field(default_factory=list)  # the trace's own (for the CLI)
    has_gpu: bool = False
    device: int | None = None
    ops_count: int = 0  # main-device GPU ops
    breakdown: RankBreakdown | None = None  # with no collective waits
    steps: list[StepDigest] = field(default_factory=list)
    # one kernel name per collective family (the first seen): family_of gives it back
    comm_names: list[str] = field(default_factory=list)


def _longest(items: list) -> object | None:
    return max(items, key=lambda x: x.dur) if items else None


def _pairs(spans: Intervals) -> array:
    return array("d", [x for span in spans for x in span])


def _spans(flat: array) -> Intervals:
    return list(zip(flat[::2], flat[1::2], strict=True))


def _step_digest(tl: RankTimeline, step: Step, families: dict[str, int],
                 names: list[str]) -> StepDigest:
    lo, hi = step.ts, step.end
    ops = tl.ops_in(lo, hi)
    compute = clip(union((o.ts, o.ts + o.dur) for o in ops if o.kind == COMPUTE), lo, hi)
    comm_all = clip(union((o.ts, o.ts + o.dur) for o in ops if o.kind == COMM), lo, hi)
    comm_ops = [o for o in ops if o.kind == COMM]
    windows = union((o.ts, o.ts + o.dur) for o in comm_ops if o.ts >= lo)
    fam_ids = array("H")
    for o in comm_ops:
        fam = family_of(o.name)
        if fam not in families:
            families[fam] = len(names)
            names.append(o.name)
        fam_ids.append(families[fam])
    return StepDigest(
        step=step, comm_ts=array("d", (o.ts for o in comm_ops)),
        comm_dur=array("d", (o.dur for o in comm_ops)), comm_family=fam_ids,
        longest_comm=_longest(comm_ops),  # type: ignore[arg-type]
        longest_other=_longest([o for o in ops if o.kind not in (COMPUTE, COMM)]),
        compute_in_comm=_pairs(intersect(compute, windows)),
        exposed_comm=_pairs(subtract(comm_all, compute)),
        longest_input=_longest(tl.dataloader.overlapping(lo, hi)),
        longest_sync=_longest(tl.syncs.overlapping(lo, hi)))


def digest_trace(path: str, rel_path: str | None = None,
                 node_hint: str | None = None) -> TraceDigest | str:
    """The rank's digest, or the one-line reason its trace cannot be loaded."""
    from goodput_agent.parsing.kineto.load import load_trace

    try:
        trace = load_trace(Path(path), rel_path, node_hint)
    except ParseError as exc:
        return str(exc)  # as the local load reports it
    out = TraceDigest(meta=trace.meta, warnings=list(trace.warnings), has_gpu=bool(trace.gpu))
    if not trace.gpu:
        return out
    tl = RankTimeline(trace)
    out.device, out.ops_count = tl.device, len(tl.ops)
    out.breakdown = rank_breakdown(tl)
    families: dict[str, int] = {}
    out.steps = [_step_digest(tl, s, families, out.comm_names) for s in tl.steps]
    return out


class _Longest:
    """`overlapping(lo, hi)` of a step's window: the longest item there, as a list."""

    def __init__(self, by_window: dict[tuple[float, float], object | None]):
        self.by_window = by_window

    def overlapping(self, lo: float, hi: float) -> list:
        found = self.by_window.get((lo, hi))
        return [found] if found is not None else []


@dataclass(slots=True)
class _TraceView:
    meta: TraceMeta


class DigestTimeline(RankTimeline):
    """What `collective_waits` and the verdict's evidence ask of a RankTimeline, from a digest:
    queries are only ever for a whole step's window (the rest of RankTimeline is not built)."""

    def __init__(self, d: TraceDigest):  # noqa: D107 - RankTimeline.__init__ needs the trace
        self.trace = _TraceView(d.meta)  # type: ignore[assignment] - only .meta is read
        self.device = d.device
        self.ops = range(d.ops_count)  # type: ignore[assignment] - only its size is read
        self.steps = [s.step for s in d.steps]
        self._names = d.comm_names
        self._by_window = {(s.step.ts, s.step.end): s for s in d.steps}
        windows = self._by_window.items()
        self.dataloader = _Longest({k: s.longest_input for k, s in windows})  # type: ignore
        self.syncs = _Longest({k: s.longest_sync for k, s in windows})  # type: ignore

    def ops_in(self, lo: float, hi: float) -> list[GpuOp]:
        s = self._by_window.get((lo, hi))
        if s is None:
            raise KeyError(f"{self.trace.meta.path}: no step spans {lo}..{hi} (a digest answers "
                           "only for whole steps)")
        device = self.device or 0
        # each collective named by its family's kernel (family_of gives the family back); the
        # first longest one whole, where it stands, for the evidence that quotes it
        comm = [GpuOp(ts=t, dur=d, kind=COMM, name=self._names[f], stream=-1, device=device)
                for t, d, f in zip(s.comm_ts, s.comm_dur, s.comm_family, strict=True)]
        if s.longest_comm is not None:
            first = next(i for i, o in enumerate(comm) if o.dur == s.longest_comm.dur)
            comm[first] = s.longest_comm
        # compute inside the collectives' windows stands in for all compute: only a
        # collective's wait is ever subtracted from it
        compute = [GpuOp(ts=a, dur=b - a, kind=COMPUTE, name="", stream=-1, device=device)
                   for a, b in _spans(s.compute_in_comm)]
        other = [s.longest_other] if s.longest_other is not None else []
        return [*comm, *other, *compute]


def _split(exposed: Intervals, wait_us: float) -> tuple[float, float]:
    """(comm_wait_us, comm_transfer_us) as trace_steps draws them: the waiting share at the
    start of each exposed interval."""
    whole = total(exposed)
    share = min(max(wait_us, 0.0), whole) / whole if whole > 0 else 0.0
    wait = transfer = 0.0
    for a, b in exposed:
        cut = a + (b - a) * share
        if cut > a:
            wait += cut - a
        if b > cut:
            transfer += b - cut
    return wait, transfer


def with_waits(d: TraceDigest, exposed_waits: dict[int, float]) -> RankBreakdown:
    """The rank's breakdown with each step's exposed communication split into waiting for the
    other ranks and transfer, as `rank_breakdown(tl, exposed_waits)` gives it."""
    assert d.breakdown is not None
    rb = d.breakdown.model_copy(deep=True)
    for sb, sd in zip(rb.steps, d.steps, strict=True):
        sb.comm_wait_us, sb.comm_transfer_us = _split(_spans(sd.exposed_comm),
                                                      exposed_waits.get(sd.step.number, 0.0))
    if rb.steps:
        ordered = sorted(rb.steps, key=lambda s: s.step_us)
        rb.median_step = ordered[(len(ordered) - 1) // 2]
        rb.median_step_us = statistics.median(s.step_us for s in rb.steps)
        rb.mean_parts = {p: statistics.fmean(getattr(s, p) for s in rb.steps) for p in PARTS}
    return rb


def _run_of(label: str, digests: list[TraceDigest]):  # noqa: ANN202 - slowdown.Run
    from .analyze import Run
    from .trace_ranks import collective_waits

    views = [DigestTimeline(d) for d in digests]
    waits = collective_waits(views)
    ranks = [with_waits(d, rw.exposed) for d, rw in zip(digests, waits.ranks, strict=True)]
    return Run.prepared(label, views, waits, ranks)


def analyse_digests(incident: list[TraceDigest], baseline: list[TraceDigest] | None = None,
                    series: list[Series] | None = None,
                    series_paths: Mapping[str, str] | None = None,
                    ) -> tuple[Breakdown, SlowdownVerdict]:
    """`slowdown.analyse` of the ranks' digests: the same breakdown and verdict."""
    from .analyze import analyse_runs

    gpu = [d for d in incident if d.has_gpu]
    base_gpu = [d for d in baseline or [] if d.has_gpu]
    inc = _run_of("incident", gpu)
    base = _run_of("baseline", base_gpu) if base_gpu else None
    gpu_less = [d.meta.path for d in [*incident, *(baseline or [])] if not d.has_gpu]
    return analyse_runs(inc, base, gpu_less, series, series_paths)


def digest_traces(runner: Runner, jobs: list[tuple[Path, str, str | None]],
                  here_only: bool = False) -> list[TraceDigest | str]:
    """`digest_trace` of each (path, name, node hint) through `runner`, in job order; each
    task goes to the host its folder or its profiler file name names, when the cluster has it."""
    from goodput_agent.parsing.kineto.meta import host_from_filename

    sizes = [p.stat().st_size if p.is_file() else 0 for p, _, _ in jobs]
    return runner.map_files(
        digest_trace, [(str(p.resolve()), name, hint) for p, name, hint in jobs],
        where=[hint or host_from_filename(name) for _, name, hint in jobs], sizes=sizes,
        here_only=here_only, label="ranks")
