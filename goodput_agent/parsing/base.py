"""The one interface every artifact parser implements, and what it returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field, PrivateAttr

from goodput_agent.core.events import Event
from goodput_agent.parsing.timefmt import ClockPolicy


class ParseContext(BaseModel):
    rel_path: str  # path relative to the bundle root, used in every Locator
    node_hint: str | None = None  # from the nearest nodes/<node>/ folder
    rank_hint: int | None = None  # from the file name (rank3.log, rank-3.out, *.rank3.*)
    clock: ClockPolicy = Field(default_factory=ClockPolicy)


class ParseResult(BaseModel):
    format: str
    events: list[Event] = Field(default_factory=list)
    # what a file says about the job's layout, merged across files by the analysis
    rank_hosts: dict[int, str] = Field(default_factory=dict)
    rank_gpus: dict[int, str] = Field(default_factory=dict)
    # format-specific facts (job ids, node lists, windows) as plain JSON-able data
    facts: dict[str, Any] = Field(default_factory=dict)
    lines_read: int = 0
    warnings: list[str] = Field(default_factory=list)
    # the lines with a failure's words a parser's own pass found (parsing/failure_words.py),
    # settled against the events once the caller knows which it keeps; never serialized
    _failure_lines: Any = PrivateAttr(default=None)


class ParseError(Exception):
    """A file of a known format that cannot be read; the message is one line for the user."""


class Parser(Protocol):
    format: str

    def sniff(self, head: str, name: str) -> bool:
        """True when `head` (the decoded first 64 KiB) and the file name look like this format."""
        ...

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult: ...
