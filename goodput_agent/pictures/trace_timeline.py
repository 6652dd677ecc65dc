"""One training step drawn on one clock: a row per CPU thread activity (ProfilerStep span,
annotations, dataloader waits, runtime calls, syncs), a row per GPU stream (ops coloured by
kind), and a row of the GPU's phases: trace_steps.step_parts, the intervals the step's
breakdown adds up (busy time by kind, idle gaps by cause).

A step can hold 100k ops; within a row, ops that touch within a pixel are merged into one
rectangle coloured by the kind that fills most of it, so the file stays small (at most about two
rectangles per pixel column per row) and every op still shows (rectangles are at least 1 px).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

from goodput_agent.analysis.slowdown.model import PART_LABELS, PARTS, StepBreakdown
from goodput_agent.analysis.slowdown.trace_steps import (
    RankTimeline,
    is_dataloader,
    is_sync,
    step_parts,
)
from goodput_agent.core.svg import Scale, Svg, axis, grid, legend
from goodput_agent.parsing.kineto.model import MEMSET, CpuSpan, GpuOp, Step, Trace
from goodput_agent.pictures import KIND_COLOURS, PART_COLOURS

WIDTH = 1200.0
LABEL_W = 200.0
RIGHT = 20.0
ROW_H = 14.0
ROW_STEP = 18.0
TOP = 62.0
MIN_PX = 1.0

CPU_COLOURS = {
    "step": "#d6d6d6",
    "annotation": "#c6c6e6",
    "dataloader": PART_COLOURS["idle_input_us"],
    "runtime": "#9d755d",
    "sync": "#7a3b69",
}
CPU_LABELS = {"step": "ProfilerStep", "annotation": "annotations", "dataloader": "dataloader",
              "runtime": "runtime calls", "sync": "syncs"}
# GPU kinds share their colour with the breakdown part they fall into, and the dataloader its
# colour with idle-for-input: each colour is listed once
LEGEND = [
    *((PART_LABELS[p], PART_COLOURS[p]) for p in PARTS),
    (MEMSET, KIND_COLOURS[MEMSET]),
    *((f"CPU {CPU_LABELS[k]}", CPU_COLOURS[k]) for k in ("step", "annotation", "runtime", "sync")),
]


@dataclass(slots=True)
class Box:
    """One drawn rectangle: a single op, or ops merged because they touch within a pixel."""

    x0: float
    x1: float
    start: float  # µs, trace clock
    count: int
    name: str  # the longest op's name
    longest: float
    busy: float  # µs of ops in it
    weights: dict[str, float] = field(default_factory=dict)  # colour -> µs

    @property
    def colour(self) -> str:
        return max(self.weights.items(), key=lambda kv: kv[1])[0]


Span = tuple[float, float, str, str]  # start µs, end µs, colour, name


def merge_spans(spans: Iterable[Span], scale: Scale) -> list[Box]:
    """Rectangles for one row's spans (sorted by start). A span that starts within a pixel of
    the current rectangle's end joins it while that rectangle is narrower than a pixel, or when
    both have one and the same colour; so every rectangle but the last of a run is at least a
    pixel wide, and a row holds at most about two per pixel column."""
    boxes: list[Box] = []
    cur: Box | None = None
    for start, end, colour, name in spans:
        x0, x1 = scale(start), scale(end)
        dur = end - start
        if cur is not None and x0 - cur.x1 < MIN_PX and (
                cur.x1 - cur.x0 < MIN_PX or len(cur.weights) == 1 and colour in cur.weights):
            cur.x1 = max(cur.x1, x1)
            cur.count += 1
            cur.busy += dur
            cur.weights[colour] = cur.weights.get(colour, 0.0) + dur
            if dur > cur.longest:
                cur.name, cur.longest = name, dur
            continue
        cur = Box(x0, x1, start, 1, name, dur, dur, {colour: dur})
        boxes.append(cur)
    return boxes


@dataclass(slots=True)
class Row:
    label: str
    spans: list[Span]


def _window(items: Sequence[GpuOp] | Sequence[CpuSpan], step: Step) -> list:
    """The items (sorted by start) overlapping the step; those that began more than a step's
    length before it are not looked for."""
    lo = bisect_left(items, step.ts - step.dur, key=attrgetter("ts"))
    hi = bisect_left(items, step.end, key=attrgetter("ts"))
    return [it for it in items[lo:hi] if it.ts + it.dur > step.ts or it.ts >= step.ts]


def _clipped(start: float, end: float, step: Step) -> tuple[float, float]:
    return max(start, step.ts), min(end, step.end)


def _cpu_class(span: CpuSpan) -> str:
    """By the breakdown's own tests, so that a dataloader span drawn is one it counted."""
    if span.name.startswith("ProfilerStep#"):
        return "step"
    if is_dataloader(span):
        return "dataloader"
    if is_sync(span):
        return "sync"
    if span.cat in ("cuda_runtime", "cuda_driver"):
        return "runtime"
    return "annotation"


def cpu_rows(trace: Trace, step: Step) -> list[Row]:
    """Per thread (the one holding the ProfilerStep first), one row per kind of activity."""
    by_tid: dict[int, dict[str, list[Span]]] = {}
    for span in _window(trace.annotations, step) + _window(trace.runtime, step):
        cls = _cpu_class(span)
        s, e = _clipped(span.ts, span.end, step)
        by_tid.setdefault(span.tid, {}).setdefault(cls, []).append(
            (s, e, CPU_COLOURS[cls], span.name))
    order = sorted(by_tid, key=lambda t: ("step" not in by_tid[t], t))
    rows = []
    for tid in order:
        for cls in CPU_LABELS:
            spans = by_tid[tid].get(cls)
            if spans:
                spans.sort()
                rows.append(Row(f"CPU {tid} · {CPU_LABELS[cls]}", spans))
    return rows


def gpu_rows(ops: list[GpuOp], step: Step) -> list[Row]:
    by_stream: dict[tuple[int, int], list[Span]] = {}
    for op in ops:
        s, e = _clipped(op.ts, op.end, step)
        by_stream.setdefault((op.device, op.stream), []).append(
            (s, e, KIND_COLOURS[op.kind], op.name))
    return [Row(f"GPU {dev} · stream {stream}", by_stream[(dev, stream)])
            for dev, stream in sorted(by_stream)]


def _title(trace: Trace, step: Step) -> str:
    who = ", ".join(x for x in (
        f"rank {trace.meta.rank}" if trace.meta.rank is not None else "",
        f"host {trace.meta.host}" if trace.meta.host else "") if x)
    return f"{trace.meta.path}" + (f" · {who}" if who else "") + f" · step {step.number}"


def _subtitle(step: Step, breakdown: StepBreakdown | None, ops: int) -> str:
    head = f"{step.dur / 1000:.3f} ms ({step.source}), {ops} GPU ops"
    if breakdown is None:
        return head
    parts = " · ".join(f"{PART_LABELS[p]} {getattr(breakdown, p) / 1000:.2f}" for p in PARTS)
    return f"{head} · ms: {parts}"


def draw_step_timeline(trace: Trace, step: Step, breakdown: StepBreakdown | None,
                       out: Path) -> Path:
    """Write the SVG of `step` to `out` (parent folders made); returns `out`."""
    ops = _window(trace.gpu, step)
    phase_label = "GPU phases"
    wait = breakdown.comm_wait_us if breakdown is not None else 0.0
    phases = sorted(step_parts(RankTimeline(trace), step, wait))
    rows = [*cpu_rows(trace, step), *gpu_rows(ops, step),
            Row(phase_label, [(s, e, PART_COLOURS[p], PART_LABELS[p]) for s, e, p in phases])]
    x0, x1 = LABEL_W, WIDTH - RIGHT
    scale = Scale(step.ts, step.end, x0, x1)
    axis_y = TOP + ROW_STEP * len(rows) + 4
    legend_h = legend(Svg(WIDTH, 0), 10, 0, LEGEND, WIDTH - 20)
    svg = Svg(WIDTH, axis_y + 44 + legend_h + 8)
    svg.text(10, 20, _title(trace, step), size=13, bold=True, limit=180)
    svg.text(10, 38, _subtitle(step, breakdown, len(ops)), size=11, limit=220)
    ms = Scale(0.0, step.dur / 1000, x0, x1)
    for i in range(0, len(rows), 2):
        svg.rect(x0, TOP + ROW_STEP * i - 2, x1 - x0, ROW_STEP, "#f6f6f6")
    grid(svg, ms, TOP - 4, axis_y)
    for i, row in enumerate(rows):
        y = TOP + ROW_STEP * i
        if row.label == phase_label:
            svg.line(0, y - 3, WIDTH, y - 3, stroke="#999", width=0.5)
        svg.text(x0 - 6, y + ROW_H - 3, row.label, size=10, anchor="end", limit=40)
        with svg.group(row.label):
            for box in merge_spans(row.spans, scale):
                w = max(box.x1 - box.x0, MIN_PX)
                svg.rect(box.x0, y, w, ROW_H, box.colour, title=_box_title(box, step))
    axis(svg, ms, axis_y, f"ms since the start of step {step.number}")
    legend(svg, 10, axis_y + 44, LEGEND, WIDTH - 20)
    return svg.write(out)


def _box_title(box: Box, step: Step) -> str:
    at = f"at {(box.start - step.ts) / 1000:.3f} ms"
    if box.count == 1:
        return f"{box.name} · {box.busy / 1000:.3f} ms {at}"
    return f"{box.count} ops, {box.busy / 1000:.3f} ms busy {at}; longest: {box.name}"

