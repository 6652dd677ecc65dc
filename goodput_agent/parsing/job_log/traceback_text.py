"""Python traceback text: frames, the final exception line, a whole formatted callstack."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_FRAME = re.compile(r'^(?P<indent>\s*)File "(?P<file>[^"]+)", line (?P<line>\d+)'
                    r"(?:,? in (?P<fn>.+))?")
_EXC_SUFFIX = ("Error", "Exception", "Interrupt", "Exit", "Failure", "Failed", "Timeout",
               "Iteration", "Fault", "Abort", "Aborted", "Violation", "Exhausted", "Exceeded")
_EXC_BARE = frozenset({"KeyboardInterrupt", "SystemExit", "StopIteration", "GeneratorExit"})
_EXC_LINE = re.compile(r"^(?P<indent>\s*)(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)"
                       r"(?::[ ]?(?P<msg>.*))?$")
CHAIN = ("During handling of the above exception", "The above exception was the direct cause")


def parse_exception_line(content: str) -> tuple[str, str, int] | None:
    """(type, message, indent) when `content` looks like a traceback's final exception line."""
    m = _EXC_LINE.match(content.rstrip())
    if not m:
        return None
    exc_type, msg = m["type"], m["msg"]
    last = exc_type.rsplit(".", 1)[-1]
    if last.endswith("Warning") or not last[:1].isupper():
        return None
    named = last.endswith(_EXC_SUFFIX) or last in _EXC_BARE
    dotted = "." in exc_type and msg is not None
    if not (named or dotted) or (msg is None and last not in _EXC_BARE and not named):
        return None
    return exc_type, (msg or "").strip(), len(m["indent"])


@dataclass(slots=True)
class Frame:
    file: str
    line: int
    function: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function}


def parse_frame(content: str) -> tuple[Frame, int] | None:
    m = _FRAME.match(content)
    if not m:
        return None
    fn = m["fn"].strip() if m["fn"] else None
    return Frame(m["file"], int(m["line"]), fn), len(m["indent"])


def _is_library(path: str) -> bool:
    return any(s in path for s in ("site-packages/", "dist-packages/", "/lib/python", "<frozen"))


def frames_detail(frames: list[Frame]) -> dict[str, Any]:
    d: dict[str, Any] = {"frames": len(frames)}
    if frames:
        d["innermost_frame"] = frames[-1].as_dict()
        d["frames_tail"] = [f.as_dict() for f in frames[-5:]]
        user = next((f for f in reversed(frames) if not _is_library(f.file)), None)
        if user is not None:
            d["innermost_user_frame"] = user.as_dict()
    return d


def summarize_callstack(text: str) -> tuple[str, str, list[Frame]] | None:
    """(exc_type, message, frames) of the last traceback in a formatted callstack string."""
    frames: list[Frame] = []
    exc: tuple[str, str] | None = None
    frame_indent = 0
    for raw in text.splitlines():
        if raw.lstrip().startswith("Traceback (most recent call last)"):
            frames, exc = [], None
            continue
        fr = parse_frame(raw)
        if fr:
            frames.append(fr[0])
            frame_indent = fr[1]
            continue
        e = parse_exception_line(raw)
        if e and (not frames or e[2] <= frame_indent):
            exc = (e[0], e[1])
    if exc is None:
        return None
    return exc[0], exc[1], frames
