"""Per-rank logs merged into one combined log, and a combined log split into per-rank files.

A combined log is what `srun -l` or torchrun `--tee` writes: each line behind its rank's
prefix, the ranks' lines interleaved by time. Both directions keep every line's content.
"""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from goodput_agent.parsing.job_log import rank_from_filename
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any
from tests.metamorphic.bundle_text import (
    is_trace,
    load_incident,
    read_text,
    text_files,
    under_scheduler,
    write_text,
)
from tests.metamorphic.transforms import CaseInfo

KERNEL_NAMES = ("kern", "dmesg", "syslog", "messages", "journal")
MERGED_NAME = "combined.log"


def _is_job_log(root: Path, path: Path) -> bool:
    return not (is_trace(path) or under_scheduler(root, path) or
                path.name.endswith((".json", ".json.gz", ".om", ".om.gz", ".yaml")) or
                path.name.startswith(KERNEL_NAMES))


def per_rank_groups(root: Path) -> dict[Path, dict[int, Path]]:
    """Folders holding two or more per-rank job logs, each rank's file."""
    groups: dict[Path, dict[int, Path]] = defaultdict(dict)
    for path in text_files(root, metrics=False):
        rank = rank_from_filename(path.name)
        if rank is not None and _is_job_log(root, path):
            groups[path.parent][rank] = path
    return {folder: files for folder, files in groups.items() if len(files) > 1}


def has_per_rank_logs(root: Path, info: CaseInfo) -> bool:
    return bool(per_rank_groups(root))


def _clock(root: Path) -> ClockPolicy:
    spec = load_incident(root)
    policy = ClockPolicy(tz_name=spec.get("timezone") or "UTC")
    start = (spec.get("window") or {}).get("start")
    if start:
        policy.year = datetime.fromisoformat(str(start)).year
    return policy


def _timed_lines(path: Path, tie: int, clock: ClockPolicy) -> list[tuple[float, int, int, str]]:
    """(time, tie order, line number, line): a line without a time takes its predecessor's."""
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out, last = [], float("-inf")
    for i, line in enumerate(lines):
        hit = parse_any(line[:80], clock)
        if hit:
            last = max(last, hit[0].timestamp())  # each rank's lines stay in their order
        out.append((last, tie, i, line))
    return out


def merge_rank_logs(root: Path, info: CaseInfo) -> Path:
    """Each folder's per-rank logs become one combined log with `[rankN]:` or srun -l's
    `N: ` prefixes, interleaved by time; lines of different ranks at the same time come in a
    shuffled rank order (it carries no meaning). The per-rank files are removed."""
    clock = _clock(root)
    for folder, files in per_rank_groups(root).items():
        ranks = sorted(files)
        info.rng("ties").shuffle(ranks)
        streams = [_timed_lines(files[rank], tie, clock) for tie, rank in enumerate(ranks)]
        width = len(str(max(files)))
        labels = info.rng("prefix").random() < 0.5
        merged = []
        for _, tie, _, line in heapq.merge(*streams):
            prefix = f"{ranks[tie]:>{width}}: " if labels else f"[rank{ranks[tie]}]:"
            merged.append(prefix + line)
        for path in files.values():
            path.unlink()
        write_text(folder / MERGED_NAME, "\n".join(merged) + "\n")
    return root


# --------------------------------------------------------------------------- and back

_GLOBAL = re.compile(r"^\[rank(?P<g>\d+)\]:")
_LOCAL = re.compile(r"^\[(?!rank\d)[A-Za-z_][\w-]*?(?P<l>\d+)\]:")
_LOCAL_GLOBAL = re.compile(r"^\[(?!rank\d)[A-Za-z_][\w-]*?(?P<l>\d+)\]:\[rank(?P<g>\d+)\]:")
_LOCAL_NCCL_INIT = re.compile(r"^\[(?!rank\d)[A-Za-z_][\w-]*?(?P<l>\d+)\]:.*? NCCL INFO .*?\brank "
                              r"(?P<g>\d+) nranks (?P<n>\d+)")
_LABEL = re.compile(r"^\s*(?P<g>\d{1,6}): ")


def _local_to_global(lines: list[str]) -> dict[int, int] | None:
    """Local rank -> global rank from lines that show both; None if a local rank maps to two."""
    world = max((int(m["n"]) for line in lines if (m := _LOCAL_NCCL_INIT.match(line))), default=0)
    pairs: dict[int, set[int]] = defaultdict(set)
    for line in lines:
        m = _LOCAL_GLOBAL.match(line) or _LOCAL_NCCL_INIT.match(line)
        if m and (m.groupdict().get("n") is None or int(m["n"]) == world):
            pairs[int(m["l"])].add(int(m["g"]))
    if any(len(g) != 1 for g in pairs.values()):
        return None
    return {local: next(iter(g)) for local, g in pairs.items()}


def split_plan(lines: list[str]) -> list[tuple[int | None, str]] | None:
    """Each line's global rank and its text without the launcher's prefix (None: not a rank's
    line), or None when the file is not a combined log whose ranks are all known."""
    mapping = _local_to_global(lines) or {}
    plan: list[tuple[int | None, str]] = []
    for line in lines:
        if (m := _LABEL.match(line)) and not _LOCAL.match(line[m.end():]):
            inner = _GLOBAL.match(line[m.end():])
            if inner and inner["g"] != m["g"]:
                return None  # the label numbers launchers, not ranks
            plan.append((int(m["g"]), line[m.end():]))
        elif m := _LOCAL.match(line):
            if int(m["l"]) not in mapping:
                return None
            plan.append((mapping[int(m["l"])], line[m.end():]))
        elif m := _GLOBAL.match(line):
            plan.append((int(m["g"]), line[m.end():]))
        elif _LABEL.match(line):
            return None  # an srun label on a per-node launcher: its ranks are not given
        else:
            plan.append((None, line))
    ranks = {r for r, _ in plan if r is not None}
    return plan if len(ranks) > 1 else None


def combined_logs(root: Path) -> dict[Path, list[tuple[int | None, str]]]:
    out = {}
    for path in text_files(root, metrics=False):
        if _is_job_log(root, path) and rank_from_filename(path.name) is None:
            lines = read_text(path).split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if (plan := split_plan(lines)) is not None:
                out[path] = plan
    return out


def has_combined_log(root: Path, info: CaseInfo) -> bool:
    return bool(combined_logs(root))


def split_combined_logs(root: Path, info: CaseInfo) -> Path:
    """Each combined log becomes one file per rank (`<name>.rank<N>.log`, prefix removed)
    beside it; its unprefixed lines (launcher, srun) stay in the original file."""
    for path, plan in combined_logs(root).items():
        by_rank: dict[int, list[str]] = defaultdict(list)
        rest = []
        for rank, text in plan:
            (by_rank[rank] if rank is not None else rest).append(text)
        stem = path.name.split(".", 1)[0]
        for rank, lines in by_rank.items():
            write_text(path.with_name(f"{stem}.rank{rank}.log"), "\n".join(lines) + "\n")
        if rest:
            write_text(path, "\n".join(rest) + "\n")
        else:
            path.unlink()
    return root
