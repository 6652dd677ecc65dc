"""`dcgmi diag` (NVIDIA DCGM's diagnostic), read as it prints its result table.

DCGM 3.x writes one row per test with the GPUs that failed in the result cell, continuation
rows below (`| GPU Memory | Pass - GPUs: 0, 1 |`, `| | Fail - GPU: 4 |`); DCGM 4.x writes the
test's overall result, then one row per GPU (`| memory | Fail |`, `| | GPU4: Fail |`). A
`Warning` row after a test says why. Tables are split into sections by `-----  Hardware  ---`
lines: a failed test of the Hardware, Integration (PCIe) or Stress sections is the GPU's own
health record of a fault; Metadata and Deployment (persistence mode, permissions, a driver
library missing) describe the node's setup, not its GPUs, so they are not read as faults.
A diagnostic also fails when the device is busy or unavailable to it (NVIDIA/go-dcgm#52: a
GPU Memory Fail whose warning is `CUDA-capable device(s) is/are busy or unavailable`), and it
runs when someone runs it, not when the job failed: weight 0.85 and no time of its own.
"""

from __future__ import annotations

import re

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext

HEADER = re.compile(r"^\|\s*Diagnostic\s*\|\s*Result\s*\|", re.M)
_SECTION = re.compile(r"^[|+]-+\s+(?P<name>[A-Za-z][\w ]*?)\s+-+\+")
_ROW = re.compile(r"^\|\s*(?P<test>[^|]*?)\s*\|(?P<cell>[^|]*)\|\s*$")
_FAIL_LIST = re.compile(r"^Fail\s*-\s*(?:GPUs?:\s*(?P<gpus>[\d,\s]+)|(?P<all>All))", re.I)
_GPU_FAIL = re.compile(r"^GPU\s*(?P<gpu>\d+)\s*:\s*Fail", re.I)
_FAULT_SECTIONS = frozenset({"hardware", "integration", "stress", "performance"})
WEIGHT = 0.85


def _failed_gpus(result: str) -> list[str | None] | None:
    """The GPUs a result cell says failed ([None] for all or unnamed), None when none did."""
    if m := _FAIL_LIST.match(result):
        return [None] if m["all"] else [g.strip() for g in m["gpus"].split(",") if g.strip()]
    if m := _GPU_FAIL.match(result):
        return [m["gpu"]]
    return [None] if result.lower() == "fail" else None


def dcgmi_events(lines: list[str], ctx: ParseContext) -> list[Event]:
    # (test, gpu) -> [line no, line, the warning's wrapped pieces (text, cell width)]
    failed: dict[tuple[str, str | None], list] = {}
    section = test = ""
    last: list[list] = []  # the records the test row just read failed
    why_for: list[list] = []  # the records a Warning row (and its wrapped rows) explains
    for n, line in enumerate(lines, 1):
        if m := _SECTION.match(line):
            section, test, last, why_for = m["name"].strip().lower(), "", [], []
            continue
        if not (m := _ROW.match(line)) or section not in _FAULT_SECTIONS:
            continue
        name, result = m["test"], m["cell"].strip()
        if name.lower().startswith("warning") or (not name and why_for):
            why_for = why_for if not name else last
            for rec in why_for:
                rec[2].append((result, len(m["cell"]) - 2))
            continue
        why_for = []
        if name.lower().startswith("info"):
            continue
        test = name or test
        gpus = _failed_gpus(result)
        if gpus is None:
            continue
        if any(g is not None for g in gpus):
            failed.pop((test, None), None)  # DCGM 4.x: the per-GPU rows name them
        last = [failed.setdefault((test, g), [n, line, []]) for g in gpus]
    return [_event(ctx, test, gpu, *rec) for (test, gpu), rec in failed.items()]


def _unwrapped(pieces: list[tuple[str, int]]) -> str:
    """DCGM wraps a cell at its width, mid-word: a piece that filled its cell continues
    without a space."""
    out = ""
    for i, (piece, _) in enumerate(pieces):
        full = i and len(pieces[i - 1][0]) >= pieces[i - 1][1]
        out += piece if not i or full else f" {piece}"
    return out


def _event(ctx: ParseContext, test: str, gpu: str | None, n: int, line: str,
           why: list[tuple[str, int]]) -> Event:
    which = f"GPU {gpu}" if gpu is not None else "the GPUs"
    because = f": {_unwrapped(why)[:200]}" if why else ""
    return Event(kind=EventKind.gpu_device_unhealthy, role=Role.primary, category="gpu_hardware",
                 ts=None, clock=Clock.none, node=ctx.node_hint, gpu=gpu,
                 summary=f"dcgmi diag: {which} failed the {test} test{because}",
                 excerpt=line.strip()[:500], locator=Locator(path=ctx.rel_path, line_start=n,
                                                             line_end=n),
                 detail={"weight": WEIGHT, "dcgmi_test": test, "health_check": "dcgmi diag"})
