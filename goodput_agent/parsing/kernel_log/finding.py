"""What one kernel message says (a Finding), and the PCI address form findings use."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from goodput_agent.core.events import EventKind, Role


@dataclass(slots=True)
class Finding:
    kind: EventKind
    role: Role
    category: str | None
    summary: str
    gpu: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    merge: tuple[str, str] | None = None  # lines with the same key nearby are one Event


_PCI = re.compile(r"(?:(?P<dom>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})"
                  r"(?:\.[0-7])?")


def norm_pci(text: str | None) -> str | None:
    """'PCI:0000:3B:00.0' / '00000000:3b:00' / '3b:00' -> '0000:3b:00'; None when not an id."""
    if not text:
        return None
    m = _PCI.search(text)
    if not m:
        return None
    dom = int(m["dom"], 16) if m["dom"] else 0
    return f"{dom:04x}:{m['bus'].lower()}:{m['dev'].lower()}"


def int_or_none(text: str | None) -> int | None:
    text = (text or "").strip("'")
    return int(text) if text.isdigit() else None
