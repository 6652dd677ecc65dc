"""A small SVG writer for Goodput's pictures: rectangles, lines, text, a linear axis with round
ticks and a legend. No dependency; every piece of text goes through `clean`, because names come
from untrusted traces and must not be able to end an element or the document."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

# what XML 1.0 cannot hold (C0 controls but tab/newline/CR are dropped too, they would only
# break a label), plus C1 controls and the non-characters U+FFFE/U+FFFF
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})
FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""


def strip_controls(text: object) -> str:
    """`text` without control characters: no escape sequence from a trace reaches a terminal,
    and nothing XML cannot hold reaches an SVG."""
    return _UNSAFE.sub("", str(text))


def clean(text: object, limit: int = 300) -> str:
    """`text` as safe SVG character data or attribute value: control characters dropped, markup
    characters escaped, cut to `limit` characters (before escaping, so no entity is cut)."""
    s = strip_controls(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s.translate(_ESCAPES)


def _num(v: float) -> str:
    """A coordinate, short: 2 decimals at most, no trailing zeros."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


@dataclass(slots=True)
class Svg:
    width: float
    height: float
    _parts: list[str] = field(default_factory=list)

    def rect(self, x: float, y: float, w: float, h: float, fill: str,
             title: str | None = None, stroke: str | None = None) -> None:
        attrs = (f'x="{_num(x)}" y="{_num(y)}" width="{_num(max(w, 0.0))}" '
                 f'height="{_num(max(h, 0.0))}" fill="{clean(fill)}"')
        if stroke:
            attrs += f' stroke="{clean(stroke)}" stroke-width="0.5"'
        if title is None:
            self._parts.append(f"<rect {attrs}/>")
        else:  # a <title> child is the hover text in browsers
            self._parts.append(f"<rect {attrs}><title>{clean(title)}</title></rect>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#888",
             width: float = 1.0, dash: str | None = None) -> None:
        extra = f' stroke-dasharray="{clean(dash)}"' if dash else ""
        self._parts.append(f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" '
                           f'y2="{_num(y2)}" stroke="{clean(stroke)}" '
                           f'stroke-width="{_num(width)}"{extra}/>')

    def polyline(self, points: list[tuple[float, float]], stroke: str, width: float = 1.5,
                 title: str | None = None) -> None:
        coords = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
        head = (f'<polyline points="{coords}" fill="none" stroke="{clean(stroke)}" '
                f'stroke-width="{_num(width)}" shape-rendering="geometricPrecision"')
        if title is None:
            self._parts.append(head + "/>")
        else:
            self._parts.append(f"{head}><title>{clean(title)}</title></polyline>")

    def text(self, x: float, y: float, s: object, size: float = 11, anchor: str = "start",
             bold: bool = False, fill: str = "#222", limit: int = 300) -> None:
        weight = ' font-weight="bold"' if bold else ""
        self._parts.append(f'<text x="{_num(x)}" y="{_num(y)}" font-size="{_num(size)}" '
                           f'text-anchor="{clean(anchor)}" fill="{clean(fill)}"{weight}>'
                           f"{clean(s, limit)}</text>")

    @contextmanager
    def group(self, label: str) -> Iterator[None]:
        """Elements drawn inside go into one `<g>` named by `label` (a row, a bar)."""
        self._parts.append(f'<g aria-label="{clean(label)}">')
        try:
            yield
        finally:
            self._parts.append("</g>")

    def render(self) -> str:
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(self.width)}" '
                f'height="{_num(self.height)}" viewBox="0 0 {_num(self.width)} '
                f'{_num(self.height)}" shape-rendering="crispEdges" {FONT}>')
        background = f'<rect width="{_num(self.width)}" height="{_num(self.height)}" fill="#fff"/>'
        return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', head, background,
                          *self._parts, "</svg>", ""])

    def write(self, out: Path) -> Path:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(self.render(), encoding="utf-8")
        return out


@dataclass(slots=True, frozen=True)
class Scale:
    """A linear map from data values [lo, hi] to pixels [x0, x1]."""

    lo: float
    hi: float
    x0: float
    x1: float

    def __call__(self, v: float) -> float:
        span = self.hi - self.lo
        if span <= 0:
            return self.x0
        return self.x0 + (v - self.lo) / span * (self.x1 - self.x0)

    @property
    def per_pixel(self) -> float:
        """Data units in one pixel."""
        px = self.x1 - self.x0
        return (self.hi - self.lo) / px if px > 0 else 0.0


def nice_ticks(lo: float, hi: float, target: int = 8) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi], about
    `target` of them."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / max(target, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def tick_label(v: float, step: float) -> str:
    """A tick value with as many decimals as the tick step needs."""
    decimals = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    return f"{v:.{decimals}f}"


def grid(svg: Svg, scale: Scale, y0: float, y1: float, target: int = 8) -> None:
    """Faint vertical lines at the axis ticks, from y0 to y1 (drawn first, under the data)."""
    for t in nice_ticks(scale.lo, scale.hi, target):
        svg.line(scale(t), y0, scale(t), y1, stroke="#e4e4e4", width=0.5)


def axis(svg: Svg, scale: Scale, y: float, label: str, target: int = 8) -> None:
    """A horizontal axis at `y` with round ticks and their values below it, and its label."""
    svg.line(scale.x0, y, scale.x1, y, stroke="#444")
    ticks = nice_ticks(scale.lo, scale.hi, target)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 0.0
    for t in ticks:
        x = scale(t)
        svg.line(x, y, x, y + 4, stroke="#444")
        svg.text(x, y + 15, tick_label(t, step), size=10, anchor="middle")
    svg.text((scale.x0 + scale.x1) / 2, y + 30, label, size=11, anchor="middle")


LEGEND_ROW = 16.0


def legend(svg: Svg, x: float, y: float, items: list[tuple[str, str]], width: float) -> float:
    """Colour swatches with labels, wrapped to `width`; returns the height used."""
    cx, cy = x, y
    for label, colour in items:
        w = 18 + 6.5 * len(label) + 14
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + LEGEND_ROW
        svg.rect(cx, cy, 12, 10, colour)
        svg.text(cx + 16, cy + 9, label, size=10, limit=60)
        cx += w
    return cy - y + LEGEND_ROW
