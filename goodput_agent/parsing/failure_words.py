"""Which lines of a free-text file read as a failure that its parser did not understand.

An `unknown` verdict claims that a careful reader of every file would name no cause either
(analysis/abstention.py). A failure the parsers do not know still prints a failure's words
(killed, error, out of memory, exhausted, evicted, ...): a file with such lines that no event
came from may hold the answer; a file without any holds none that a reader could name. Lines
that say of themselves that they are harmless (an informational level, a Python warning's
category, an error the hardware corrected) are not counted, though a WARN level is (NCCL warns
of its failures); a strong word (killed, out of memory, traceback, ...) counts at any level.
Structured formats are read field by field by their parsers and are not scanned here.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from goodput_agent.parsing.lines import scan_lines

# the free-text formats whose lines a failure in an unknown form could sit among
FREE_TEXT_FORMATS = frozenset({"job_log", "kernel_log", "tool_report", "k8s_table",
                               "k8s_describe"})
FACT = "failure_words"  # the key of a file's facts: {"unexplained": n, "lines": [...]}
LINES_KEPT = 5  # line numbers kept per file to name in the report; the count is whole

# a failure whatever the line's level says
_STRONG = (r"killed|\boom|out[ _]of[ _]memory|out_of_me\+|traceback|exception|fatal"
           r"|segmentation fault|core dumped|panic|evict|\bxid\b|abort|timed out|timing out"
           r"|exceeded|exhausted|terminated|cancelled|notready|\blost\b|(?<!PCIe )bus error")
# a failure unless the line says it is informational, a warning or corrected
_WEAK = (r"error|fail|unable|cannot|can't|could not|refused|unreachable|denied|invalid"
         r"|illegal|no route|not found|preempt|timeout(?!\s*(?:\(ms\))?\s*[=:(])")
STRONG = re.compile(_STRONG, re.IGNORECASE)
ANY = re.compile(f"{_STRONG}|{_WEAK}", re.IGNORECASE)
HARMLESS = re.compile(
    r"\b(?:INFO|DEBUG|TRACE|NOTICE)\b|\[[IDN]\]|^\s*[ID]\d{4} "  # a log level that says so
    r"|\b[A-Z]\w*Warning\b"  # a Python warning category (FutureWarning, UserWarning)
    r"|(?<![Uu]n)[Cc]orrected\b|\bEDAC\b.*\bCE\b"  # the hardware corrected it
    r"|^# (?:HELP|TYPE) ")  # a Prometheus exposition's description of a metric
# the literals the prefilter finds candidate lines by (case-sensitive: each spelling)
_MARKER_WORDS = ("kill", "oom", "out of memory", "out_of_me", "traceback", "exception", "fatal",
                 "segmentation", "core dumped", "panic", "evict", "xid", "abort", "timed out",
                 "timing out", "exceeded", "exhausted", "terminated", "cancelled", "notready",
                 "lost", "bus error", "error", "fail", "unable", "cannot", "can't",
                 "could not", "refused", "unreachable", "denied", "invalid", "illegal", "no route",
                 "not found", "preempt", "timeout", "NotReady")
MARKERS = tuple(dict.fromkeys(
    v.encode() for w in _MARKER_WORDS for v in (w, w.capitalize(), w.upper(), w.title())))


def reads_as_failure(line: str) -> bool:
    """Whether a line's own words read as a failure, its level and wording considered."""
    if not ANY.search(line):
        return False
    return bool(STRONG.search(line)) or not HARMLESS.search(line)


# a record's detail line, indented under its source's prefix ("0000:2d:00.0:   device [...]
# error status/mask=...", "pcieport 0000:00:1c.5:    [ 0] Receiver Error"): the record's
# first line says what the record is
_DETAIL = re.compile(r"\S:\s{2,}\S")


def unexplained_failure_lines(path: Path, explained: Collection[int]) -> dict[str, object]:
    """The count of `path`'s lines that read as a failure and are not among `explained` (the
    lines its parser's events came from), and the first few of their numbers. A detail line
    right after a line that was explained or is harmless belongs to that line's record."""
    lines = FailureLines()
    for n, line in scan_lines(path, MARKERS):
        lines.see(n, line)
    return lines.fact(explained)


class FailureLines:
    """The lines of one file that read as a failure, gathered in order by whichever pass reads
    the file's marker lines (the job log's own scan finds them in the same pass), and settled
    against the lines its events came from once those are known."""

    def __init__(self) -> None:
        # (line, a record's detail line, the line before it: 0 not seen, 1 harmless, 2 failing)
        self.failing: list[tuple[int, bool, int]] = []
        self._last = (-2, False)  # the last line seen, and whether it read as a failure

    def see(self, n: int, line: str) -> None:
        """A line holding a failure word (MARKERS), in line order."""
        before = (2 if self._last[1] else 1) if self._last[0] == n - 1 else 0
        failing = reads_as_failure(line)
        if failing:
            self.failing.append((n, bool(_DETAIL.search(line)), before))
        self._last = (n, failing)

    def fact(self, explained: Collection[int]) -> dict[str, object]:
        """FACT for the file: a failing line is settled when its events explain it, or when it
        is a detail line right after a settled or harmless line."""
        count, kept, settled = 0, [], set()
        for n, detail, before in self.failing:
            if n in explained or (detail and (before == 1 or (before == 2 and n - 1 in settled))):
                settled.add(n)
                continue
            count += 1
            if len(kept) < LINES_KEPT:
                kept.append(n)
        return {"unexplained": count, "lines": kept}
