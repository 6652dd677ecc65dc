"""A generated case: its files (relative path -> text) and its answer key."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field


class Expected(BaseModel):
    case_id: str
    kind: str = "failure"
    category: str
    node: str | None = None
    rank: int | None = None
    notes: str
    change_at: str | None = None  # latency: the planted change (UTC ISO)
    # the most confidence the bundle supports: what would confirm the verdict is missing from
    # it (the kernel's record of a kill, a trace of a slowdown), or the answer is `unknown`
    # and a guess is acceptable only below it
    max_confidence: float | None = None


class Case(BaseModel):
    expected: Expected
    files: dict[str, str] = Field(default_factory=dict)
    binary: dict[str, bytes] = Field(default_factory=dict)

    def write(self, root: Path) -> Path:
        folder = root / self.expected.case_id
        for rel, text in self.files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        for rel, data in self.binary.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        (folder / "expected.json").write_text(
            json.dumps(self.expected.model_dump(exclude_none=True), indent=2) + "\n")
        return folder
