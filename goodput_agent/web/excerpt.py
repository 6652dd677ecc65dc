"""An evidence item's source in context: the lines around a `file:line[-line]` locator, read
from the bundle the investigation was run on while it is still readable, else the excerpt the
ledger stored (and the page says which). Lines are redacted as the ledger's excerpts are."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from goodput_agent.core.redact import redact
from goodput_agent.parsing.lines import iter_lines

CONTEXT_LINES = 8
_FILE_LINES = re.compile(r"^(?P<path>[^\[\]]+?):(?P<a>\d+)(?:-(?P<b>\d+))?$")


@dataclass(frozen=True, slots=True)
class FileLocator:
    path: str  # relative to the bundle's root
    first: int
    last: int


@dataclass(slots=True)
class Line:
    number: int
    text: str
    matched: bool


@dataclass(slots=True)
class SourceView:
    origin: str  # "bundle" (read from the file now) or "ledger" (the stored excerpt)
    why: str  # one line for the page: where the lines come from, or why not the file
    path: str | None = None
    lines: list[Line] = field(default_factory=list)
    differs: bool = False  # the file's lines no longer match the stored excerpt


def parse_locator(locator: str) -> FileLocator | None:
    """`nodes/n3/kern.log:14-15` -> (path, 14, 15); None for query and trace locators."""
    m = _FILE_LINES.match(locator.strip())
    if m is None:
        return None
    a = int(m["a"])
    b = int(m["b"]) if m["b"] else a
    if a < 1 or b < a:
        return None
    return FileLocator(m["path"], a, b)


def _inside(root: Path, rel: str) -> Path | None:
    """`rel` under `root`, refusing absolute paths and `..` (a locator is data, not a path
    to follow anywhere)."""
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts:
        return None
    return root / p


def bundle_root(target: str | None, cwd: Path | None = None) -> Path | None:
    """The bundle directory an investigation was run on, when it is still a directory here
    (a relative target is taken from the server's working directory)."""
    if not target:
        return None
    root = Path(target).expanduser()
    if not root.is_absolute():
        root = (cwd or Path.cwd()) / root
    return root if root.is_dir() else None


def _stored(excerpt: str, why: str) -> SourceView:
    return SourceView(origin="ledger", why=why,
                      lines=[Line(0, t, True) for t in (excerpt or "").splitlines() or [""]])


def source_view(target: str | None, locator: str, excerpt: str,
                context: int = CONTEXT_LINES, cwd: Path | None = None) -> SourceView:
    loc = parse_locator(locator)
    if loc is None:
        return _stored(excerpt, "not a file and line: the stored excerpt is shown (the "
                                "pictures below draw the trace and the metrics)")
    root = bundle_root(target, cwd)
    if root is None:
        return _stored(excerpt, f"the bundle {target!r} is no longer readable as a directory "
                                "here: the excerpt stored in the ledger is shown")
    path = _inside(root, loc.path)
    if path is None or not path.is_file():
        return _stored(excerpt, f"{loc.path} is not in the bundle any more: the excerpt "
                                "stored in the ledger is shown")
    lo, hi = max(1, loc.first - context), loc.last + context
    lines: list[Line] = []
    try:
        for n, text in iter_lines(path):
            if n > hi:
                break
            if n >= lo:
                lines.append(Line(n, redact(text), loc.first <= n <= loc.last))
    except (OSError, EOFError) as exc:
        return _stored(excerpt, f"{loc.path}: cannot read ({exc}): the excerpt stored in the "
                                "ledger is shown")
    matched = [ln.text for ln in lines if ln.matched]
    if not matched:
        return _stored(excerpt, f"{loc.path} has fewer than {loc.first} lines now: the excerpt "
                                "stored in the ledger is shown")
    stored_first = (excerpt or "").splitlines()[:1]
    differs = bool(stored_first) and matched[0].strip() != stored_first[0].strip()
    return SourceView(origin="bundle", why=f"read from {path} now", path=loc.path,
                      lines=lines, differs=differs)


_TRACE_STEP = re.compile(r"^(?P<path>[^\[\]]+?) \[step (?P<n>\d+)\b")


def trace_step(locator: str) -> tuple[str, int] | None:
    """`traces/r0.pt.trace.json.gz [step 4: ...]` -> (path, 4); None for other locators."""
    m = _TRACE_STEP.match(locator.strip())
    return (m["path"], int(m["n"])) if m else None


def draw_trace_step(target: str | None, locator: str, out: Path,
                    cwd: Path | None = None) -> Path | None:
    """The step a trace evidence item names, drawn as the CLI's step timeline (`goodput trace
    timeline`) from the bundle's trace file; None when the bundle or the file is gone. A trace
    that no longer loads or has no such step raises BadInput (one line)."""
    from goodput_agent.analysis.slowdown.trace_select import load_one, pick_step
    from goodput_agent.pictures.trace_timeline import draw_step_timeline

    found = trace_step(locator)
    root = bundle_root(target, cwd)
    if found is None or root is None:
        return None
    path = _inside(root, found[0])
    if path is None or not path.is_file():
        return None
    if out.is_file():
        return out
    trace = load_one(path, rel_path=found[0])
    step, breakdown = pick_step(trace, found[1])
    return draw_step_timeline(trace, step, breakdown, out)
