"""Kernels grouped into families by name, and how each family's time per call changed between
two runs.

A family is the kernel's own name with what varies between launches of "the same" kernel
dropped: template arguments `<...>`, the parameter list `(...)`, a `void`/return-type prefix and
namespaces, tile shapes and layout suffixes (`_128x64_tn`, `_tilesize128x128x16...`, `_align4`,
`_v1`), trailing numbers (`_1`), and NCCL's op/type/algorithm/protocol suffixes
(`ncclDevKernel_AllReduce_Sum_f32_RING_LL` -> `ncclDevKernel_AllReduce`). A generic wrapper
(`cutlass::Kernel<Op>`, `gemvx::kernel`) is named by what it wraps or by its namespace.
Itanium-mangled names (`_ZN...`) are not demangled: their first and last leading identifiers
stand for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from goodput_agent.parsing.kineto.model import GpuOp

from .model import FamilyChange, KernelFamily

_NCCL = re.compile(r"^((?:nccl|rccl)(?:Dev)?Kernel_[A-Za-z]+)")
# from the first tile shape / layout / version marker on, the rest is configuration
_CONFIG = re.compile(r"(_tilesize\d.*|_[A-Z]{0,3}\d+x\d+.*|_(tn|nt|nn|tt)(_.*)?$"
                     r"|_align\d+.*|_v\d+$)")
_TRAILING_NUMBER = re.compile(r"(_\d+)+$")
_GENERIC = frozenset({"kernel", "Kernel", "Kernel2", "device_kernel", "kernel_impl"})
_MANGLED_ID = re.compile(r"(\d+)")


def _scan(name: str) -> tuple[str, str]:
    """The name without template arguments and parameters, and its first template argument."""
    out: list[str] = []
    first: list[str] = []
    depth = 0
    first_done = False
    for ch in name:
        if ch == "<":
            depth += 1
            if depth > 1 and not first_done:
                first.append(ch)
        elif ch == ">" and depth:
            depth -= 1
            if depth == 0:
                first_done = True
            elif not first_done:
                first.append(ch)
        elif depth == 0:
            if ch == "(":
                break
            out.append(ch)
        elif not first_done:
            if ch == "," and depth == 1:
                first_done = True
            else:
                first.append(ch)
    return "".join(out).strip(), "".join(first).strip()


def _mangled(name: str) -> str:
    ids: list[str] = []
    i = 2
    while i < len(name) and len(ids) < 6:
        m = _MANGLED_ID.match(name, i)
        if m is None:
            if name[i] == "L":  # a literal: template arguments from here on
                break
            i += 1
            continue
        n, i = int(m.group(1)), m.end()
        ids.append(name[i:i + n])
        i += n
    keep = [s for s in ids if s not in _GENERIC and len(s) >= 5]
    if not keep:
        return name[:60]
    return keep[0] if len(keep) == 1 else f"{keep[0]}::{keep[-1]}"


def _strip_config(base: str) -> str:
    short = _TRAILING_NUMBER.sub("", _CONFIG.sub("", base))
    return short or base


def family_of(name: str) -> str:
    n = name.strip().replace("(anonymous namespace)", "anon")
    m = _NCCL.match(n)
    if m:
        return m.group(1)
    if n.startswith("_Z"):
        return _mangled(n)
    base, arg = _scan(n.removeprefix("void "))
    if "::" in base and " " in base:  # a return type before a qualified name
        base = base.split()[-1]
    base = base or n[:60]
    parts = [p for p in base.split("::") if p]
    last = parts[-1] if parts else base
    if last in _GENERIC:
        wrapped = _scan(arg)[0].split("::")[-1].strip() if arg else ""
        if wrapped[:1].isalpha() or wrapped[:1] == "_":
            last = wrapped
        elif len(parts) > 1:
            last = f"{parts[-2]}::{last}"
    return _strip_config(last)


def families(ops: Iterable[GpuOp], top: int = 40) -> list[KernelFamily]:
    """Per family and kind: calls, total and mean duration; the `top` by total time."""
    names: dict[str, str] = {}
    acc: dict[tuple[str, str], list[float]] = {}
    for op in ops:
        fam = names.get(op.name)
        if fam is None:
            fam = names[op.name] = family_of(op.name)
        a = acc.get((fam, op.kind))
        if a is None:
            a = acc[(fam, op.kind)] = [0, 0.0]
        a[0] += 1
        a[1] += op.dur
    out = [KernelFamily(family=f, kind=k, calls=int(c), total_us=t, mean_us=t / c)
           for (f, k), (c, t) in acc.items()]
    return sorted(out, key=lambda f: -f.total_us)[:top]


def pooled(groups: Iterable[Iterable[KernelFamily]]) -> list[KernelFamily]:
    """Several ranks' families as one run's: calls and time added up per family and kind."""
    acc: dict[tuple[str, str], list[float]] = {}
    for group in groups:
        for f in group:
            a = acc.setdefault((f.family, f.kind), [0, 0.0])
            a[0] += f.calls
            a[1] += f.total_us
    out = [KernelFamily(family=k[0], kind=k[1], calls=int(c), total_us=t, mean_us=t / c)
           for k, (c, t) in acc.items() if c]
    return sorted(out, key=lambda f: -f.total_us)


def diff(baseline: list[KernelFamily], incident: list[KernelFamily],
         min_calls: int = 3) -> list[FamilyChange]:
    """Families in both runs (at least `min_calls` calls in each), compared per call, sorted by
    the time the change adds to the incident (per-call change times the incident's calls; with
    one step count per run this orders them as the time added per step does)."""
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


def per_call_ratio(baseline: list[KernelFamily], incident: list[KernelFamily],
                   kind: str = "compute", min_calls: int = 3) -> float | None:
    """How much longer the incident's kernels of `kind` take per call than the same families
    in the baseline, weighted by time: incident time / (its calls at baseline means)."""
    base = {(f.family, f.kind): f for f in baseline if f.kind == kind}
    spent = expected = 0.0
    for f in incident:
        b = base.get((f.family, f.kind))
        if f.kind == kind and b is not None and min(b.calls, f.calls) >= min_calls:
            spent += f.total_us
            expected += f.calls * b.mean_us
    return spent / expected if expected > 0 else None
