"""Typed errors shared by every live source.

Each is one line naming the source and the problem. They subclass BadInput, so a command that
cannot go on without the source prints that line and exits 2; a collector that can go on records
it in the manifest (`kind` says which of these it was) and the report lists the missing evidence.
"""

from __future__ import annotations

from goodput_agent.core.errors import BadInput


class SourceError(BadInput):
    """A live source could not answer. `source` names it ("slurm", "kubernetes", "kernel_log"),
    `command` is what was run or asked (argv joined, or an API path), when there was one."""

    kind = "error"

    def __init__(self, source: str, message: str, command: str | None = None):
        self.source = source
        self.message = " ".join(str(message).split())[:400]
        self.command = command
        super().__init__(f"{source}: {self.message}")


class NotInstalled(SourceError):
    """The client program or library is not on this machine."""

    kind = "not_installed"


class Forbidden(SourceError):
    """The source answered, but this user may not read it."""

    kind = "forbidden"


class NotFound(SourceError):
    """The job, pod or node asked about does not exist (or is no longer known)."""

    kind = "not_found"


class Unreachable(SourceError):
    """The controller / API server / daemon did not answer."""

    kind = "unreachable"


class TimedOut(SourceError):
    """The source did not answer within the time allowed."""

    kind = "timed_out"
