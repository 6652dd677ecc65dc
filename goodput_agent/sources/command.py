"""What running one command gave: the live sources run read commands, and the same record is
what the approval gate's runner returns for the mutating commands it executes."""

from __future__ import annotations

from pydantic import BaseModel


class CommandResult(BaseModel):
    argv: list[str]
    rc: int
    stdout: str = ""
    stderr: str = ""
