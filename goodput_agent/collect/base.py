"""Writing a bundle from live sources: every file redacted before it is written, and a
manifest.json saying what was collected, from where, by which command or query, over which
time window, and what could not be collected (the errors become the report's unknowns).

Names that come from a cluster (node names, pod names) are untrusted: a relative path that
would leave the bundle is refused.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from goodput_agent import __version__
from goodput_agent.core.errors import BadInput
from goodput_agent.core.redact import redact, redact_data
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.sources.errors import SourceError

MANIFEST_NAME = "manifest.json"
MANIFEST_SCHEMA = "goodput.manifest/v1"
MAX_FILE_BYTES = 64 * 1024 * 1024  # per copied log: its first and last halves beyond this


class CollectedFile(BaseModel):
    path: str  # inside the bundle, POSIX
    source: str  # slurm, kernel_log, kubernetes, nvml, ...
    what: str  # "sacct of job 12", "stdout of job 12"
    command: str | None = None  # the command line that produced it (redacted)
    query: str | None = None  # an API path or query, for sources that are not commands
    origin: str | None = None  # the host, file or URL it came from
    bytes: int = 0
    truncated: str | None = None  # what was left out, when the source was too big
    redacted: bool = False  # a secret was masked in it
    collected_at: datetime


class CollectError(BaseModel):
    source: str
    what: str  # the evidence that is missing, in words
    kind: str  # not_installed / forbidden / not_found / unreachable / timed_out / error
    error: str
    command: str | None = None


class Manifest(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    schema_: Literal["goodput.manifest/v1"] = Field(default=MANIFEST_SCHEMA, alias="schema")
    goodput_version: str = __version__
    created_at: datetime
    host: str
    target: dict[str, str] = Field(default_factory=dict)  # {"slurm_job": "12"}
    window: TimeWindow | None = None
    files: list[CollectedFile] = Field(default_factory=list)
    errors: list[CollectError] = Field(default_factory=list)

    def missing_evidence(self) -> list[str]:
        """One line per error, as the report's unknowns list them."""
        return [f"missing evidence: {e.what} ({e.source}, {e.kind.replace('_', ' ')}: "
                f"{e.error})" for e in self.errors]


def read_manifest(path: Path) -> Manifest | None:
    """The collector's manifest, or None when the file is something else named manifest.json."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_SCHEMA:
        return None
    try:
        return Manifest.model_validate(doc)
    except ValidationError:
        return None


def safe_rel(rel: str) -> PurePosixPath:
    """A relative path that stays inside the bundle (no '..', not absolute, no empty parts)."""
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") or "\x00" in part
                                             for part in p.parts):
        raise BadInput(f"{rel!r}: not a safe path inside a bundle")
    return p


def command_text(argv: Sequence[str]) -> str:
    return redact(shlex.join(argv))


class BundleWriter:
    """Writes one bundle. Use as a context manager, or call finish() to write the manifest."""

    def __init__(self, root: Path, target: dict[str, str], window: TimeWindow | None = None,
                 max_file_bytes: int = MAX_FILE_BYTES):
        root = root.expanduser()
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise BadInput(f"{root}: exists and is not an empty folder (collect into a new one)")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInput(f"{root}: cannot create: {exc.strerror}") from None
        self.root = root
        self.max_file_bytes = max_file_bytes
        self.manifest = Manifest(created_at=datetime.now(UTC), host=socket.gethostname(),
                                 target=target, window=window)

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def _target(self, rel: str) -> Path:
        path = self.root.joinpath(*safe_rel(rel).parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _record(self, rel: str, size: int, redacted: bool, source: str, what: str,
                command: Sequence[str] | None, query: str | None, origin: str | None,
                truncated: str | None = None) -> None:
        self.manifest.files.append(CollectedFile(
            path=str(safe_rel(rel)), source=source, what=what,
            command=command_text(command) if command else None,
            query=redact(query) if query else None, origin=origin, bytes=size,
            truncated=truncated, redacted=redacted, collected_at=datetime.now(UTC)))

    def write_text(self, rel: str, text: str, *, source: str, what: str,
                   command: Sequence[str] | None = None, query: str | None = None,
                   origin: str | None = None) -> Path:
        """Write command output (or an API answer) redacted."""
        clean = redact(text)
        path = self._target(rel)
        data = clean.encode("utf-8")
        path.write_bytes(data)
        self._record(rel, len(data), clean != text, source, what, command, query, origin)
        return path

    def copy_file(self, rel: str, src: Path, *, source: str, what: str,
                  origin: str | None = None) -> Path | None:
        """Copy a log file redacted, line by line; beyond max_file_bytes its first and last
        halves are kept (the first failure and the end both matter). A file that cannot be read
        becomes an error in the manifest, and None is returned."""
        try:
            size = src.stat().st_size
            with src.open("rb") as fh:
                if size <= self.max_file_bytes:
                    chunks, truncated = [fh.read()], None
                else:
                    half = self.max_file_bytes // 2
                    head = fh.read(half)
                    fh.seek(size - half)
                    tail = fh.read()
                    head = head[:head.rfind(b"\n") + 1] or head
                    tail = tail[tail.find(b"\n") + 1:] or tail
                    chunks = [head, tail]
                    truncated = (f"{size - len(head) - len(tail)} bytes in the middle of "
                                 f"{size} left out")
        except FileNotFoundError:
            self.error(source, what, "not_found", f"{src}: no such file", origin=origin)
            return None
        except PermissionError:
            self.error(source, what, "forbidden", f"{src}: permission denied", origin=origin)
            return None
        except OSError as exc:
            self.error(source, what, "error", f"{src}: {exc.strerror}", origin=origin)
            return None
        path = self._target(rel)
        redacted = False
        written = 0
        with path.open("w", encoding="utf-8") as out:
            for chunk in chunks:
                for line in chunk.decode("utf-8", errors="replace").splitlines(keepends=True):
                    clean = redact(line)
                    redacted |= clean != line
                    written += out.write(clean)
        self._record(rel, written, redacted, source, what, None, None, origin or str(src),
                     truncated)
        return path

    def error(self, source: str, what: str, kind: str, message: str,
              command: str | None = None, origin: str | None = None) -> None:
        where = f" on {origin}" if origin and origin not in message else ""
        self.manifest.errors.append(CollectError(
            source=source, what=what, kind=kind, error=redact(" ".join(message.split()))[:400]
            + where, command=redact(command) if command else None))

    def source_error(self, what: str, exc: SourceError) -> None:
        """Record a typed source error as missing evidence."""
        self.error(exc.source, what, exc.kind, exc.message, exc.command)

    def write_incident(self, spec: dict[str, object]) -> Path:
        """incident.yaml (the question, job, window, timezone) as bundle.py reads it."""
        path = self._target("incident.yaml")
        path.write_text(yaml.safe_dump(redact_data(spec), sort_keys=False), encoding="utf-8")
        return path

    def finish(self) -> Manifest:
        path = self.root / MANIFEST_NAME
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(self.manifest.model_dump_json(by_alias=True, indent=2), encoding="utf-8")
        os.replace(tmp, path)
        return self.manifest
