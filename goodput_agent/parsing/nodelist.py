"""Slurm hostlist expressions ("gpu-[01-04,07]", "rack[1-2]-n[01-02]", "a1,b[3-4]") as host names.

The syntax is Slurm's hostlist: top-level commas separate items; inside an item each bracket
holds comma-separated numbers or ranges ("008-010"), zero padding taken from the range's start;
several brackets in one item expand as a cartesian product. Garbage never raises: an item that
cannot be expanded is returned as it is written.
"""

from __future__ import annotations

import re

MAX_HOSTS = 65_536  # a typo like n[1-99999999] must not allocate a billion names

_EMPTY = {"", "(null)", "none", "none assigned", "n/a", "unknown"}
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def split_top_level(text: str) -> list[str]:
    """Split on commas that are outside brackets: "a[1,2],b" -> ["a[1,2]", "b"]."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def _expand_bracket(body: str, budget: int) -> list[str] | None:
    """"01-03,07" -> ["01", "02", "03", "07"]; None when it is not a numeric set."""
    out: list[str] = []
    for part in body.split(","):
        part = part.strip()
        m = _RANGE.match(part)
        if not m:
            return None
        lo_text, hi_text = m.group(1), m.group(2)
        if hi_text is None:
            out.append(lo_text)
            continue
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo or hi - lo + 1 > budget - len(out):
            return None
        width = len(lo_text) if lo_text.startswith("0") or len(lo_text) == len(hi_text) else 0
        out.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return out


def _expand_item(item: str, budget: int) -> list[str]:
    pieces = re.split(r"(\[[^\[\]]*\])", item)
    names = [""]
    for piece in pieces:
        if not piece:
            continue
        if piece.startswith("[") and piece.endswith("]"):
            values = _expand_bracket(piece[1:-1], budget)
            if values is None or len(names) * len(values) > budget:
                return [item]
            names = [name + value for name in names for value in values]
        elif "[" in piece or "]" in piece:
            return [item]  # unbalanced bracket
        else:
            names = [name + piece for name in names]
    return names


def expand_nodelist(text: str | None, limit: int = MAX_HOSTS) -> list[str]:
    """Host names of a Slurm node list, in order, without duplicates; [] for none/"(null)"."""
    if text is None:
        return []
    text = text.strip().strip('"').strip()
    if text.lower() in _EMPTY or (text.startswith("(") and text.endswith(")")):
        return []  # squeue prints the pending reason, "(Resources)", in NODELIST(REASON)
    hosts: list[str] = []
    seen: set[str] = set()
    for item in split_top_level(text.replace(" ", ",")):
        for name in _expand_item(item, max(1, limit - len(hosts))):
            if name not in seen:
                seen.add(name)
                hosts.append(name)
            if len(hosts) >= limit:
                return hosts
    return hosts


def expand_exactly(text: str, limit: int) -> list[str]:
    """Every host a hostlist names, or ValueError: for an argument a mutating tool will act on,
    an item that cannot be expanded or a list longer than `limit` is refused, never passed on
    as one opaque name (it would count as one node against a blast-radius limit)."""
    hosts: list[str] = []
    for item in split_top_level(text):
        names = _expand_item(item, limit + 1)
        if any("[" in n or "]" in n for n in names):
            raise ValueError(f"cannot expand the host list {item!r} (malformed, or over "
                             f"{limit} hosts)")
        hosts.extend(n for n in names if n not in hosts)
        if len(hosts) > limit:
            raise ValueError(f"{text!r} names more than {limit} hosts")
    if not hosts:
        raise ValueError("no host named")
    return hosts
