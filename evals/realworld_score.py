"""How a corpus label from a public thread maps onto the product's categories, and how one
investigated entry is judged against it (node and rank too where the label names them).

`healthy` means the thread shows nothing failed, which the product answers with `unknown`.
`other` and `unknown` say the cause is outside the taxonomy or not established: never decisive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from goodput_agent.evals.corpus_manifest import CorpusEntry
from goodput_agent.report import Report

LABEL_TO_CATEGORY = {
    "gpu_hardware": "gpu_hardware", "gpu_oom": "gpu_oom", "host_oom": "host_oom",
    "application_error": "application_error", "network": "network_fault",
    "time_limit": "time_limit", "preempted": "preempted", "node_failure": "node_failure",
    "hang": "hang", "timeout": "hang", "kv_cache_preemption": "kv_cache_pressure",
    "healthy": "unknown",
}
UNDECIDABLE_LABELS = frozenset({"other", "unknown"})
LABELS = frozenset(LABEL_TO_CATEGORY) | UNDECIDABLE_LABELS
# Hangs caused by one rank's own work are labelled application_error in their threads; the
# product calls that class `hang`, so both are accepted there.
HANG_BY_OWN_WORK = frozenset({"accelerate314_timeout_one_rank_reading_200G_file",
                              "autocast381_postfit_allreduce_timeout_rank0_barrier"})


def present(root: Path, entry: CorpusEntry) -> Path | None:
    """The entry's folder under a copy of the corpus text when every file of it is there."""
    base = root / entry.family / (entry.id if entry.is_incident else "")
    return base if all((base / f.path).is_file() for f in entry.files) else None


@dataclass
class Score:
    checked: int = 0
    mismatches: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)  # entries whose text no copy holds

    @property
    def rate(self) -> float:
        return (self.checked - len(self.mismatches)) / self.checked if self.checked else 0.0

    def judge(self, entry: CorpusEntry, report: Report) -> None:
        """Count a decisive label: its category, and its node and rank where it names them."""
        if not entry.decisive or entry.label not in LABEL_TO_CATEGORY:
            return
        self.checked += 1
        rc = report.root_cause
        want = {LABEL_TO_CATEGORY[entry.label]} | ({"hang"} if entry.id in HANG_BY_OWN_WORK
                                                   else set())
        wrong = []
        unread = {u for u in report.unread} & {f.path for f in entry.files}
        if len(unread) * 2 > len(entry.files):  # an answer from files it could not read
            wrong.append(f"{len(unread)} of {len(entry.files)} file(s) unread: no judgement")
        elif rc.category not in want:
            wrong.append(f"category {rc.category} (thread: {entry.label})")
        if entry.node and rc.node != entry.node:
            wrong.append(f"node {rc.node} (thread: {entry.node})")
        if entry.rank is not None and rc.rank != entry.rank:
            wrong.append(f"rank {rc.rank} (thread: {entry.rank})")
        if wrong:
            self.mismatches.append(f"{entry.id}: " + ", ".join(wrong))
