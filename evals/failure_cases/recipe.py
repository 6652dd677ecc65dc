"""What a recipe fixes about a case before the seed decides the rest."""

from __future__ import annotations

from dataclasses import dataclass

from goodput_agent.evals.cluster.spec import LayoutName, Platform, TorchStyle

AGENT_LAYOUTS: tuple[LayoutName, ...] = ("torchrun_node", "torchrun_rankfiles")


SRUN_LAYOUTS: tuple[LayoutName, ...] = ("srun_per_rank", "srun_l")


_VOLUME = (
    "the culprit node prints the fewest error lines: torchelastic SIGTERMs its siblings "
    "within a second, while every other node prints NCCL watchdog timeouts ~{timeout} min later"
)


@dataclass(frozen=True)
class Recipe:
    category: str
    variant: str
    platform: Platform = "slurm"
    misleading: bool = False
    retry: bool | None = False
    notes: str = ""
    decoys: tuple[str, ...] = ()
    kill: bool = False
    layouts: tuple[LayoutName, ...] = ()
    torch: tuple[TorchStyle, ...] = ()
    extras: tuple[str, ...] = ()
    sched: str | None = None
    culprit: str = "any"  # any | master | not_master
    culprit_kernel: str | None = "keep"  # keep | None (missing) | a style
    tz: str | None = None  # None: random, "UTC", "local": a non-UTC zone
    nodes: tuple[int, ...] = ()
    gpn: tuple[int, ...] = ()
