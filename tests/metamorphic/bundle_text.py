"""Reading and rewriting the files of a bundle copy: text (plain or gzip) and incident.yaml."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

INCIDENT = "incident.yaml"
ANSWER_KEY = "expected.json"
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
SCHEDULER_FOLDERS = ("slurm", "k8s")


def is_trace(path: Path) -> bool:
    """A Kineto trace (big, epoch-stamped, host only in its name): never rewritten."""
    name = path.name
    return name.endswith(TRACE_SUFFIXES) or "/traces/" in path.as_posix() and \
        name.endswith((".json", ".json.gz"))


def is_metrics(path: Path) -> bool:
    return path.name.endswith((".om", ".om.gz", ".prom", ".prom.gz"))


def read_text(path: Path) -> str:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return raw.decode("utf-8", errors="surrogateescape")


def write_text(path: Path, text: str) -> None:
    raw = text.encode("utf-8", errors="surrogateescape")
    path.write_bytes(gzip.compress(raw, mtime=0) if path.suffix == ".gz" else raw)


def evidence_files(root: Path) -> Iterator[Path]:
    """Every file but the answer key and the question, in a stable order."""
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.relative_to(root).as_posix() not in (ANSWER_KEY, INCIDENT):
            yield path


def text_files(root: Path, *, traces: bool = False, metrics: bool = True) -> Iterator[Path]:
    """Evidence files that hold text (logs, scheduler output, JSON), skipping binary ones."""
    for path in evidence_files(root):
        if not traces and is_trace(path) or not metrics and is_metrics(path):
            continue
        try:
            head = read_text(path)[:4096]
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
        if "\x00" not in head:
            yield path


def rewrite(path: Path, edit: Callable[[str], str]) -> None:
    text = read_text(path)
    new = edit(text)
    if new != text:
        write_text(path, new)


def load_incident(root: Path) -> dict:
    path = root / INCIDENT
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def save_incident(root: Path, spec: dict) -> None:
    (root / INCIDENT).write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True),
                                 encoding="utf-8")


def under_scheduler(root: Path, path: Path) -> bool:
    """Scheduler output (Slurm, Kubernetes): it names nodes as the scheduler does."""
    return path.relative_to(root).parts[0] in SCHEDULER_FOLDERS
