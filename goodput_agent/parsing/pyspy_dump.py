"""py-spy's stack dumps of a living process (`py-spy dump --pid P --json`, and the text form).

JSON (py-spy 0.3.13+): a list of threads, each {pid, thread_id, thread_name, os_thread_id,
active, owns_gil, frames: [{name, filename, short_filename, module, line, ...}]}, innermost
frame first. Text: "Process P: CMD", "Python vX", then per thread `Thread T (idle|active):
"Name"` followed by indented `func (file:line)` lines, innermost first.

The text of a dump is untrusted (file and function names come from the job): it is kept as
data, shown escaped, and never decides anything beyond the grouping of ranks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

MAX_FRAMES = 128  # per thread: deeper stacks are cut from the outside (the innermost stay)


@dataclass(slots=True)
class Frame:
    """Plain dataclasses for frames and threads: a 4,096-rank job's dumps hold ~100,000 of
    them, and a pydantic model costs ~10 us each to build."""

    name: str
    file: str
    line: int | None = None
    at: int | None = None  # the frame's own line in the dump's text (1-based), when read from text

    def label(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.name} ({where})"


@dataclass(slots=True)
class ThreadStack:
    name: str = ""
    active: bool | None = None
    frames: list[Frame] = field(default_factory=list)  # innermost first
    at: int | None = None  # the `Thread` line in the dump's text (1-based), when read from text


class ProcessDump(BaseModel):
    """One dump of one process: its threads, or why there is none."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pid: int | None = None
    threads: list[ThreadStack] = Field(default_factory=list)
    error: str | None = None  # the dump failed: permission, process gone, py-spy absent

    def main(self) -> ThreadStack | None:
        """The thread that runs the training loop: MainThread, else the deepest stack."""
        for t in self.threads:
            if t.name == "MainThread" and t.frames:
                return t
        return max(self.threads, key=lambda t: len(t.frames), default=None)


class DumpError(ValueError):
    pass


def _frame(raw: dict) -> Frame:
    file = raw.get("short_filename") or raw.get("filename") or "?"
    line = raw.get("line")
    return Frame(str(raw.get("name") or "?"), str(file), line if isinstance(line, int) else None)


def parse_json(text: str) -> ProcessDump:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DumpError(f"not py-spy JSON: {exc.msg} at {exc.pos}") from None
    if not isinstance(data, list):
        raise DumpError("not py-spy JSON: expected a list of threads")
    pid, threads = None, []
    for t in data:
        if not isinstance(t, dict):
            continue
        pid = pid or (t.get("pid") if isinstance(t.get("pid"), int) else None)
        frames = [_frame(f) for f in (t.get("frames") or [])[:MAX_FRAMES] if isinstance(f, dict)]
        active = t.get("active")
        threads.append(ThreadStack(str(t.get("thread_name") or ""),
                                   active if isinstance(active, bool) else None, frames))
    # built without validation: every field was converted above
    dump = ProcessDump.model_construct(pid=pid, threads=threads, error=None)
    return dump


_THREAD = re.compile(r'^Thread (?:0x)?[0-9a-fA-F]+ \((\w+)[^)]*\)(?:: "(.*)")?')
_FRAME = re.compile(r"^\s+(.+?) \((.+?)(?::(\d+))?\)\s*$")
_PROCESS = re.compile(r"^Process (\d+):")


def parse_text(text: str) -> ProcessDump:
    dump = _parse_lines(text.splitlines(), 0)
    if not dump.threads:
        raise DumpError("no thread in the py-spy output")
    return dump


def parse_text_processes(text: str) -> list[ProcessDump]:
    """Every process of a text that holds one dump or several one after another (a loop of
    `py-spy dump --pid P` over a node's ranks): a `Process P:` line starts the next one.
    Processes without a thread are left out; frames and threads keep their line in `text`."""
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if _PROCESS.match(ln)]
    bounds = [0, *starts[1:], len(lines)] if starts else [0, len(lines)]
    dumps = [_parse_lines(lines[a:b], a) for a, b in zip(bounds, bounds[1:], strict=False)]
    return [d for d in dumps if d.threads]


def _parse_lines(lines: list[str], offset: int) -> ProcessDump:
    dump = ProcessDump()
    current: ThreadStack | None = None
    for n, raw in enumerate(lines, offset + 1):
        if m := _PROCESS.match(raw):
            dump.pid = int(m.group(1))
        elif m := _THREAD.match(raw):
            current = ThreadStack(name=m.group(2) or "", active=m.group(1) == "active", at=n)
            dump.threads.append(current)
        elif (current is not None and (m := _FRAME.match(raw))
              and len(current.frames) < MAX_FRAMES):
            current.frames.append(Frame(name=m.group(1), file=m.group(2),
                                        line=int(m.group(3)) if m.group(3) else None, at=n))
    return dump


def parse_dump(text: str) -> ProcessDump:
    """Either form, by its first character."""
    return parse_json(text) if text.lstrip()[:1] == "[" else parse_text(text)
