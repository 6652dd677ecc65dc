"""A model that answers slowly (a small CPU-served model can take minutes) shows on a terminal
that it is working: one status line, rewritten in place at most a few times a second, with how
much it has streamed and for how long. Only counts are written, never the model's text (it is
untrusted); nothing is written where stderr is not a terminal."""

from __future__ import annotations

import time
from typing import TextIO

from goodput_agent.untrusted import line

REDRAW_S = 0.25


class TerminalProgress:
    def __init__(self, out: TextIO, model: str) -> None:
        self.out, self.model = out, line(model)
        self.started = time.monotonic()
        self.pieces = self.chars = 0
        self.drawn_at = 0.0
        self.width = 0

    @classmethod
    def on_terminal(cls, out: TextIO, model: str) -> TerminalProgress | None:
        isatty = getattr(out, "isatty", None)
        return cls(out, model) if isatty is not None and isatty() else None

    def chunk(self, chars: int) -> None:
        """Told of each streamed chunk of an answer (text or tool-call arguments)."""
        self.pieces += 1
        self.chars += chars
        now = time.monotonic()
        if now - self.drawn_at >= REDRAW_S:
            self.drawn_at = now
            self._draw(f"model {self.model}: answering, {self.pieces} pieces "
                       f"({self.chars} characters), {now - self.started:.0f} s")

    def _draw(self, status: str) -> None:
        pad = max(0, self.width - len(status))
        self.out.write(f"\r{status}{' ' * pad}")
        self.out.flush()
        self.width = len(status)

    def close(self) -> None:
        if self.width:
            self.out.write(f"\r{' ' * self.width}\r")
            self.out.flush()
            self.width = 0
