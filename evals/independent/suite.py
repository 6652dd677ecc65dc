"""The whole held-out suite, deterministic for a seed: every failure class, slowdown cause and
latency cause in several variants, and the real-world shapes of issue 24 (shapes.py), written
as bundle folders with their answer keys."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from . import failures_gpu, failures_job, failures_node
from .case import Case

Maker = Callable[[random.Random, str, int], Case]
FAILURES: dict[str, tuple[Maker, int]] = {
    "gpu_hardware": (failures_gpu.gpu_hardware, 6),
    "gpu_oom": (failures_gpu.gpu_oom, 3),
    "host_oom": (failures_node.host_oom, 4),
    "application_error": (failures_job.application_error, 4),
    "network_fault": (failures_node.network_fault, 4),
    "node_failure": (failures_node.node_failure, 3),
    "time_limit": (failures_job.time_limit, 3),
    "preempted": (failures_job.preempted, 3),
    "hang": (failures_job.hang, 4),
}


def _makers() -> list[tuple[str, str, Maker, int]]:
    from . import latency, slowdown
    from .shapes import SHAPES

    rows = [("f", name, maker, n) for name, (maker, n) in FAILURES.items()]
    rows += [("s", name, maker, n) for name, (maker, n) in slowdown.CAUSES.items()]
    rows += [("l", name, maker, n) for name, (maker, n) in latency.CAUSES.items()]
    return rows + list(SHAPES)


def generate_cases(seed: int, kinds: str = "fsl", per_kind: int | None = None) -> list[Case]:
    """kinds: which of failure (f), slowdown (s), latency (l); per_kind: at most that many
    variants of each class (all by default)."""
    cases = []
    for prefix, name, maker, count in _makers():
        if prefix not in kinds:
            continue
        for variant in range(min(count, per_kind or count)):
            rng = random.Random(f"{seed}:{name}:{variant}")
            cases.append(maker(rng, f"{prefix}-{name}-{variant + 1:02d}", variant))
    return cases


def generate_suite(out: Path, seed: int) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for case in generate_cases(seed):
        case.write(out)
    return out
