"""The latency question's pictures: the end-to-end percentiles over time with the baseline and
incident windows shaded and the change point marked, the engine's load on the same clock
(requests waiting, KV-cache usage), and each phase's percentiles per window
as bars (one bar pair per phase and quantile: the phases are not parts of a sum)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from goodput_agent.analysis.latency.model import LatencyResult
from goodput_agent.core.svg import Scale, Svg, axis, grid, legend, nice_ticks, tick_label

WIDTH = 1000.0
LEFT, RIGHT, TOP = 70.0, 20.0, 48.0
PLOT_H = 260.0
SERIES_COLOURS = {"p50": "#4c78a8", "p90": "#e45756", "p99": "#b279a2"}
WINDOW_FILLS = {"baseline": "#e3eef9", "incident": "#fde2e1"}
RUN_COLOURS = {"baseline": "#9ecae9", "incident": "#e45756"}
PHASES = ("queue", "prefill", "decode", "ttft", "e2e")
BAR_H, BAR_STEP, GROUP_GAP, LABEL_W = 11.0, 13.0, 9.0, 150.0


def _clock(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%H:%M")


def draw_latency_over_time(lat: LatencyResult, out: Path) -> Path | None:
    """p50/p90 of end-to-end latency over the searched span; None when there is no series."""
    return _over_time(lat, {k: lat.timeline.get(k, []) for k in ("p50", "p90")},
                      "End-to-end request latency over time",
                      f"histogram_quantile over the rate window; {lat.source}", "s", 1.0,
                      "e2e ", out)


# the engine's load beside its latency: requests queued, and how full the KV cache is
LOAD = {"waiting": ("Requests waiting over time", "requests", 1.0, "#f58518"),
        "kv_usage": ("KV-cache usage over time", "%", 100.0, "#54a24b")}


def draw_load_over_time(lat: LatencyResult, out: Path, key: str) -> Path | None:
    title, unit, scale, colour = LOAD[key]
    return _over_time(lat, {key: lat.timeline.get(key, [])}, title,
                      f"{lat.metrics.get(key) or key}; {lat.source}", unit, scale, "", out,
                      {key: colour})


def _over_time(lat: LatencyResult, points: dict[str, list], title: str, subtitle: str,
               unit: str, scale: float, prefix: str, out: Path,
               colours: dict[str, str] = SERIES_COLOURS) -> Path | None:
    """Series over the searched span with the two windows shaded and the change marked; the
    value axis has room above the highest point (a line at the top edge reads as cut)."""
    series = {k: [(p.t, p.v * scale) for p in pts] for k, pts in points.items() if pts}
    if not series:
        return None
    t0 = min(t for pts in series.values() for t, _ in pts)
    t1 = max(t for pts in series.values() for t, _ in pts)
    if lat.windows is not None:
        for w in (lat.windows.baseline, lat.windows.incident):
            t0, t1 = min(t0, w.start.timestamp()), max(t1, w.end.timestamp())
    minutes = Scale(0.0, max((t1 - t0) / 60, 1e-9), LEFT, WIDTH - RIGHT)
    top = max(v for pts in series.values() for _, v in pts) * 1.08
    yticks = nice_ticks(0.0, top or 1.0, 5)
    ymax = max(yticks[-1], top) if yticks else (top or 1.0)
    y0, y1 = TOP + PLOT_H, TOP  # the value axis runs upwards

    def y(v: float) -> float:
        return y0 - v / ymax * (y0 - y1)

    svg = Svg(WIDTH, TOP + PLOT_H + 70)
    svg.text(10, 20, title, size=13, bold=True)
    svg.text(10, 36, subtitle, size=11, limit=120)
    if lat.windows is not None:
        for label, w in (("baseline", lat.windows.baseline), ("incident", lat.windows.incident)):
            a, b = minutes((w.start.timestamp() - t0) / 60), minutes((w.end.timestamp() - t0) / 60)
            with svg.group(f"{label} window"):
                svg.rect(a, y1, b - a, y0 - y1, WINDOW_FILLS[label],
                         title=f"{label} {w.start:%H:%M}–{w.end:%H:%M} UTC")
                svg.text(a + 3, y1 + 12, label, size=10, fill="#555")
    grid(svg, minutes, y1, y0, 8)
    step = yticks[1] - yticks[0] if len(yticks) > 1 else 0.0
    for v in yticks:
        svg.line(LEFT - 4, y(v), WIDTH - RIGHT, y(v), stroke="#e4e4e4", width=0.5)
        svg.text(LEFT - 6, y(v) + 3, f"{tick_label(v, step)} {unit}", size=10, anchor="end")
    for key, pts in sorted(series.items()):
        with svg.group(f"{prefix}{key}"):
            svg.polyline([(minutes((t - t0) / 60), y(v)) for t, v in pts],
                         colours.get(key, "#444"), title=f"{prefix}{key}")
    if lat.windows is not None and lat.windows.change_at is not None:
        x = minutes((lat.windows.change_at.timestamp() - t0) / 60)
        with svg.group("change point"):
            svg.line(x, y1 - 4, x, y0, stroke="#222", width=1.2, dash="4 3")
            svg.text(x + 3, y1 - 6, f"change {lat.windows.change_at:%H:%M:%S} UTC", size=10)
    axis(svg, minutes, y0, f"minutes since {_clock(t0)} UTC", 8)
    legend(svg, LEFT, y0 + 40, [(f"{prefix}{k}", colours.get(k, "#444"))
                                for k in sorted(series)], WIDTH - LEFT - RIGHT)
    return svg.write(out)


def draw_phase_bars(lat: LatencyResult, out: Path) -> Path | None:
    """Per phase and quantile, the baseline bar above the incident bar, on one seconds axis."""
    if lat.baseline is None or lat.incident is None:
        return None
    rows: list[tuple[str, str, float | None]] = []
    for phase in PHASES:
        for q in ("p50", "p90"):
            for run in (lat.baseline, lat.incident):
                rows.append((f"{phase} {q}", run.label, getattr(getattr(run, phase), q)))
    values = [v for _, _, v in rows if v is not None]
    if not values:
        return None
    ticks = nice_ticks(0.0, max(values) or 1.0, 6)
    hi = max(ticks[-1], max(values)) if ticks else max(values)
    x0, x1 = LABEL_W, WIDTH - 80
    sec = Scale(0.0, hi or 1.0, x0, x1)
    groups = len(rows) // 2
    axis_y = TOP + groups * (2 * BAR_STEP + GROUP_GAP) + 4
    svg = Svg(WIDTH, axis_y + 64)
    svg.text(10, 20, "Latency phases per window (each on its own)", size=13, bold=True)
    svg.text(10, 36, "Not additive: each phase's percentile is over its own requests, so the "
             "phases' p90s do not sum to the end-to-end p90.", size=10)
    grid(svg, sec, TOP - 4, axis_y, 6)
    y = TOP
    for k in range(0, len(rows), 2):
        for name, run, v in rows[k:k + 2]:
            with svg.group(f"{name} {run}"):
                svg.text(x0 - 6, y + BAR_H - 2, f"{name} · {run}", size=10, anchor="end",
                         bold=run == "incident")
                if v is None:
                    svg.text(x0 + 4, y + BAR_H - 2, "no data", size=10, fill="#888")
                else:
                    svg.rect(x0, y, sec(v) - x0, BAR_H, RUN_COLOURS[run],
                             title=f"{name} {run}: {v:.3f} s")
                    svg.text(sec(v) + 4, y + BAR_H - 2, f"{v:.3g} s", size=10)
            y += BAR_STEP
        y += GROUP_GAP
    axis(svg, sec, axis_y, "seconds", 6)
    legend(svg, x0, axis_y + 38, [(r, c) for r, c in RUN_COLOURS.items()], WIDTH - x0)
    return svg.write(out)


def draw_latency_pictures(lat: dict | LatencyResult, out: Path) -> list[Path]:
    """Both pictures into the folder `out`; the files written."""
    result = lat if isinstance(lat, LatencyResult) else LatencyResult.model_validate(lat)
    written = [draw_latency_over_time(result, out / "latency-over-time.svg"),
               draw_load_over_time(result, out / "waiting-over-time.svg", "waiting"),
               draw_load_over_time(result, out / "kv-cache-over-time.svg", "kv_usage"),
               draw_phase_bars(result, out / "latency-phases.svg")]
    return [p for p in written if p is not None]
