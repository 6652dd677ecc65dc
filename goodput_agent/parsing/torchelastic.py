"""torchelastic error files: the error.json a worker writes through `@record`.

Shape (torch/distributed/elastic/multiprocessing/errors/error_handler.py):
    {"message": {"message": "RuntimeError: ...",
                 "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1714557600"},
                 "errorCode": 1}}          # errorCode only when the agent copied the file up
and the newer string form {"message": "RuntimeError: ...", "timestamp": "1714557600"}.

One Event per file: python_exception (or cuda_oom / cuda_error, judged as in job_log) at the
time the exception was recorded (epoch seconds, Clock.absolute). The file sits in
<log_dir>/<run>/attempt_N/<local_rank>/error.json: that number is a LOCAL rank and is kept in
detail["local_rank"]; the global rank comes from ctx.rank_hint or a rank in the file name.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.job_log import rank_from_filename
from goodput_agent.parsing.job_log.classify import classify_exception, exit_code_detail, oom_summary
from goodput_agent.parsing.job_log.traceback_text import (
    frames_detail,
    parse_exception_line,
    summarize_callstack,
)
from goodput_agent.parsing.lines import read_whole

FORMAT = "torchelastic_error"
MAX_BYTES = 50 * 1024 * 1024
EXCERPT_CHARS = 500
MESSAGE_CHARS = 1000

_LOCAL_RANK_DIR = re.compile(r"attempt_\d+/(\d+)/[^/]*$")
_SIGNAL_MSG = re.compile(r"Signal (\d+) \((SIG\w+)\) received by PID (\d+)")


# TORCHELASTIC_ERROR_FILE named per global rank by the launcher script: error-29.json
_ERROR_FILE_RANK = re.compile(r"(?:^|/)error[-_.](\d+)\.json$")


class ExtraInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    py_callstack: str | None = None
    timestamp: str | int | None = None


class RecordedError(BaseModel):
    model_config = ConfigDict(extra="allow")
    message: str | None = None
    extra_info: ExtraInfo | None = Field(None, alias="extraInfo")
    error_code: int | None = Field(None, alias="errorCode")


class ErrorFile(BaseModel):
    """The top level of an error.json (both the dict and the string form of "message")."""

    model_config = ConfigDict(extra="allow")
    message: RecordedError | str
    timestamp: str | int | None = None


def _epoch(value: str | int | None) -> datetime | None:
    try:
        seconds = int(value) if value is not None else 0
    except (TypeError, ValueError):
        return None
    if seconds <= 0:
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _message_line(text: str, message: str) -> int:
    """The 1-based line of the file where the message string starts (pretty-printed files)."""
    probe = json.dumps(message[:40])[1:-1]
    pos = text.find(probe) if probe else -1
    return text.count("\n", 0, pos) + 1 if pos >= 0 else 1


class TorchelasticErrorParser:
    format = FORMAT

    def sniff(self, head: str, name: str) -> bool:
        s = head.lstrip()
        if not s.startswith("{") or '"message"' not in s:
            return False
        if "py_callstack" in s or "extraInfo" in s:
            return True
        return name.lower().endswith("error.json") and '"timestamp"' in s

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        text = self._read(path, ctx)
        try:
            doc = ErrorFile.model_validate(json.loads(text))
        except (json.JSONDecodeError, ValidationError, RecursionError) as e:
            raise ParseError(f"{ctx.rel_path}: not a torchelastic error file "
                             f"({type(e).__name__})") from e
        res = ParseResult(format=FORMAT, lines_read=text.count("\n") + 1)
        if isinstance(doc.message, str):
            message, callstack, when, code = doc.message, None, doc.timestamp, None
        else:
            extra = doc.message.extra_info or ExtraInfo()
            message, callstack = doc.message.message or "", extra.py_callstack
            when, code = extra.timestamp, doc.message.error_code
        if not message.strip() or message.strip() == "<NONE>":
            res.warnings.append(f"{ctx.rel_path}: error file holds no message")
            return res
        event = self._event(text, ctx, message, callstack, _epoch(when), code)
        res.events.append(event)
        res.facts = {k: event.detail[k] for k in ("exc_type", "local_rank", "exitcode")
                     if k in event.detail}
        if event.rank is not None:
            res.facts["rank"] = event.rank
        return res

    @staticmethod
    def _read(path: Path, ctx: ParseContext) -> str:
        try:
            raw = read_whole(path, MAX_BYTES)
            if len(raw) > MAX_BYTES:
                raise ParseError(f"{ctx.rel_path}: error file larger than {MAX_BYTES} bytes")
            return raw.decode("utf-8", errors="replace")
        except (OSError, EOFError) as e:
            raise ParseError(f"cannot read {ctx.rel_path}: {e.strerror or e}") from e

    def _event(self, text: str, ctx: ParseContext, message: str, callstack: str | None,
               ts: datetime | None, code: int | None) -> Event:
        detail: dict[str, Any] = {"message": message[:MESSAGE_CHARS]}
        summary_tb = summarize_callstack(callstack) if callstack else None
        first = message.splitlines()[0] if message.splitlines() else message
        head = parse_exception_line(first)
        if summary_tb:
            exc_type, exc_msg, frames = summary_tb
            detail.update(frames_detail(frames))
        elif head:
            exc_type, exc_msg = head[0], head[1]
        else:
            exc_type, exc_msg = "", message
        if code:
            detail.update(exit_code_detail(code))
        if m := _LOCAL_RANK_DIR.search(ctx.rel_path.replace("\\", "/")):
            detail["local_rank"] = int(m[1])
        rank = ctx.rank_hint if ctx.rank_hint is not None else rank_from_filename(ctx.rel_path)
        if rank is None and (m := _ERROR_FILE_RANK.search(ctx.rel_path)):
            rank = int(m[1])
        line = _message_line(text, message)
        raw_line = text.splitlines()[line - 1] if text.splitlines() else text
        base = {"ts": ts, "clock": Clock.absolute if ts else Clock.none, "node": ctx.node_hint,
                "rank": rank, "excerpt": raw_line.rstrip()[:EXCERPT_CHARS],
                "locator": Locator(path=ctx.rel_path, line_start=line, line_end=line)}
        if sig := _SIGNAL_MSG.search(message):
            detail.update({"signal": int(sig[1]), "signal_name": sig[2], "pid": int(sig[3])})
            return Event(kind=EventKind.signal, role=Role.symptom, category=None,
                         summary=f"worker received {sig[2]}", detail=detail, **base)
        v = classify_exception(exc_type, f"{exc_msg}\n{message}" if exc_msg != message
                               else message)
        detail.update({"exc_type": exc_type or None, **v.detail})
        if v.kind == EventKind.cuda_oom:
            summary = oom_summary(v.detail)
        elif v.kind == EventKind.cuda_error:
            summary = f"CUDA error: {v.detail['cuda_error']}"
        else:
            summary = (f"{exc_type}: {exc_msg}" if exc_type else message)[:200]
        return Event(kind=v.kind, role=v.role, category=v.category, summary=summary,
                     detail=detail, **base)


PARSER = TorchelasticErrorParser()
