"""The console every command prints on: rich's Console, safe for untrusted text and for a
reader who left (--json is for scripts). What is printed on it lives beside it: a report in
render_report.py (each question's own section in render_slowdown.py and render_latency.py), the
ledger's list and show in render_ledger.py, an action's audit chain in render_actions.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from goodput_agent.cli.term import SETTINGS, WIDE_COLUMNS
from goodput_agent.core.untrusted import safe_segments


class TerminalConsole(Console):
    """rich's Console, except that a reader who left (`goodput ... | head`) is not an error:
    the BrokenPipeError reaches the CLI, which exits 0 (rich's own handler exits 1); and that
    no control character or hyperlink in any text it renders reaches the terminal raw."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if SETTINGS.no_color:
            kwargs.setdefault("no_color", True)
        super().__init__(*args, **kwargs)
        if SETTINGS.wide and "width" not in kwargs:
            self.width = max(self.width, WIDE_COLUMNS)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError

    def render(self, renderable: RenderableType,
               options: ConsoleOptions | None = None) -> Iterable[Segment]:
        return safe_segments(super().render(renderable, options))
