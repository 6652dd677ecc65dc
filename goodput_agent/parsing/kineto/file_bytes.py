"""A trace file's bytes: plain or gzip (by magic number) decompressed block by block, the
top-level keys before the `traceEvents` array, and the exact scanner of strings and brackets
that finds where an event ends. Moved from load.py, which reads the array with them."""

from __future__ import annotations

import re
import zlib
from typing import Any, BinaryIO

import orjson

PIECE_BYTES = 2 * 1024 * 1024  # one orjson.loads; also the read block size (bounds memory)
RAW_BYTES = 1024 * 1024  # compressed bytes fed to zlib at a time


class Fallback(Exception):
    """The fast path cannot read this layout; ijson reads the whole file instead."""



# ---------------------------------------------------------------------------------------------
# bytes in: plain or gzip (by magic number), decompressed block by block


class TooBig(Exception):
    """The trace decompresses past the byte limit: refused before memory follows."""


class Source:
    """Decompressed blocks of a file; stops (returns b"") at a gzip error and records it;
    TooBig past `cap` decompressed bytes."""

    def __init__(self, fh: BinaryIO, cap: int | None = None):
        self._fh = fh
        self.cap = cap
        self.problem: str | None = None
        self.offset = 0  # decompressed bytes handed out so far
        magic = fh.read(2)
        self._gz = magic == b"\x1f\x8b"
        self._pending = magic
        self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS) if self._gz else None

    def read(self, size: int = -1) -> bytes:
        """The next block (its size is the source's, not `size`); b"" at the end."""
        if size == 0:  # ijson probes the type of the stream with read(0)
            return b""
        block = self._gz_block() if self._gz else self._plain_block()
        self.offset += len(block)
        if self.cap is not None and self.offset > self.cap:
            raise TooBig(self.offset)
        return block

    def _plain_block(self) -> bytes:
        if self._pending:
            block, self._pending = self._pending + self._fh.read(PIECE_BYTES), b""
            return block
        return self._fh.read(PIECE_BYTES)

    def _gz_block(self) -> bytes:
        while self._zlib is not None:
            d = self._zlib
            data = d.unconsumed_tail or self._pending or self._fh.read(RAW_BYTES)
            self._pending = b""
            if not data:
                if not d.eof:
                    self.problem = "gzip stream cut short"
                self._zlib = None
                return d.flush() if not d.eof else b""
            try:
                out = d.decompress(data, PIECE_BYTES)
            except zlib.error as exc:
                reason = str(exc).rsplit(": ", 1)[-1]
                self.problem = f"corrupt gzip data ({reason})"
                self._zlib = None
                return b""
            if d.eof:  # another gzip member may follow (concatenated .gz files)
                rest = d.unused_data
                if rest.strip(b"\x00"):
                    self._zlib, self._pending = zlib.decompressobj(16 + zlib.MAX_WBITS), rest
                else:
                    self._zlib = None
            if out:
                return out
        return b""


# ---------------------------------------------------------------------------------------------
# the head (top-level keys before traceEvents) and the exact scanner

_KEY = re.compile(rb'"traceEvents"\s*:\s*')
BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}"]', re.DOTALL)


def head_keys(buf: bytes, whole: bool) -> dict[str, Any]:
    """The top-level keys (but traceEvents) readable from the start of a trace, best effort: all
    of them when `buf` is the `whole` file, else those before traceEvents."""
    if whole:
        try:
            top = orjson.loads(buf)
        except orjson.JSONDecodeError:
            top = None
        if isinstance(top, dict):
            top.pop("traceEvents", None)
            return top
    try:
        head = split_head(buf)
    except Fallback:
        return {}
    return head[0] if head else {}


def split_head(buf: bytes) -> tuple[dict[str, Any], int] | None:
    """The top-level keys before `"traceEvents":` and the offset of its value; None when the key
    is not in `buf`. Raises Fallback when the text before the key is not a JSON object's start
    (the key was nested, or the head is not plain JSON)."""
    m = _KEY.search(buf)
    if m is None or m.end() >= len(buf):
        return None
    start = buf.find(b"{")
    before = buf[start + 1 : m.start()].rstrip()
    if before.endswith(b","):
        before = before[:-1]
    try:
        top = orjson.loads(b"{" + before + b"}")
    except orjson.JSONDecodeError:
        raise Fallback from None
    return top, m.end()


def exact_scan(buf: bytes, start: int = 0) -> tuple[int | None, int, bool]:
    """Walk `buf` from an event boundary inside the traceEvents array: (offset of the `]` closing
    the array or None, offset of the last `}` closing a whole event or -1, malformed)."""
    depth, last = 0, -1
    for m in _TOKEN.finditer(buf, start):
        c = buf[m.start()]
        if c == 0x22:  # '"'
            if m.end() - m.start() == 1:  # a string left open: the data stops inside it
                return None, last, False
            continue
        if c in (0x7B, 0x5B):  # { [
            depth += 1
            continue
        depth -= 1
        if depth == 0 and c == 0x7D:
            last = m.start()
        elif depth < 0:
            return (m.start(), last, False) if c == 0x5D else (None, last, True)
    return None, last, False


def start_problem(buf: bytes) -> str | None:
    """Why the start of a file is not a Kineto trace object, or None when it may be one."""
    text = buf.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return "empty file"
    if text[:1] == b"[":
        return "a JSON array, not a Kineto trace object (no traceEvents array)"
    if text[:1] != b"{":
        shown = text[:20].decode("utf-8", errors="replace").split("\n")[0]
        return f"not JSON (starts with {shown!r})"
    return None
