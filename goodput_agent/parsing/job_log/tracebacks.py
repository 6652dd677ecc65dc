"""Python tracebacks per stream, followed to their exception line."""

from __future__ import annotations

import re
from typing import Any

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.job_log.classify import classify_exception, oom_summary
from goodput_agent.parsing.job_log.prefixes import parse_time_text
from goodput_agent.parsing.job_log.state import (
    MESSAGE_CHARS,
    LineState,
    OpenTraceback,
    Pending,
    Stream,
)
from goodput_agent.parsing.job_log.traceback_text import (
    CHAIN,
    frames_detail,
    parse_exception_line,
    parse_frame,
)

BARE_EXCEPTION_WEIGHT = 0.3  # an exception line without its traceback
# argparse refusing a script's command line (`usage: train.py ...`, then `train.py: error:
# unrecognized arguments: --local-rank=0`, exit status 2): the program's own last words
_ARGPARSE = re.compile(r"^(?P<prog>[\w.\-]+\.py): error: (?P<msg>\S.*)$")


class TracebackReader(LineState):
    """Follows a traceback per stream to its exception line."""

    def _traceback(self, stream: Stream, content: str) -> bool:
        stripped = content.strip()
        if stripped.startswith(CHAIN):
            stream.chain_pending = True
            return True
        if stripped.startswith(("Traceback (most recent call last)",
                                "Original Traceback (most recent call last)")):
            stream.tb = OpenTraceback(self.lineno, chained=stream.chain_pending)
            stream.chain_pending = False
            return True
        tb = stream.tb
        if tb is None:
            return False
        fr = parse_frame(content)
        if fr:
            tb.frames.append(fr[0])
            tb.frame_indent = fr[1]
            return True
        exc = parse_exception_line(content)
        if exc and (not tb.frames or exc[2] <= tb.frame_indent):
            stream.tb = None
            self._emit_traceback(tb, exc[0], exc[1])
            return True
        tb.lines_seen += 1
        if tb.lines_seen > 400:
            stream.tb = None  # never saw its exception line
        return content[:1].isspace() or not stripped

    def _emit_traceback(self, tb: OpenTraceback, exc_type: str, message: str) -> Pending:
        v = classify_exception(exc_type, message)
        detail = {"exc_type": exc_type, "message": message[:MESSAGE_CHARS],
                  "traceback_start_line": tb.start, **frames_detail(tb.frames), **v.detail}
        role = v.role
        if tb.chained:
            detail["chained"] = True
            if v.kind == EventKind.python_exception:
                role = Role.symptom  # raised while handling the original one
        if v.kind == EventKind.cuda_oom:
            summary = oom_summary(v.detail)
        elif v.kind == EventKind.cuda_error:
            summary = f"CUDA error: {v.detail['cuda_error']}"
        else:
            summary = (f"{exc_type}: {message}" if message else exc_type)[:200]
        kw: dict[str, Any] = {"line_start": tb.start}
        if tb.entry is not None:
            tb.entry.exc = (exc_type, message)
            detail["via"] = "torchelastic_summary"
            kw.update(self._entry_identity(tb.entry))
        p = self.add(v.kind, role, v.category, summary, detail, **kw)
        if tb.entry is not None and tb.entry.fields.get("time"):
            t = parse_time_text(tb.entry.fields["time"], self.policy)
            if t:
                p.ts, p.clock = t
        return p

    def _m_argparse(self, stream: Stream, c: str) -> bool:
        if ": error: " not in c or not (m := _ARGPARSE.match(c.strip())):
            return False
        self.add(EventKind.python_exception, Role.primary, "application_error",
                 f"{m['prog']} refused its command line: {m['msg'][:200]} (argparse, exit 2)",
                 {"exc_type": "argparse", "exc_message": m["msg"][:500], "weight": 1.0})
        return True

    def _m_bare_exception(self, stream: Stream, c: str) -> bool:
        """An exception line with no traceback above it (a log that kept only its last line):
        the same class as with its traceback, but one line a decoy could print, so it weighs
        less."""
        exc = parse_exception_line(c)
        if exc is None or exc[2] > 0:
            return False
        if exc[1].startswith("Caught "):  # PyTorch's ExceptionWrapper: the original follows
            return True
        p = self._emit_traceback(OpenTraceback(self.lineno), exc[0], exc[1])
        p.detail.update(without_traceback=True, weight=BARE_EXCEPTION_WEIGHT)
        return True
