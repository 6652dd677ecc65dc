"""The real-world corpus manifest: our own metadata for each excerpt (where it came from, what it
shows, and a checksum), never the excerpt text, which is read in place from ../shared/."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

MANIFEST = Path(__file__).resolve().parent / "realworld" / "corpus.jsonl"


class ExcerptFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str  # the file name, or its path inside an incident bundle
    source: str
    sha256: str
    bytes: int
    lines: int


class CorpusEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    family: str
    files: list[ExcerptFile]
    label: str
    root_cause: str
    decisive: bool
    why_not_decisive: str | None = None
    confidence: str | None = None
    kind: str | None = None  # what the excerpt is (kernel log, sacct, /metrics, ...)
    note: str | None = None
    node: str | list[str] | None = None
    rank: int | list[int] | None = None

    @property
    def is_incident(self) -> bool:
        return self.family == "incidents"


def describe(path: Path, rel: str, source: str) -> ExcerptFile:
    data = path.read_bytes()
    return ExcerptFile(path=rel, source=source, sha256=hashlib.sha256(data).hexdigest(),
                       bytes=len(data), lines=len(data.splitlines()))


def load(path: Path = MANIFEST) -> list[CorpusEntry]:
    return [CorpusEntry.model_validate_json(line)
            for line in path.read_text().splitlines() if line.strip()]


def dump(entries: list[CorpusEntry], path: Path = MANIFEST) -> None:
    path.write_text("".join(json.dumps(e.model_dump(exclude_none=True)) + "\n" for e in entries))
