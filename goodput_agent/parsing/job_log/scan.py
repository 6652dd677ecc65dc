"""Reading a job log fast: only marker lines (and trigger windows after them) are decoded,
each with the last timestamped line before it.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from goodput_agent.parsing.failure_words import MARKERS as WORD_MARKERS
from goodput_agent.parsing.failure_words import FailureLines
from goodput_agent.parsing.job_log.iterations import MARKERS as ITERATION_MARKERS
from goodput_agent.parsing.job_log.prefixes import TS_PROBE
from goodput_agent.parsing.job_log.tf_config import MARKER as TF_CONFIG_MARKER
from goodput_agent.parsing.lines import CHUNK_BYTES, decode
from goodput_agent.parsing.prefilter import count_newlines, prefilter_for

LOOKBACK_LINES = 20_000  # how far back (undecoded lines) to look for the carried time
# Literal markers: a line is decoded only when it holds one of these (case-sensitive). One
# prefilter pass finds them all (prefilter.py); they are broad, the matchers below filter.
MARKERS: tuple[bytes, ...] = (
    b"rror",  # Error / error: exceptions, "srun: error:", "slurmstepd: error: *** JOB ..."
    b"xception", b"Traceback", b"NCCL", b"emory", b"atchdog", b"ignal", b"exitcode",
    b"checkTimeout",  # the watchdog's timeout told by its C++ frames alone
    b"Segmentation", b"core dumped", b"peer", b"Killed",
    b"ocket",  # NCCL's socket transport: "Socket creation failed", "socketStartConnect"
    b"NVRM", b"oom-kill",  # kernel lines forwarded into the job's output
    b"xit code", b"exit status", b"return code", "已杀死".encode(),  # SIGKILL told by a shell
    b"Root Cause",  # a torchelastic summary cut from its ChildFailedError header
    b"CUDA_ERROR",  # the driver API's error names (TensorFlow, JAX)
    b"xhausted", b"XHAUSTED", b"llocat",  # XLA's and TensorFlow's accelerator OOM
    b"device handle", b"No devices were found", b"GPU is lost", b"(rev ff)",  # GPU lost
    *ITERATION_MARKERS,  # the log's own iteration times (iterations.py)
    b"time across ranks (ms):",  # Megatron's timers (megatron_timers.py), lines below
    b"OOMKilled", b"OOM-killed", b"exit_code", b"WTERMSIG",  # a platform's exit diagnostics
    b"exceeded MEM usage",  # Torque/PBS's memory limit
    b"ask role", b"ask Role", b"askRole",  # ... and its task list (platform_tasks.py)
    TF_CONFIG_MARKER,  # TensorFlow's cluster spec: this task's host (tf_config.py)
)
# One pass finds the parser's lines and the lines holding a failure's words
# (parsing/failure_words.py), each marker tagged with its reader's bit.
PARSER_LINE, WORDS_LINE = 1, 2
SCAN_MARKERS = MARKERS + WORD_MARKERS
SCAN_GROUPS = (PARSER_LINE,) * len(MARKERS) + (WORDS_LINE,) * len(WORD_MARKERS)
# After a decoded line holding a trigger, the next N lines are decoded whatever they hold:
# traceback frames and exception lines, a watchdog message wrapped over lines, and the
# torchelastic ChildFailedError summary (field lines re-arm the window).
TRIGGERS: tuple[tuple[bytes, int], ...] = (
    (b"Traceback (most recent call last)", 80),
    (b'File "', 40),
    (b"Watchdog caught", 3),
    (b"ChildFailedError", 40),
    (b"Root Cause", 12),
    (b"      : ", 12),
    (b"time across ranks (ms):", 64),  # one line per timer follows
    (b"ask role", 256), (b"ask Role", 256), (b"askRole", 256),  # a platform's task list
)


def _open(path: Path) -> BinaryIO:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _lookback(buf: bytes, lo: int, hi: int) -> bytes | None:
    """The last line in buf[lo:hi] (whole lines) that starts with a timestamp."""
    p = hi - 1
    steps = 0
    while p > lo and steps < LOOKBACK_LINES:
        q = max(buf.rfind(b"\n", lo, p) + 1, lo)
        if TS_PROBE.match(buf, q, min(p, q + 200)):
            return buf[q:p]
        p = q - 1
        steps += 1
    return None


@dataclass(slots=True)
class ScanState:
    window: int = 0  # lines still to decode after a trigger
    lines: int = 0  # lines in the file, once the scan is done
    counted: tuple[int, int] = (0, 0)  # newlines counted in the buffer so far: (to offset, n)
    words: FailureLines = field(default_factory=FailureLines)  # lines with a failure's words


def _scan_buffer(buf: bytes, base_line: int, st: ScanState
                 ) -> Iterator[tuple[int, str | None, str | None]]:
    ordered = prefilter_for(SCAN_MARKERS).tagged_line_starts(buf, SCAN_GROUPS)
    idx, cursor, n = 0, 0, len(buf)
    last_pos, last_line = 0, base_line
    while cursor < n:
        while idx < len(ordered) and ordered[idx][0] < cursor:
            idx += 1
        if st.window <= 0:
            if idx == len(ordered):
                break
            s, bits = ordered[idx]
            if not bits & PARSER_LINE:  # a failure's words only: not the parser's line
                last_line += count_newlines(buf, last_pos, s)
                last_pos = s
                end = buf.find(b"\n", s)
                st.words.see(last_line, decode(buf[s:end if end != -1 else n]))
                st.counted = (last_pos, last_line - base_line)
                idx += 1
                continue
        else:
            s = cursor
            bits = ordered[idx][1] if idx < len(ordered) and ordered[idx][0] == s else 0
        end = buf.find(b"\n", s)
        end = n if end == -1 else end
        ts_line = _lookback(buf, cursor, s) if s > cursor else None
        last_line += count_newlines(buf, last_pos, s)
        last_pos = s
        raw = buf[s:end]
        st.window -= 1
        for trig, size in TRIGGERS:
            if trig in raw:
                st.window = max(st.window, size)
        st.counted = (last_pos, last_line - base_line)
        text = decode(raw)
        if bits & WORDS_LINE:
            st.words.see(last_line, text)
        yield last_line, text, decode(ts_line) if ts_line else None
        cursor = end + 1
    if cursor < n:  # the tail: a timestamp there is the carried time for the next chunk
        ts_line = _lookback(buf, cursor, n if buf.endswith(b"\n") else n + 1)
        if ts_line:
            yield 0, None, decode(ts_line)


def scan_with_times(path: Path, st: ScanState | None = None
                    ) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, decoded line, last timestamped line before it); line None = time only."""
    st = st if st is not None else ScanState()
    with _open(path) as fh:
        carry = b""
        base_line = 1
        while True:
            block = fh.read(CHUNK_BYTES)
            if not block and not carry:
                return
            buf = carry + block
            if block:
                cut = buf.rfind(b"\n")
                if cut == -1:
                    if len(buf) <= CHUNK_BYTES * 2:
                        carry = buf
                        continue
                    cut = len(buf) - 1  # pathological single line: cut it
                carry, buf = buf[cut + 1:], buf[: cut + 1]
            else:
                carry = b""
            st.counted = (0, 0)
            yield from _scan_buffer(buf, base_line, st)
            upto, seen = st.counted
            base_line += seen + count_newlines(buf, upto)
            st.lines = base_line - 1 + (0 if buf.endswith(b"\n") else 1)
            if not block:
                return
