"""A model that answers slowly (a small CPU-served model can take minutes) shows on a terminal
that it is working: one status line, rewritten in place twice a second while a request is out,
with how long it has waited and how much it has streamed. Only counts are written, never the
model's text (it is untrusted); nothing is written where stderr is not a terminal."""

from __future__ import annotations

import threading
import time
from typing import TextIO

from goodput_agent.core.untrusted import line

REDRAW_S = 0.5


class TerminalProgress:
    def __init__(self, out: TextIO, model: str) -> None:
        self.out, self.model = out, line(model)
        self.requests = self.chunks = self.chars = 0
        self.since: float | None = None  # when the request in flight went out
        self.width = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()

    @classmethod
    def on_terminal(cls, out: TextIO, model: str) -> TerminalProgress | None:
        isatty = getattr(out, "isatty", None)
        return cls(out, model) if isatty is not None and isatty() else None

    def __call__(self, event: str, size: int) -> None:
        """The client's progress events: "request", "chunk" (its size), "answer"."""
        with self._lock:
            if event == "request":
                self.requests += 1
                self.chunks = self.chars = 0
                self.since = time.monotonic()
            elif event == "chunk":
                self.chunks += 1
                self.chars += size
            elif event == "answer":
                self.since = None
        self._draw()

    def _status(self) -> str | None:
        if self.since is None:
            return None
        waited = time.monotonic() - self.since
        doing = (f"answering, {self.chunks} chunks ({self.chars} characters)" if self.chunks
                 else "waiting for the answer")
        return f"model {self.model}: request {self.requests}, {doing}, {waited:.0f} s"

    def _draw(self) -> None:
        with self._lock:
            status = self._status() or ""
            pad = max(0, self.width - len(status))
            self.out.write(f"\r{status}{' ' * pad}" + ("\r" if not status else ""))
            self.out.flush()
            self.width = len(status)

    def _tick(self) -> None:
        while not self._stop.wait(REDRAW_S):
            if self.since is not None:
                self._draw()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self.since = None
        if self.width:
            self._draw()
