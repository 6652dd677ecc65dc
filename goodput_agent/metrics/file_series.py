"""Metric series read from bundle files: OpenMetrics / Prometheus text with timestamps
(seconds; milliseconds above 1e11) or Prometheus HTTP API responses (`query_range` matrix
or `query` vector), optionally gzipped, both read as streams.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import ijson

from goodput_agent.parsing.base import ParseError
from goodput_agent.parsing.lines import (
    CHUNK_BYTES,
    MAX_LINE_CHARS,
    _open,
    _without_bom,
    read_head,
)
from goodput_agent.parsing.openmetrics import _SAMPLE, Series, _labels

_MS_THRESHOLD = 1e11  # timestamps above this are milliseconds


def _text_lines(path: Path) -> Iterator[str]:
    """Every line, read in large chunks and decoded a chunk at a time (a metrics dump has
    millions of short lines); a line longer than MAX_LINE_CHARS is cut, and a chunk without
    any newline is dropped rather than held."""
    with _open(path) as fh:
        carry = b""
        first = True
        while True:
            block = fh.read(CHUNK_BYTES)
            if first:
                block, first = _without_bom(block), False
            if not block:
                if carry:
                    yield carry[:MAX_LINE_CHARS].decode("utf-8", errors="replace")
                return
            buf = carry + block
            cut = buf.rfind(b"\n")
            if cut == -1:
                carry = buf if len(buf) <= CHUNK_BYTES else b""
                continue
            carry = buf[cut + 1:]
            for line in buf[:cut].decode("utf-8", errors="replace").split("\n"):
                yield line[:MAX_LINE_CHARS].rstrip("\r")


def _ts_seconds(ts: float) -> float:
    return ts / 1000.0 if ts > _MS_THRESHOLD else ts


class _Raw:
    """A series being read: its times and values side by side (no tuple per sample)."""

    __slots__ = ("name", "labels", "t", "v")

    def __init__(self, name: str, labels: dict[str, str]):
        self.name, self.labels = name, labels
        self.t: list[float] = []
        self.v: list[float] = []

    def settle(self) -> None:
        """Sorted by time, one value per timestamp (the last read wins)."""
        t = self.t
        if all(a < b for a, b in zip(t, t[1:], strict=False)):
            return
        merged = dict(sorted(zip(t, self.v, strict=True), key=lambda p: p[0]))
        self.t, self.v = list(merged), list(merged.values())


class _Reader:
    """Accumulates samples from several files into series keyed by name and label set."""

    def __init__(self, want: Callable[[str], bool] | None, untimed_at: float | None):
        self.want = want
        self.untimed_at = untimed_at
        self.wanted: dict[str, bool] = {}
        self.by_labels: dict[tuple[str, tuple[tuple[str, str], ...]], _Raw] = {}
        self.origins: dict[str, list[str]] = {}

    def _keep(self, name: str) -> bool:
        ok = self.wanted.get(name)
        if ok is None:
            ok = self.wanted[name] = self.want is None or bool(self.want(name))
        return ok

    def series(self, name: str, labels: dict[str, str], rel: str) -> _Raw:
        key = (name, tuple(sorted(labels.items())))
        s = self.by_labels.get(key)
        if s is None:
            s = self.by_labels[key] = _Raw(name, labels)
        where = self.origins.setdefault(name, [])
        if rel not in where:
            where.append(rel)
        return s

    def text(self, path: Path, rel: str) -> None:
        # the series part of a line (name and labels, as written) is looked up first; only a
        # new one goes through the sample regex
        known: dict[str, _Raw | None] = {}
        for line in _text_lines(path):
            if not line or line[0] == "#":
                continue
            space, brace = line.find(" "), line.find("{")
            cut = line.find("}", brace) + 1 if brace != -1 and (space == -1 or brace < space) \
                else space
            if cut <= 0:
                continue
            head = line[:cut]
            s = known.get(head, False)
            if s is False:
                m = _SAMPLE.match(line)
                s = known[head] = self.series(m["name"], _labels(m["labels"]), rel) \
                    if m and self._keep(m["name"]) else None
            if s is None:
                continue
            parts = line[cut:].split(None, 2)
            try:
                value = float(parts[0])
                ts = float(parts[1]) if len(parts) > 1 and parts[1] != "#" else None
            except (ValueError, IndexError):
                continue
            if math.isnan(value):  # staleness markers and empty histograms carry no sample
                continue
            if ts is None:
                if self.untimed_at is None:
                    continue
                ts = self.untimed_at
            s.t.append(ts / 1000.0 if ts > _MS_THRESHOLD else ts)
            s.v.append(value)

    def api_json(self, path: Path, rel: str) -> None:
        n = 0
        try:
            with _open(path) as fh:
                for n, item in enumerate(ijson.items(fh, "data.result.item"), 1):  # noqa: B007
                    self._result(item, rel)
        except (ijson.JSONError, ValueError, TypeError, KeyError) as exc:
            raise ParseError(f"{rel}: not a Prometheus API response ({exc})") from None
        if n == 0:
            head = read_head(path, 4096).decode("utf-8", errors="replace")
            if '"status"' in head and '"error"' in head:
                try:
                    doc = json.loads(head)
                    why = f"{doc.get('errorType', 'error')}: {doc.get('error', '')}"
                except json.JSONDecodeError:
                    why = "the response is an error"
                raise ParseError(f"{rel}: Prometheus answered an error ({why})")
            if '"data"' not in head:
                raise ParseError(f"{rel}: not a Prometheus API response (no data.result)")

    def _result(self, item: Any, rel: str) -> None:
        if not isinstance(item, dict):
            return  # a scalar or string result carries no series
        labels = {str(k): str(v) for k, v in (item.get("metric") or {}).items()}
        name = labels.pop("__name__", "")
        if not self._keep(name):
            return
        values = item.get("values") or ([item["value"]] if item.get("value") else [])
        s = self.series(name, labels, rel)
        for pair in values:
            try:
                ts, value = float(pair[0]), float(pair[1])
            except (TypeError, ValueError, IndexError):
                continue
            if not math.isnan(value):
                s.t.append(_ts_seconds(ts))
                s.v.append(value)

    def finish(self) -> list[_Raw]:
        out = [s for s in self.by_labels.values() if s.t]
        for s in out:
            s.settle()
        return out


def _is_json(path: Path) -> bool:
    return read_head(path, 512).lstrip()[:1] in (b"{", b"[")


def read_series(paths: Iterable[Path], want: Callable[[str], bool] | None, untimed_at: float | None,
          root: Path | None) -> _Reader:
    reader = _Reader(want, untimed_at)
    for path in paths:
        rel = str(path.relative_to(root)) if root and path.is_relative_to(root) else str(path)
        if not path.is_file():
            raise ParseError(f"{rel}: no such file")
        if _is_json(path):
            reader.api_json(path, rel)
        else:
            reader.text(path, rel)
    return reader


def load_series(paths: Iterable[Path], want: Callable[[str], bool] | None = None, *,
                untimed_at: float | None = None, root: Path | None = None) -> list[Series]:
    """Every series in the files (only names for which `want` is true). Samples without a
    timestamp are dropped unless `untimed_at` gives them one (a single /metrics scrape)."""
    return [Series(name=s.name, labels=s.labels, points=list(zip(s.t, s.v, strict=True)))
            for s in read_series(paths, want, untimed_at, root).finish()]
