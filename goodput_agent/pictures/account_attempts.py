"""A job's attempts on one clock: one row per attempt, its queue wait hatched before it, each
segment coloured by what it was. A productive stretch split by an input-stall share is drawn as
two bands, their heights in proportion to the shares."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from goodput_agent.accounting.model import Attempt, JobAccount, Segment
from goodput_agent.core.svg import Scale, Svg, axis, grid, legend

WIDTH = 1000.0
LABEL_W = 200.0
RIGHT = 20.0
ROW_H = 22.0
ROW_STEP = 34.0
TOP = 40.0

SEGMENT_COLOURS = {
    "queue_wait": "#d9d9d9",
    "startup": "#9ecae9",
    "productive": "#54a24b",
    "input_stall": "#eeca3b",
    "checkpointing": "#4c78a8",
    "lost_progress": "#f58518",
    "failure": "#e45756",
    "unobserved": "#bab0ac",
}
LABELS = {"queue_wait": "queue wait", "startup": "start-up / restart",
          "productive": "productive", "input_stall": "input stall",
          "checkpointing": "checkpointing", "lost_progress": "lost progress",
          "failure": "failure (until the run ended)", "unobserved": "unobserved"}


def _minutes(t: datetime, t0: datetime) -> float:
    return (t - t0).total_seconds() / 60.0


def _title(s: Segment) -> str:
    share = f", {s.share:.0%} of its GPU-time" if s.share < 1.0 else ""
    why = f" — owed to {s.failure}" if s.failure else ""
    where = f" ({s.evidence})" if s.evidence else ""
    return (f"{LABELS.get(s.kind, s.kind)}: {s.seconds:.0f} s x {s.gpus} GPUs = "
            f"{s.gpu_hours:.2f} GPU-h{share}{why}{where}")


def _row(svg: Svg, scale: Scale, a: Attempt, t0: datetime, y: float) -> None:
    label = f"#{a.index} {a.state}" + (f" · {a.failure.category}" if a.failure else "")
    svg.text(LABEL_W - 8, y + ROW_H / 2 + 4, label, size=11, anchor="end", limit=40)
    if a.submit is not None and a.submit < a.start:
        x0, x1 = scale(_minutes(a.submit, t0)), scale(_minutes(a.start, t0))
        svg.rect(x0, y + ROW_H * 0.35, x1 - x0, ROW_H * 0.3, SEGMENT_COLOURS["queue_wait"],
                 title=f"queue wait: {a.queue_wait_s:.0f} s")
    stacked: dict[tuple[datetime, datetime], float] = {}  # interval -> height used
    for s in a.segments:
        x0, x1 = scale(_minutes(s.start, t0)), scale(_minutes(s.end, t0))
        h = ROW_H * s.share
        used = stacked.get((s.start, s.end), 0.0)
        stacked[(s.start, s.end)] = used + h
        svg.rect(x0, y + used, max(x1 - x0, 0.5), h, SEGMENT_COLOURS.get(s.kind, "#999"),
                 title=_title(s))


def draw_account(account: JobAccount, out: Path) -> Path:
    """Write the SVG to `out` (parent folders made); returns `out`."""
    attempts = account.attempts
    if attempts:
        t0 = min(a.submit or a.start for a in attempts)
        t1 = max(a.end for a in attempts)
    else:
        t0 = t1 = datetime.now()
    span = max(_minutes(t1, t0), 1e-3)
    rows_h = ROW_STEP * max(len(attempts), 1)
    height = TOP + rows_h + 60 + 40
    svg = Svg(WIDTH, height)
    svg.text(10, 20, f"{account.target}: goodput {account.goodput_fraction:.1%}, effective "
                     f"training time ratio {account.effective_training_time_ratio:.1%}",
             size=13, bold=True, limit=160)
    scale = Scale(0.0, span, LABEL_W, WIDTH - RIGHT)
    grid(svg, scale, TOP - 4, TOP + rows_h)
    for i, a in enumerate(attempts):
        with svg.group(f"attempt {a.index}"):
            _row(svg, scale, a, t0, TOP + i * ROW_STEP)
    axis(svg, scale, TOP + rows_h + 4, f"minutes since {t0:%Y-%m-%d %H:%M:%S %Z}")
    legend(svg, LABEL_W, TOP + rows_h + 48, [(LABELS[k], c) for k, c in
                                             SEGMENT_COLOURS.items()], WIDTH - LABEL_W - RIGHT)
    return svg.write(out)
