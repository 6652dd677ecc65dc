"""Local ranks and srun labels to global ranks, from the evidence in the same file."""

from __future__ import annotations

from dataclasses import dataclass

from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log.prefixes import LinePrefix
from goodput_agent.parsing.job_log.state import Pending


def rank_offsets(pairs: set[tuple[int | None, int, int]]) -> dict[int | None, int]:
    """global - local per srun task (node), where every piece of evidence agrees."""
    seen: dict[int | None, set[int]] = {}
    for label, local, rank in pairs:
        seen.setdefault(label, set()).add(rank - local)
    return {label: next(iter(v)) for label, v in seen.items() if len(v) == 1}


@dataclass(slots=True)
class RankResolver:
    ctx: ParseContext
    offsets: dict[int | None, int]
    single_node: bool
    labels_are_nodes: bool
    pid_rank: dict[tuple[str, int], int]
    file_rank: int | None = None

    def local_to_global(self, label: int | None, local: int) -> int | None:
        if label in self.offsets:
            return local + self.offsets[label]
        if self.single_node:
            return local
        return None

    def prefix_rank(self, p: LinePrefix) -> int | None:
        if p.rank is not None:
            return p.rank
        if p.local is not None:
            return self.local_to_global(p.label, p.local)
        if p.label is not None and not self.labels_are_nodes:
            return p.label
        return None

    def rank(self, p: Pending) -> int | None:
        r = self.prefix_rank(p.prefix)
        if r is not None:
            return r
        if p.local is not None:
            r = self.local_to_global(p.prefix.label, p.local)
            if r is not None:
                return r
        if p.host_pid and p.host_pid in self.pid_rank:
            return self.pid_rank[p.host_pid]
        if p.prefix == LinePrefix() and p.local is None:
            return self.ctx.rank_hint if self.ctx.rank_hint is not None else self.file_rank
        return None
