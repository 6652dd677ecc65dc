"""A running job's progress from its own log: each step/iteration line's time and step, and
the checkpoint and evaluation phases it announced, with the line numbers for evidence.

Read from the end (at most `TAIL_BYTES`): the stall detector needs the recent history, not
the whole run. Lines without a time of their own cannot date progress and are skipped; a
line that reports an error is never progress.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.analysis.live.stall import Phase
from goodput_agent.parsing.lines import read_tail
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any

TAIL_BYTES = 4 * 1024 * 1024
PROGRESS = re.compile(r"\b(?:global[_ ]step|step|iter(?:ation)?)\b\s*[:=#]?\s*(\d+)"
                      r"|\bloss\b\s*[:=]?\s*-?\d", re.IGNORECASE)
# the frameworks' own words: Megatron-LM, DeepSpeed, PyTorch DCP, Lightning, HF Trainer
CHECKPOINT_START = re.compile(r"saving checkpoint|save_checkpoint|saving model checkpoint|"
                              r"checkpoint.{0,40}\b(?:saving|writing)\b|\bsaving (?:the )?model\b",
                              re.IGNORECASE)
CHECKPOINT_END = re.compile(r"(?:successfully )?saved checkpoint|checkpoint (?:saved|written)|"
                            r"finished saving|model saved", re.IGNORECASE)
EVAL_START = re.compile(r"\brunning evaluation\b|\bevaluating\b|\beval(?:uation)? "
                        r"(?:start|begin)|\bvalidation (?:start|loop|begin)|\bvalidating\b",
                        re.IGNORECASE)
EVAL_END = re.compile(r"\beval(?:uation)? (?:done|finished|end|complete)|validation loss|"
                      r"\beval_loss\b|\bvalidation (?:done|finished|end|complete)",
                      re.IGNORECASE)


class Mark(BaseModel):
    t: float  # epoch seconds
    step: int | None
    line: int  # 1-based line number in the file
    text: str = ""  # the line (cut), for evidence


class ProgressLog(BaseModel):
    path: str
    marks: list[Mark] = Field(default_factory=list)
    phases: list[Phase] = Field(default_factory=list)
    phase_lines: list[int] = Field(default_factory=list)  # each phase's first line
    last_line: int = 0
    last_time: float | None = None  # the newest timestamped line of any kind
    cut: bool = False  # only the file's tail was read


_ISO = re.compile(r"^\[?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
                  r"(?:Z|[+-]\d{2}:?\d{2})?)")


def line_time(text: str, policy: ClockPolicy) -> float | None:
    """The line's time: a leading ISO 8601 stamp by the fast path (most training logs; about
    50x cheaper than trying every format), else the bundle parsers' own formats."""
    m = _ISO.match(text)
    if m:
        raw = m.group(1).replace(",", ".")
        frac = re.search(r"\.(\d+)", raw)
        if frac and len(frac.group(1)) > 6:  # fromisoformat takes microseconds at most
            raw = raw.replace(frac.group(0), "." + frac.group(1)[:6])
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            when = None
        if when is not None:
            if when.tzinfo is None:
                when = when.replace(tzinfo=policy.tz)
            return when.timestamp()
    hit = parse_any(text, policy)
    return hit[0].timestamp() if hit else None


# literal words one of the phase patterns needs: a line without any skips the regexes
_PHASE_WORDS = ("checkpoint", "sav", "eval", "validat")
# a line that reports a failure is never progress (substrings of the lowered line)
_NOT_PROGRESS_WORDS = ("error", "exception", "traceback", "timed out", "timedout", "timeout",
                       "time out", "fail", "fatal", "abort", "kill", "signal")


def _phase_event(text: str) -> tuple[str, str] | None:
    low = text.lower()
    if not any(w in low for w in _PHASE_WORDS):
        return None
    for kind, start, end in (("checkpoint", CHECKPOINT_START, CHECKPOINT_END),
                             ("eval", EVAL_START, EVAL_END)):
        if end.search(text):
            return kind, "end"
        if start.search(text):
            return kind, "start"
    return None


def read_progress(path: Path, policy: ClockPolicy | None = None,
                  limit: int = TAIL_BYTES) -> ProgressLog:
    policy = policy or ClockPolicy()
    raw, cut = read_tail(path, limit)
    lines = raw.decode("utf-8", errors="replace").split("\n")
    first_line = 1
    if cut:
        total = _count_lines(path)
        first_line = total - len(lines) + 2
        lines = lines[1:]  # the first may be cut
    log = ProgressLog(path=str(path), cut=cut)
    _scan(log, lines, first_line, policy)
    return log


def _scan(log: ProgressLog, lines: list[str], first_line: int, policy: ClockPolicy) -> None:
    """Add `lines` (numbered from `first_line`) to `log`; a phase left open stays open."""
    open_phase = {p.kind: p for p in log.phases if p.end is None}
    for offset, text in enumerate(lines):
        number = first_line + offset
        t = line_time(text, policy) if text.strip() else None
        if t is None:
            continue
        log.last_line, log.last_time = number, t
        low = text.lower()
        if any(w in low for w in _NOT_PROGRESS_WORDS):
            continue
        phase = _phase_event(text)
        if phase is not None:
            kind, edge = phase
            if edge == "start" and kind not in open_phase:
                open_phase[kind] = Phase(kind=kind, start=t)  # type: ignore[arg-type]
                log.phases.append(open_phase[kind])
                log.phase_lines.append(number)
            elif edge == "end" and kind in open_phase:
                open_phase.pop(kind).end = t
            continue
        m = PROGRESS.search(low)
        if m:
            log.marks.append(Mark(t=t, step=int(m.group(1)) if m.group(1) else None,
                                  line=number, text=text[:300]))
            for kind in list(open_phase):  # progress again: the phase is over
                open_phase.pop(kind).end = t


class _Seen(BaseModel):
    inode: int
    size: int  # bytes consumed (whole lines only)
    lines: int  # lines consumed
    log: ProgressLog


class ProgressCache:
    """Each log read once, then only what was appended since (the watch looks at every
    running job every 10 s: re-reading each one's tail each time would cost 0.3 s a job). A
    file replaced or truncated is read again from its tail. Marks beyond `keep` are dropped
    from the front (the detector learns from the recent history)."""

    def __init__(self, keep: int = 50_000):
        self.keep = keep
        self._seen: dict[str, _Seen] = {}

    def read(self, path: Path, policy: ClockPolicy | None = None) -> ProgressLog:
        policy = policy or ClockPolicy()
        st = path.stat()
        seen = self._seen.get(str(path))
        if seen is None or seen.inode != st.st_ino or st.st_size < seen.size:
            log = read_progress(path, policy)
            with path.open("rb") as fh:  # where the last whole line ends
                fh.seek(max(0, st.st_size - 65536))
                tail = fh.read()
            whole = st.st_size - len(tail) + tail.rfind(b"\n") + 1
            self._seen[str(path)] = _Seen(inode=st.st_ino, size=whole,
                                          lines=_count_lines(path) - 1, log=log)
            return log
        if st.st_size > seen.size:
            with path.open("rb") as fh:
                fh.seek(seen.size)
                data = fh.read(st.st_size - seen.size)
            whole = data.rfind(b"\n") + 1  # a line still being written waits for its end
            if whole:
                lines = data[:whole - 1].decode("utf-8", errors="replace").split("\n")
                _scan(seen.log, lines, seen.lines + 1, policy)
                seen.size += whole
                seen.lines += len(lines)
                if len(seen.log.marks) > self.keep:
                    del seen.log.marks[:len(seen.log.marks) - self.keep]
        return seen.log


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")) + 1
