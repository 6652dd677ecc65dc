"""This host's kernel log over a time window: `journalctl -k -o short-iso` when the journal holds
it, else `dmesg --time-format iso` cut to the window here. Bounded in time and in bytes (the
newest lines are kept). Both failing is one clear error naming both attempts.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel

from goodput_agent.metrics.source import TimeWindow
from goodput_agent.sources.errors import Forbidden, NotInstalled, SourceError, TimedOut

SOURCE = "kernel_log"
MAX_BYTES = 16 * 1024 * 1024
_ISO_START = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[,.](\d+))?([+-]\d\d:?\d\d|Z)?")
_NO_JOURNAL = re.compile(r"no journal files were found|-- no entries --|no such file", re.I)


class KernelLogOutput(BaseModel):
    name: str  # kern.log (journalctl) or dmesg.txt
    argv: list[str]
    text: str
    truncated: bool = False

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


def _utc_text(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _bounded(text: str, max_bytes: int) -> tuple[str, bool]:
    data = text.encode("utf-8", errors="replace")
    if len(data) <= max_bytes:
        return text, False
    tail = data[-max_bytes:]
    tail = tail[tail.find(b"\n") + 1:]
    return tail.decode("utf-8", errors="replace"), True


def _line_time(line: str) -> datetime | None:
    m = _ISO_START.match(line)
    if not m:
        return None
    zone = (m.group(3) or "+00:00").replace("Z", "+00:00")
    if len(zone) == 5:  # +0000
        zone = zone[:3] + ":" + zone[3:]
    try:
        return datetime.fromisoformat(m.group(1) + zone)
    except ValueError:
        return None


def in_window(text: str, window: TimeWindow) -> str:
    """dmesg lines (ISO times) inside the window; untimed lines follow the line before."""
    keep: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        ts = _line_time(line)
        if ts is not None:
            inside = window.start <= ts <= window.end
        if inside:
            keep.append(line)
    return "".join(keep)


class KernelLog:
    def __init__(self, timeout_s: float = 20.0, max_bytes: int = MAX_BYTES,
                 env: dict[str, str] | None = None):
        self.timeout_s, self.max_bytes = timeout_s, max_bytes
        self.env = dict(os.environ if env is None else env)

    def _run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=self.env,
                                  timeout=self.timeout_s, check=False, errors="replace")
        except FileNotFoundError:
            raise NotInstalled(SOURCE, f"{argv[0]}: not installed here",
                               shlex.join(argv)) from None
        except subprocess.TimeoutExpired:
            raise TimedOut(SOURCE, f"{argv[0]} did not answer in {self.timeout_s:g} s",
                           shlex.join(argv)) from None

    def journalctl(self, window: TimeWindow) -> KernelLogOutput:
        argv = ["journalctl", "-k", "-o", "short-iso", "--no-pager", "--quiet",
                "--since", _utc_text(window.start), "--until", _utc_text(window.end)]
        p = self._run(argv)
        body = p.stdout if p.returncode == 0 else ""
        lines = [ln for ln in body.splitlines() if ln.strip() and not _NO_JOURNAL.search(ln)]
        if p.returncode != 0 or not lines:
            why = " ".join((p.stderr or p.stdout or "no entries").split())[:200]
            if re.search(r"permission|not permitted|access", why, re.I):
                raise Forbidden(SOURCE, f"journalctl: {why}", shlex.join(argv))
            raise SourceError(SOURCE, f"journalctl: {why}", shlex.join(argv))
        text, cut = _bounded(body, self.max_bytes)
        return KernelLogOutput(name="kern.log", argv=argv, text=text, truncated=cut)

    def dmesg(self, window: TimeWindow) -> KernelLogOutput:
        argv = ["dmesg", "--time-format", "iso"]
        p = self._run(argv)
        if p.returncode != 0:
            why = " ".join((p.stderr or p.stdout or f"exit {p.returncode}").split())[:200]
            cls = Forbidden if re.search(r"not permitted|permission", why, re.I) else SourceError
            raise cls(SOURCE, f"dmesg: {why}", shlex.join(argv))
        text, cut = _bounded(in_window(p.stdout, window), self.max_bytes)
        return KernelLogOutput(name="dmesg.txt", argv=argv, text=text, truncated=cut)

    def read(self, window: TimeWindow) -> KernelLogOutput:
        """The journal's kernel lines, else dmesg's; neither: one error naming both."""
        try:
            return self.journalctl(window)
        except SourceError as first:
            try:
                return self.dmesg(window)
            except SourceError as second:
                kind = type(second) if type(first) is type(second) else SourceError
                raise kind(SOURCE, f"{first.message}; {second.message}",
                           f"{first.command}; {second.command}") from None


def job_window(start: datetime | None, end: datetime | None,
               before: timedelta = timedelta(minutes=10),
               after: timedelta = timedelta(minutes=5)) -> TimeWindow:
    """A job's run with margins: the kernel often speaks first (an Xid before the crash)."""
    now = datetime.now(UTC)
    start = start or now - timedelta(hours=1)
    end = end or now
    return TimeWindow(start=start - before, end=max(end + after, start - before
                                                    + timedelta(seconds=1)))
