"""JSON documents with positions: where in the file each value of interest lies.

JSON has no natural lines, so one token scan of the document (JsonPositions) finds the
lines a value spans; events made from JSON (Kubernetes lists, slurmrestd / sacct --json)
point there. Shared by the Kubernetes and Slurm JSON parsers.
"""

from __future__ import annotations

import gzip
import json
import re
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from typing import Any

from goodput_agent.core.events import Locator
from goodput_agent.parsing.base import ParseContext, ParseError

MAX_JSON_BYTES = 50 * 1024 * 1024
EXCERPT_CHARS = 500
JsonPath = tuple[str | int, ...]
_TOKEN = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"(\s*:)?|[{}\[\],]')
_SPACES = re.compile(r"\s+")


def load_json_document(path: Path, ctx: ParseContext, what: str) -> tuple[Any, str]:
    """The parsed document and its text; ParseError (one line) when it is not readable JSON."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ParseError(f"{ctx.rel_path}: cannot read {what} ({exc.strerror})") from None
    if size > MAX_JSON_BYTES:
        raise ParseError(f"{ctx.rel_path}: {what} is {size // (1024 * 1024)} MiB, over the "
                         f"{MAX_JSON_BYTES // (1024 * 1024)} MiB limit for JSON documents; "
                         "export a narrower selection")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                raw = fh.read(MAX_JSON_BYTES + 1)
        else:
            raw = path.read_bytes()
    except (OSError, EOFError) as exc:
        raise ParseError(f"{ctx.rel_path}: cannot read {what} ({exc})") from None
    text = raw.decode("utf-8-sig", errors="replace")
    try:
        return json.loads(text), text
    except json.JSONDecodeError as exc:
        raise ParseError(f"{ctx.rel_path}: {what} is not valid JSON (line {exc.lineno}, "
                         f"column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise ParseError(f"{ctx.rel_path}: {what} is nested too deeply to read") from None


def _decode_key(raw: str) -> str:
    if "\\" not in raw:
        return raw
    try:
        return json.loads(f'"{raw}"')
    except json.JSONDecodeError:
        return raw


class JsonPositions:
    """Character spans of selected JSON paths, from one token scan of the document text.

    `keep(path)` chooses which paths to remember (bounded memory on big documents). A path's span
    starts at its key (or at its opening bracket for array elements) and ends at its closing
    bracket (or at the key, for scalars).
    """

    def __init__(self, text: str, keep: Callable[[JsonPath], bool]):
        self._text = text
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self._spans: dict[JsonPath, list[int]] = {}
        self._scan(keep)

    def _scan(self, keep: Callable[[JsonPath], bool]) -> None:
        slots: list[str | int] = []  # per open container: current key (object) or index (array)
        kinds: list[str] = []
        spans = self._spans
        pending: JsonPath | None = None  # a remembered key whose scalar value has not ended yet
        for m in _TOKEN.finditer(self._text):
            ch = self._text[m.start()]
            if ch == '"':
                if m.group(2) and kinds and kinds[-1] == "{":
                    slots[-1] = _decode_key(m.group(1))
                    p = tuple(slots)
                    pending = p if keep(p) else None
                    if pending:
                        spans[p] = [m.start(), m.end()]
                continue
            if ch in "{[":
                pending = None
                p = tuple(slots)
                if p not in spans and keep(p):
                    spans[p] = [m.start(), m.start() + 1]
                kinds.append(ch)
                slots.append(0 if ch == "[" else "")
                continue
            if pending is not None:
                end = m.start()
                while end > spans[pending][0] and self._text[end - 1].isspace():
                    end -= 1
                spans[pending][1] = end
                pending = None
            if ch == ",":
                if kinds and kinds[-1] == "[":
                    slots[-1] = int(slots[-1]) + 1
            elif kinds:  # } or ]
                kinds.pop()
                slots.pop()
                p = tuple(slots)
                if p in spans:
                    spans[p][1] = m.end()

    def _line(self, offset: int) -> int:
        return bisect_right(self._newlines, offset - 1) + 1

    def _nearest(self, path: JsonPath) -> JsonPath | None:
        for n in range(len(path), -1, -1):
            if path[:n] in self._spans:
                return path[:n]
        return None

    def lines(self, path: JsonPath) -> tuple[int, int]:
        """1-based first and last line of `path` (or of its nearest remembered ancestor)."""
        found = self._nearest(path)
        if found is None:
            return 1, 1
        start, end = self._spans[found]
        return self._line(start), self._line(max(start, end - 1))

    def excerpt(self, path: JsonPath, limit: int = EXCERPT_CHARS) -> str:
        """The document text of `path`, whitespace collapsed, capped at `limit` characters."""
        found = self._nearest(path)
        if found is None:
            return ""
        start, end = self._spans[found]
        return _SPACES.sub(" ", self._text[start:min(end, start + limit * 4)]).strip()[:limit]


def json_path_text(path: JsonPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def locator_for(positions: JsonPositions, ctx: ParseContext, *paths: JsonPath) -> Locator:
    """A Locator spanning the lines of all given paths."""
    spans = [positions.lines(p) for p in paths] or [(1, 1)]
    return Locator(path=ctx.rel_path, line_start=min(s for s, _ in spans),
                   line_end=max(e for _, e in spans))
