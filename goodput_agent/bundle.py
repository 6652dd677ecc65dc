"""An incident bundle: a directory (or .tar.gz of one) of artifacts, each identified by content.

Nothing is silently dropped: every file is either read by a parser or listed as unread with
the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable, Collection
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from goodput_agent.collect.base import MANIFEST_NAME, read_manifest
from goodput_agent.core.errors import BadInput
from goodput_agent.core.incident import IncidentSpec, load_incident
from goodput_agent.core.limits import limits
from goodput_agent.core.parallel import LocalRunner, Runner
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.job_log import rank_from_filename
from goodput_agent.parsing.lines import read_head, strip_ansi
from goodput_agent.parsing.registry import identify, identify_deep, parse_file, parsers
from goodput_agent.parsing.timefmt import ClockPolicy
from goodput_agent.unpack import unpack

INCIDENT_NAMES = ("incident.yaml", "incident.yml")
_YEAR = re.compile(rb"\b(20\d\d)-[01]\d-[0-3]\d")
SNIFF_BYTES = 16 * 1024  # enough lines to tell every format apart
PARALLEL_BYTES = 64 * 1024 * 1024  # below this, worker processes cost more than they save


class BundleFile(BaseModel):
    rel_path: str
    size: int
    format: str | None = None
    node_hint: str | None = None
    rank_hint: int | None = None
    # text no format claimed, read as free text: it answers what is asked, never decides
    # which question the bundle asks
    free_text: bool = False


class Unread(BaseModel):
    path: str
    reason: str


class Inventory(BaseModel):
    root: str
    files: list[BundleFile] = Field(default_factory=list)
    unread: list[Unread] = Field(default_factory=list)
    incident: IncidentSpec = Field(default_factory=IncidentSpec)
    clock: ClockPolicy = Field(default_factory=ClockPolicy)
    # what `goodput collect` could not collect (its manifest.json's errors), one line each
    missing: list[str] = Field(default_factory=list)

    def of_format(self, *formats: str) -> list[BundleFile]:
        return [f for f in self.files if f.format in formats]


def node_hint_for(rel: PurePosixPath) -> str | None:
    parts = rel.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "nodes" and i + 1 < len(parts) - 1:
            return parts[i + 1]
    return None


def _looks_binary(head: bytes) -> bool:
    if not head:
        return False
    if b"\x00" in head[:8192]:
        return True
    sample = head[:8192]
    text = sum(32 <= b < 127 or b in (9, 10, 13) or b >= 128 for b in sample)
    return text / len(sample) < 0.85


class Bundle:
    """An opened bundle: its inventory, and the parsed contents of its files (parsed once)."""

    def __init__(self, root: Path, inventory: Inventory, cleanup: Path | None = None):
        self.root = root
        self.inventory = inventory
        self._cleanup = cleanup
        self._parsed: dict[str, ParseResult] = {}
        self._ahead: dict[str, ParseResult | str | None] = {}  # read ahead, not yet asked for
        # where per-file work runs (goodput_agent.core.parallel): None, this machine's cores
        self.runner: Runner | None = None

    @property
    def unpacked(self) -> bool:
        """Its files were unpacked from an archive into this machine's temporary folder."""
        return self._cleanup is not None

    def close(self) -> None:
        if self._cleanup:
            shutil.rmtree(self._cleanup, ignore_errors=True)
            self._cleanup = None

    def __enter__(self) -> Bundle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def parse(self, f: BundleFile) -> ParseResult | None:
        """The file's parse result; a file that fails to parse moves to `unread` with the reason."""
        if f.rel_path not in self._parsed:
            outcome = self._ahead.pop(f.rel_path) if f.rel_path in self._ahead else \
                _parse_one(self.root, f, self.inventory.clock)
            self._store(f, outcome)
        return self._parsed.get(f.rel_path)

    def read_ahead(self, formats: Collection[str],
                   progress: Callable[[int, int], None] | None = None) -> None:
        """Parse every file of `formats` now, in one fan-out, for tools that will ask for them
        in turn: one pool over all of them keeps every core busy to the end (biggest first),
        where a pool per tool waits on each tool's last file. The results are handed out as the
        tools ask (parse_many), so what a tool sees, and when a file that failed to parse joins
        `unread`, is unchanged."""
        files = [f for f in self.inventory.of_format(*formats)
                 if f.rel_path not in self._parsed and f.rel_path not in self._ahead]
        self._ahead.update(zip((f.rel_path for f in files), self._fan_out(files, progress),
                               strict=True))

    def parse_many(self, files: list[BundleFile],
                   progress: Callable[[int, int], None] | None = None,
                   ) -> list[tuple[BundleFile, ParseResult]]:
        """Parse files, through `runner` when one is set (a cluster), else on every core when
        they are big enough to be worth it; `progress` is told (bytes done, bytes total)."""
        todo = [f for f in files if f.rel_path not in self._parsed]
        fresh = [f for f in todo if f.rel_path not in self._ahead]
        computed = dict(zip((f.rel_path for f in fresh), self._fan_out(fresh, progress),
                            strict=True))
        for f in todo:
            self._store(f, self._ahead.pop(f.rel_path) if f.rel_path in self._ahead
                        else computed[f.rel_path])
        return [(f, self._parsed[f.rel_path]) for f in files if f.rel_path in self._parsed]

    def _fan_out(self, todo: list[BundleFile], progress: Callable[[int, int], None] | None
                 ) -> list[ParseResult | str | None]:
        total, done = sum(f.size for f in todo), 0
        runner = self.runner
        if runner is None:
            cores = os.cpu_count() or 1
            big = len(todo) > 1 and cores > 1 and total > PARALLEL_BYTES
            runner = LocalRunner(cores if big else 1)

        def finished(i: int) -> None:
            nonlocal done
            done += todo[i].size
            if progress:
                progress(done, total)

        root = self.root if self.runner is None else self.root.resolve()  # read elsewhere
        return runner.map_files(
            _parse_one, [(root, f, self.inventory.clock) for f in todo],
            where=[f.node_hint for f in todo], sizes=[f.size for f in todo],
            on_done=finished, here_only=self.unpacked)

    def _store(self, f: BundleFile, outcome: ParseResult | str | None) -> None:
        if isinstance(outcome, str):
            self.mark_unread(f, outcome)
        elif outcome is not None:
            self._parsed[f.rel_path] = outcome

    def mark_unread(self, f: BundleFile, reason: str) -> None:
        self.inventory.files = [x for x in self.inventory.files if x.rel_path != f.rel_path]
        self.inventory.unread.append(Unread(path=f.rel_path, reason=reason))


def _parse_one(root: Path, f: BundleFile, clock: ClockPolicy) -> ParseResult | str | None:
    """A parse result, or the one-line reason the file could not be read."""
    parser = next((p for p in parsers() if p.format == f.format), None)
    if parser is None:
        return None
    ctx = ParseContext(rel_path=f.rel_path, node_hint=f.node_hint, rank_hint=f.rank_hint,
                       clock=clock)
    try:
        return parse_file(parser, root / f.rel_path, ctx)
    except ParseError as exc:
        return str(exc).splitlines()[0] if str(exc) else f"{f.rel_path}: cannot parse"
    except Exception as exc:  # noqa: BLE001 - one odd file must not end the investigation
        return f"{f.rel_path}: {f.format} parser failed: {type(exc).__name__}: {exc}" \
            .splitlines()[0][:300]


def open_bundle(path: Path, ignore: tuple[str, ...] = ()) -> Bundle:
    path = path.expanduser()
    if not path.exists():
        raise BadInput(f"{path}: no such file or directory")
    cleanup: Path | None = None
    if path.is_file():
        try:
            is_tar = tarfile.is_tarfile(path)
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise BadInput(f"{path}: cannot read as an archive: {exc}".splitlines()[0]) from None
        if not is_tar:
            raise BadInput(f"{path}: not a bundle (expected a directory or a .tar.gz of one)")
        cleanup = Path(tempfile.mkdtemp(prefix="goodput-bundle-"))
        try:
            unpack(path, cleanup, limits())
        except (tarfile.TarError, OSError, EOFError) as exc:
            shutil.rmtree(cleanup, ignore_errors=True)
            raise BadInput(f"{path}: cannot unpack: {exc}".splitlines()[0]) from None
        except BadInput:
            shutil.rmtree(cleanup, ignore_errors=True)
            raise
        entries = [p for p in cleanup.iterdir()]
        root = entries[0] if len(entries) == 1 and entries[0].is_dir() else cleanup
    else:
        root = _unwrapped(path)
    try:
        inventory = scan(root, ignore)
    except BadInput:
        if cleanup:
            shutil.rmtree(cleanup, ignore_errors=True)
        raise
    return Bundle(root, inventory, cleanup)


def _unwrapped(folder: Path) -> Path:
    """The bundle's own folder when `folder` holds nothing but it, with its incident.yaml (what
    `tar xzf` of a bundle packed with its folder leaves where the user points): otherwise the
    question, window and zone would be lost one level down."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return folder  # scan reports the unreadable folder
    inner = entries[0] if len(entries) == 1 else None
    if inner is not None and inner.is_dir() and not inner.is_symlink() and \
            any((inner / name).is_file() for name in INCIDENT_NAMES):
        return inner
    return folder


PARALLEL_SNIFF_FILES = 256  # identify files on every core past this many


class _Identified(BaseModel):
    rel_path: str
    size: int = 0
    format: str | None = None
    reason: str | None = None  # why it is unread
    year: int | None = None
    free_text: bool = False


def _walk(root: Path, unreadable: list[str], cap: int) -> list[Path]:
    """Every entry that is not a directory (symlinks, fifos and devices included, so that they
    are listed), noting folders that cannot be read; BadInput past `cap` entries, as soon as
    it is passed (a bundle of a million files is refused, not read)."""
    out: list[Path] = []
    for folder, dirs, files in os.walk(root, onerror=lambda e: unreadable.append(e.filename)):
        base = Path(folder)
        out.extend(base / f for f in files)
        out.extend(base / d for d in dirs if (base / d).is_symlink())
        if len(out) > cap:
            raise BadInput(f"{root}: more than {cap:,} files (the limit: set "
                           "GOODPUT_MAX_BUNDLE_FILES to raise it, or point at the part of the "
                           "folder that holds the incident)")
    return out


def _identify(path: Path, rel: str) -> _Identified:
    if path.is_symlink():
        return _Identified(rel_path=rel, reason="symbolic link (not followed)")
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # reading a FIFO would block
            return _Identified(rel_path=rel, reason="not a regular file (fifo, socket or device)")
        with path.open("rb") as fh:
            fh.read(1)
    except OSError as exc:
        return _Identified(rel_path=rel, reason=f"cannot read: {exc.strerror}")
    size = st.st_size
    if size == 0:
        return _Identified(rel_path=rel, reason="empty file")
    raw = read_head(path, SNIFF_BYTES)
    if not raw:
        return _Identified(rel_path=rel, size=size,
                           reason="cannot read (compressed data corrupt?)")
    parser = identify(strip_ansi(raw).decode("utf-8", errors="replace"), path.name)
    if parser is None and len(raw) >= SNIFF_BYTES and not _looks_binary(raw):
        parser = identify_deep(path)  # lines it understands further in: never drop the file
    if parser is None:
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            reason = "UTF-16 text (convert it: iconv -f UTF-16 -t UTF-8)"
        elif raw.startswith((b"\x1f\x8b", b"PK\x03\x04")):
            reason = "nested archive (not unpacked: unpack it into the bundle)"
        elif _looks_binary(raw):
            reason = "binary file"
        else:  # text no format claims: read as free text (its decisive lines, failure words)
            return _Identified(rel_path=rel, size=size, format=FREE_TEXT,
                               year=_year(raw), free_text=True)
        return _Identified(rel_path=rel, size=size, reason=reason)
    return _Identified(rel_path=rel, size=size, format=parser.format, year=_year(raw))


FREE_TEXT = "job_log"  # the format whose parser reads any text: what no other format claims


def _year(raw: bytes) -> int | None:
    m = _YEAR.search(raw)
    return int(m.group(1)) if m else None


def scan(root: Path, ignore: tuple[str, ...] = ()) -> Inventory:
    """Identify every file; `ignore` names root-level files that are not evidence (answer keys)."""
    inv = Inventory(root=str(root))
    unreadable: list[str] = []
    all_files = sorted(p for p in _walk(root, unreadable, limits().bundle_files)
                       if p.relative_to(root).as_posix() not in ignore)
    inv.unread.extend(Unread(path=str(Path(d).relative_to(root)), reason="cannot read folder")
                      for d in unreadable)
    if not all_files:
        raise BadInput(f"{root}: the bundle is empty (no files found)")
    evidence: list[tuple[Path, str]] = []
    for p in all_files:
        rel = p.relative_to(root).as_posix()
        if p.name in INCIDENT_NAMES and "/" not in rel and not p.is_symlink():
            inv.incident = load_incident(p, rel)
        elif rel == MANIFEST_NAME and not p.is_symlink() and (m := read_manifest(p)):
            inv.missing = m.missing_evidence()
        else:
            evidence.append((p, rel))
    cores = os.cpu_count() or 1
    if len(evidence) > PARALLEL_SNIFF_FILES and cores > 1:
        parsers()  # imported here, once: forked workers inherit them instead of each importing
        with ProcessPoolExecutor(max_workers=cores) as pool:
            found = list(pool.map(_identify, *zip(*evidence, strict=True), chunksize=64))
    else:
        found = [_identify(p, rel) for p, rel in evidence]
    years = [f.year for f in found if f.year]
    for f in found:
        if f.format is None:
            inv.unread.append(Unread(path=f.rel_path, reason=f.reason or "not read"))
            continue
        rel = PurePosixPath(f.rel_path)
        inv.files.append(BundleFile(rel_path=f.rel_path, size=f.size, format=f.format,
                                    node_hint=node_hint_for(rel),
                                    rank_hint=rank_from_filename(rel.name),
                                    free_text=f.free_text))
    inv.clock = _clock_policy(inv.incident, years)
    return inv


def _clock_policy(incident: IncidentSpec, years: list[int]) -> ClockPolicy:
    policy = ClockPolicy()
    if incident.timezone:
        policy.tz_name = incident.timezone
    if incident.window:
        policy.year = incident.window.start.year
        policy.anchor = incident.window.start
    elif years:
        policy.year = max(set(years), key=years.count)
    return policy
