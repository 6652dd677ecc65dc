"""Kernels grouped into families by name (templates, arguments and tile shapes dropped), and
how each family's time per call changed between two runs."""

from __future__ import annotations

import re
from collections import defaultdict

from goodput_agent.analysis.slowdown_model import FamilyChange, KernelFamily
from goodput_agent.parsing.trace_model import GpuOp

_TEMPLATE = re.compile(r"<[^<>]*>")
_ARGS = re.compile(r"\(.*$")
_NCCL = re.compile(r"^(nccl(?:Dev)?Kernel_[A-Za-z]+)")
_SHAPE = re.compile(r"(_\d+x\d+(x\d+)?\w*|_(tn|nt|nn|tt)\b.*|_sm\d+\w*|_\d+$)")


def family_of(name: str) -> str:
    n = name.removeprefix("void ").strip()
    m = _NCCL.match(n)
    if m:
        return m.group(1)
    while "<" in n and _TEMPLATE.search(n):
        n = _TEMPLATE.sub("", n)
    n = _ARGS.sub("", n).split("::")[-1] if "::" in n else _ARGS.sub("", n)
    return _SHAPE.sub("", n).strip() or name[:60]


def families(ops: list[GpuOp], steps: int = 1, top: int = 40) -> list[KernelFamily]:
    acc: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for op in ops:
        a = acc[(family_of(op.name), op.kind)]
        a[0] += 1
        a[1] += op.dur
    out = [KernelFamily(family=f, kind=k, calls=int(c), total_us=t, mean_us=t / c)
           for (f, k), (c, t) in acc.items()]
    return sorted(out, key=lambda f: -f.total_us)[:top]


def diff(baseline: list[KernelFamily], incident: list[KernelFamily],
         min_calls: int = 3) -> list[FamilyChange]:
    """Families in both runs, per call, sorted by the time the change adds."""
    base = {(f.family, f.kind): f for f in baseline}
    out = []
    for f in incident:
        b = base.get((f.family, f.kind))
        if b is None or b.mean_us <= 0 or min(b.calls, f.calls) < min_calls:
            continue
        out.append(FamilyChange(family=f.family, kind=f.kind, baseline_mean_us=b.mean_us,
                                incident_mean_us=f.mean_us, ratio=f.mean_us / b.mean_us,
                                calls=f.calls))
    return sorted(out, key=lambda c: -(c.incident_mean_us - c.baseline_mean_us) * c.calls)
