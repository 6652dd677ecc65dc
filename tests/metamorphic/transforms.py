"""Changes to a bundle that must not move the verdict: each a small function on a copy.

A transform takes the bundle copy's root and what is known about the case, changes the copy in
place and returns the bundle's path (a new one only when it packs the bundle into an archive).
"""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.metamorphic.bundle_text import (
    INCIDENT,
    evidence_files,
    is_trace,
    load_incident,
    read_text,
    rewrite,
    save_incident,
    text_files,
    under_scheduler,
    write_text,
)

ALL_KINDS = frozenset({"failure", "slowdown", "latency"})


@dataclass(frozen=True)
class CaseInfo:
    """What a transform may know about the case: its kind and the original verdict's node."""

    name: str
    kind: str
    node: str | None = None

    def rng(self, purpose: str) -> random.Random:
        return random.Random(f"{self.name}/{purpose}")  # deterministic per case and use


@dataclass(frozen=True)
class Transform:
    name: str
    apply: Callable[[Path, CaseInfo], Path]
    applies: Callable[[Path, CaseInfo], bool] = lambda root, info: True
    kinds: frozenset[str] = field(default=ALL_KINDS)
    introduces_fqdn: bool = False

    def usable(self, root: Path, info: CaseInfo) -> bool:
        return info.kind in self.kinds and self.applies(root, info)


# --------------------------------------------------------------------------- folders and names

# run folders are renamed to another name the contract gives the same meaning
RUN_FOLDER_SYNONYMS = {"baseline": "good", "good": "control", "control": "before",
                       "before": "base", "base": "baseline", "incident": "slow-run",
                       "after": "regressed"}
FOLDER_NAMES = {"logs": "job-output", "slurm": "scheduler-dump", "k8s": "kube-state",
                "flight_recorder": "fr-dumps", "metrics": "telemetry", "config": "engine-config",
                "traces": "profiles", "profiler": "torch-profiler"}
NEST = "collected/incident-files"


def rename_and_nest(root: Path, info: CaseInfo) -> Path:
    """Folders renamed (run folders to a synonym) and everything nested two levels deeper;
    `nodes/<node>/` keeps its name, as the contract requires."""
    moves: list[tuple[Path, Path]] = []
    for path in evidence_files(root):
        parts = list(path.relative_to(root).parts)
        for i, part in enumerate(parts[:-1]):
            if i > 0 and parts[i - 1] == "nodes":
                continue  # a node's name
            parts[i] = RUN_FOLDER_SYNONYMS.get(part, FOLDER_NAMES.get(part, part))
        moves.append((path, root / NEST / Path(*parts)))
    for src, dst in moves:
        dst.parent.mkdir(parents=True, exist_ok=True)
        src.rename(dst)
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return root


def wrap_in_folder(root: Path, info: CaseInfo) -> Path:
    """The whole bundle, incident.yaml too, one folder down: what `tar xzf` of a bundle packed
    with its folder leaves where the user points."""
    inner = root / f"incident-{info.name}"
    entries = list(root.iterdir())
    inner.mkdir()
    for entry in entries:
        entry.rename(inner / entry.name)
    return root


EXTRA_FILES: dict[str, bytes] = {
    "notes/README.txt": b"Attached for the ticket. Collected by the on-call engineer.\n"
                        b"Contact the team channel with questions.\n",
    "extras/hparams.json": json.dumps({"lr": 3e-4, "global_batch": 128, "seq_len": 4096,
                                       "optimizer": "adamw", "warmup_steps": 2000}).encode(),
    "extras/requirements.txt": b"torch==2.5.1\nnumpy==1.26.4\ntransformers==4.46.0\n",
    "extras/loss_curve.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
}


def add_extra_files(root: Path, info: CaseInfo) -> Path:
    for rel, data in EXTRA_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


# --------------------------------------------------------------------------- encodings


def to_crlf(root: Path, info: CaseInfo) -> Path:
    """Windows line ends in every text file and in incident.yaml, and a UTF-8 byte order mark
    (as Notepad or PowerShell's Out-File write it) at the start of every other file."""
    def crlf(text: str) -> str:
        return re.sub(r"(?<!\r)\n", "\r\n", text)

    for i, path in enumerate([root / INCIDENT, *text_files(root)]):
        if path.exists():
            rewrite(path, lambda text, bom=i % 2 == 0: ("\ufeff" if bom else "") + crlf(text))
    return root


def toggle_gzip(root: Path, info: CaseInfo) -> Path:
    """Every text file compressed (name + .gz), and every compressed one unpacked; traces are
    left as they are (already compressed, and big)."""
    for path in list(text_files(root)):
        if path.suffix == ".gz":
            target = path.with_suffix("")
            target.write_bytes(gzip.decompress(path.read_bytes()))
        else:
            target = path.with_name(path.name + ".gz")
            target.write_bytes(gzip.compress(path.read_bytes(), compresslevel=6, mtime=0))
        path.unlink()
    return root


def pack_tar_gz(root: Path, info: CaseInfo) -> Path:
    """The bundle as a .tar.gz holding one top folder, as `tar czf x.tar.gz x` makes it."""
    archive = root.with_name(root.name + ".tar.gz")
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        tar.add(root, arcname=f"incident-{info.name}")
    shutil.rmtree(root)
    return archive


# --------------------------------------------------------------------------- host names

_NCCL_HOST = re.compile(
    r"^(?:\s*\d+: )?(?:\[\w+\]:)*(?P<host>[A-Za-z][\w.-]*):\d+:\d+ \[\d+\] NCCL", re.M)
_TRACE_NAME = re.compile(r"^(?P<host>.+)_(?P<pid>\d+)\.(?P<ts>\d+)\.pt\.trace\.json(?:\.gz)?$")
_IP = re.compile(r"^\d+\.\d+\.\d+\.\d+$")


def bundle_hosts(root: Path, info: CaseInfo) -> list[str]:
    """The node names the bundle uses: node folders, Kubernetes nodes, trace file names, the
    verdict's node and (without Kubernetes, where they would be pod names) NCCL host prefixes."""
    hosts: set[str] = {info.node} if info.node else set()
    k8s = False
    for path in evidence_files(root):
        parts = path.relative_to(root).parts
        hosts.update(parts[i + 1] for i, p in enumerate(parts[:-2]) if p == "nodes")
        if m := _TRACE_NAME.match(path.name):
            hosts.add(m["host"])
        if parts[0] == "k8s":
            k8s = True
            if path.name.startswith("nodes"):
                items = json.loads(read_text(path)).get("items", [])
                hosts.update(i["metadata"]["name"] for i in items)
    if not k8s:
        for path in text_files(root, metrics=False):
            hosts.update(m["host"] for m in _NCCL_HOST.finditer(read_text(path)[:200_000]))
    return sorted(h for h in hosts if not _IP.match(h))


def other_form(host: str) -> str:
    """The short name of a qualified host; the qualified name of a short one."""
    return host.split(".", 1)[0] if "." in host else f"{host}.cluster.example"


def _host_pattern(host: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(host)}(?![\w-]|\.[A-Za-z0-9])")


def qualify_hosts(root: Path, info: CaseInfo) -> Path:
    """Host names switched between short and qualified form in some sources but not others, as
    real clusters do: the scheduler and srun keep its names; kernel logs, job logs and DCGM
    scrapes use the other form; half the node folders and half the trace file names too."""
    hosts = bundle_hosts(root, info)
    patterns = [(_host_pattern(h), other_form(h)) for h in sorted(hosts, key=len, reverse=True)]

    def swap(text: str) -> str:
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if "srun:" in line or "slurmstepd" in line:
                continue  # Slurm's own messages name nodes as Slurm does
            for pattern, new in patterns:
                if pattern.search(line):
                    line = pattern.sub(new, line)
            lines[i] = line
        return "\n".join(lines)

    for path in list(text_files(root)):
        if not under_scheduler(root, path) and info.kind != "latency":
            rewrite(path, swap)
    odd = set(hosts[1::2])
    for path in sorted(evidence_files(root), reverse=True):
        if (m := _TRACE_NAME.match(path.name)) and m["host"] in hosts and m["host"] not in odd:
            path.rename(path.with_name(other_form(m["host"]) + path.name[len(m["host"]):]))
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        if folder.parent.name == "nodes" and folder.name in odd:
            folder.rename(folder.with_name(other_form(folder.name)))
    return root


def has_hosts(root: Path, info: CaseInfo) -> bool:
    return bool(bundle_hosts(root, info))


# --------------------------------------------------------------------------- order

_RANK_NUMBER = re.compile(r"(?i)(?<=rank)([_-]?)(\d{1,2})(?=[._-]|$)")


def shuffle_order(root: Path, info: CaseInfo) -> Path:
    """Orders that carry no meaning, changed: rank numbers in file names zero-padded (rank10
    now sorts after rank09, not before rank2), Kubernetes list items shuffled, trace files'
    process ids redrawn (which permutes the ranks' files)."""
    rng = info.rng("order")
    for path in list(evidence_files(root)):
        if m := _TRACE_NAME.match(path.name):
            pid = rng.randrange(1000, 4_000_000)
            path.rename(path.with_name(f"{m['host']}_{pid}.{m['ts']}" + path.name[m.end("ts"):]))
        elif not is_trace(path) and _RANK_NUMBER.search(path.name):
            path.rename(path.with_name(_RANK_NUMBER.sub(lambda r: r[1] + r[2].zfill(3),
                                                        path.name, count=1)))
    for path in text_files(root):
        if under_scheduler(root, path) and path.suffix == ".json":
            doc = json.loads(read_text(path))
            if isinstance(doc.get("items"), list):
                rng.shuffle(doc["items"])
                write_text(path, json.dumps(doc, indent=2))
    return root


# --------------------------------------------------------------------------- the question

REWORDED = {
    "failure": "training throughput was fine, then it got slower, looked like a hang and "
               "job {job} died overnight; was it an SLO problem or did something fail?",
    "slowdown": "why is the new run slower? the step-time SLO is missed, throughput dropped "
                "and it almost looks like a hang between steps",
    "latency": "requests feel slower and seem to hang before the first token; p99 is over "
               "the SLO while throughput is flat: why?",
}


def reword_question(root: Path, info: CaseInfo) -> Path:
    """Another wording of the same question, with the words other questions use ("slower",
    "SLO", "throughput", "hang"); the declared kind is dropped, so the question must be told
    from the words and the files."""
    spec = load_incident(root)
    spec.pop("kind", None)
    spec["question"] = REWORDED[info.kind].format(job=spec.get("job", "the job"))
    save_incident(root, spec)
    return root
