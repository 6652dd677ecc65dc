"""Streaming line access with bounded memory: no file is ever read whole.

`scan_lines` is the fast path for big logs: it reads large binary chunks and only decodes the
lines that contain one of a parser's literal markers (found in one pass, prefilter.py), keeping
exact 1-based line numbers.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from goodput_agent.parsing.prefilter import count_newlines, prefilter_for

CHUNK_BYTES = 8 * 1024 * 1024
MAX_LINE_CHARS = 16 * 1024  # longer lines are cut: a 10 MB single-line log must not blow up


def _open(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return path.open("rb")


BOM = b"\xef\xbb\xbf"  # UTF-8 byte order mark (Windows editors, PowerShell's Out-File)


def _without_bom(data: bytes) -> bytes:
    return data[len(BOM):] if data.startswith(BOM) else data


# colour and cursor codes (rich, torchrun), also as syslog escapes them ("#033[0;36m", rsyslog's
# octal for ESC) and as the residue a paste leaves when ESC itself was dropped ("[0m", "[1;32m")
_ANSI = re.compile(rb"(?:\x1b|#033)\[[0-9;?]*[A-Za-z]|(?<![\w\]\[])\[[0-9;]{1,8}m(?![\w\]])")


# what a paste's residue starts with: a literal "[" lets the engine skip to candidates, where
# _ANSI's alternation (and its lookbehind) tries every position of the text
_RESIDUE = re.compile(rb"\[[0-9;]{1,8}m")


def strip_ansi(raw: bytes) -> bytes:
    if b"\x1b" in raw or b"#033[" in raw or _RESIDUE.search(raw):
        return _ANSI.sub(b"", raw)
    return raw


def decode(raw: bytes) -> str:
    if len(raw) > MAX_LINE_CHARS:
        raw = raw[:MAX_LINE_CHARS]
    return strip_ansi(raw).decode("utf-8", errors="replace").rstrip("\r\n").removeprefix("\ufeff")


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Every line with its 1-based number; each line capped at MAX_LINE_CHARS."""
    with _open(path) as fh:
        lineno = 0
        while True:
            raw = fh.readline(MAX_LINE_CHARS)
            if not raw:
                return
            lineno += 1
            if not raw.endswith(b"\n"):
                # drain the rest of an over-long line without holding it
                while True:
                    rest = fh.readline(MAX_LINE_CHARS)
                    if not rest or rest.endswith(b"\n"):
                        break
            yield lineno, decode(raw)


def line_at(path: Path, n: int) -> str:
    """Line n (1-based) of the file, without its line end; "" when there is none."""
    if n <= 0:
        return ""
    for i, text in iter_lines(path):
        if i == n:
            return text.rstrip("\r\n")
    return ""


@dataclass(slots=True)
class LineCount:
    lines: int = 0  # lines in the file, once a scan has read it to the end


def scan_lines(path: Path, literals: Iterable[bytes],
               count: LineCount | None = None) -> Iterator[tuple[int, str]]:
    """Lines containing any of `literals` (case-sensitive), with their 1-based numbers; `count`
    is told how many lines the file has when the scan is done."""
    prefilter = prefilter_for(tuple(literals))
    count = count if count is not None else LineCount()
    with _open(path) as fh:
        carry = b""
        base_line = 1  # line number of the first line in `buf`
        while True:
            block = fh.read(CHUNK_BYTES)
            if not block and not carry:
                return
            buf = carry + block
            if block:
                cut = buf.rfind(b"\n")
                if cut == -1:
                    if len(buf) > CHUNK_BYTES * 2:  # pathological single line: cut it
                        cut = len(buf) - 1
                    else:
                        carry = buf
                        continue
                carry, buf = buf[cut + 1 :], buf[: cut + 1]
            else:
                carry = b""
            last_pos, last_line = 0, base_line
            for start in prefilter.line_starts(buf):
                last_line += count_newlines(buf, last_pos, start)
                last_pos = start
                end = buf.find(b"\n", start)
                yield last_line, decode(buf[start : end if end != -1 else len(buf)])
            base_line += count_newlines(buf)
            count.lines = base_line - 1 + (0 if buf.endswith(b"\n") else 1)
            if not block:
                return


@lru_cache(maxsize=1)
def sniff_lines(head: str) -> tuple[str, ...]:
    """The non-empty lines among a head's first 400, stripped: split once for every sniffer
    that reads them (the kernel-log and job-log ones read the same head one after the other)."""
    return tuple(s for ln in head.splitlines()[:400] if (s := ln.strip()))


def read_head(path: Path, limit: int = 64 * 1024) -> bytes:
    """The first `limit` bytes (decompressed for .gz): enough to identify a file's format."""
    try:
        with _open(path) as fh:
            return _without_bom(fh.read(limit))
    except (OSError, EOFError):
        return b""


def read_tail(path: Path, limit: int = 64 * 1024) -> tuple[bytes, bool]:
    """The last `limit` bytes (of the decompressed text for .gz, which is read through once),
    and whether the file holds more than that (the first line of the tail may be cut)."""
    if path.suffix != ".gz":
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - limit))
            return fh.read(), size > limit
    tail, more = b"", False
    try:
        with _open(path) as fh:
            while block := fh.read(CHUNK_BYTES):
                more = more or len(tail) + len(block) > limit
                tail = (tail + block)[-limit:]
    except (OSError, EOFError):
        pass  # a truncated archive: what could be read
    return tail, more


def read_whole(path: Path, limit: int | None = None) -> bytes:
    """The file's bytes, decompressed for .gz; with `limit`, at most limit + 1 bytes (a caller
    can tell a file over its limit without holding all of it). OSError/EOFError propagate."""
    with _open(path) as fh:
        return _without_bom(fh.read(-1 if limit is None else limit + 1))


def read_whole_text(path: Path) -> str:
    return read_whole(path).decode("utf-8", errors="replace")


def plain_suffix(path: Path) -> str:
    """The suffix that tells the format: `.yaml` for both config.yaml and config.yaml.gz."""
    return Path(path.stem).suffix.lower() if path.suffix == ".gz" else path.suffix.lower()


def hard_wrap_width(head: str, min_width: int = 60) -> int | None:
    """The width a terminal copy was cut at, or None: its longest line is at least `min_width`
    characters and at least three lines, a fifth of the non-empty ones, are exactly that long
    (a terminal pads each row with blanks to its width, or cuts a long line there)."""
    lines = [ln.rstrip("\r") for ln in head.split("\n")[:400]]
    filled = [ln for ln in lines if ln.strip()]
    if not filled:
        return None
    width = max(len(ln) for ln in filled)
    at_width = sum(len(ln) == width for ln in filled)
    return width if width >= min_width and at_width >= max(3, len(filled) // 5) else None


def cut_rows_continue(head: str, width: int, starts_a_line: Callable[[str], bool]) -> bool:
    """Whether a row of `head` that reaches `width` is continued by the next: the cut a
    terminal made, as opposed to rows of one width that each start a line (repeated messages
    of equal length), which need no rejoining, and whose file is read at the prefilter's pace."""
    rows = [ln.rstrip("\r") for ln in head.split("\n")[:400]]
    return any(len(a.rstrip()) >= width - 1 and b.strip() and not starts_a_line(b)
               for a, b in zip(rows, rows[1:], strict=False))


def rejoined_lines(path: Path, width: int, starts_a_line: Callable[[str], bool],
                   count: LineCount | None = None) -> Iterator[tuple[int, str]]:
    """The logical lines of a copy hard-wrapped at `width`, numbered by their first physical
    line: a row whose text fills the width was cut there, and the next row continues it unless
    it starts a line of its own (`starts_a_line`). Padding is dropped."""
    count = count if count is not None else LineCount()
    pending: tuple[int, str] | None = None
    cut = False
    for lineno, row in iter_lines(path):
        count.lines = lineno
        if pending is not None and cut and row.strip() and not starts_a_line(row):
            pending = (pending[0], pending[1] + row)
        else:
            if pending is not None:
                yield pending[0], pending[1].rstrip()
            pending = (lineno, row)
        # a row whose text reaches the width's last column or the one before (a cut that
        # fell on a blank) was cut there; padding ends a line earlier
        cut = len(row.rstrip()) >= width - 1
    if pending is not None:
        yield pending[0], pending[1].rstrip()
