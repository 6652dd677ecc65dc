"""The scheduler / serving / framework part of the real-world corpus (evals/realworld/): how a
label from a public thread maps onto the product's categories, and how one entry is judged.

Labels use the shared corpus's rough vocabulary plus the scheduler's own end states; `healthy`
means the thread shows nothing failed, which the product answers with `unknown` (exit 3).
`other` and `unknown` say the thread's cause is outside the taxonomy or not established, so
they are never decisive.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from goodput_agent.report import Report

REALWORLD = Path(__file__).resolve().parents[2] / "evals" / "realworld"
SINGLE_FAMILIES = ("slurm", "k8s", "vllm", "frameworks")
INCIDENTS = REALWORLD / "incidents"
METADATA = ("SOURCE.json", "label.json")

LABEL_TO_CATEGORY = {
    "gpu_hardware": "gpu_hardware", "gpu_oom": "gpu_oom", "host_oom": "host_oom",
    "application_error": "application_error", "network": "network_fault",
    "time_limit": "time_limit", "preempted": "preempted", "node_failure": "node_failure",
    "hang": "hang", "kv_cache_preemption": "kv_cache_pressure", "healthy": "unknown",
}
UNDECIDABLE_LABELS = frozenset({"other", "unknown"})
LABELS = frozenset(LABEL_TO_CATEGORY) | UNDECIDABLE_LABELS


def single_entries() -> list[tuple[Path, dict]]:
    """(excerpt, sidecar) of every single excerpt in this part of the corpus."""
    out = []
    for family in SINGLE_FAMILIES:
        for side in sorted((REALWORLD / family).glob("*.json")):
            meta = json.loads(side.read_text())
            out.append((side.parent / meta["file"], meta))
    return out


def incident_dirs() -> list[Path]:
    return sorted(p for p in INCIDENTS.iterdir() if p.is_dir())


@dataclass
class Score:
    checked: int = 0
    mismatches: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return (self.checked - len(self.mismatches)) / self.checked if self.checked else 0.0

    def judge(self, name: str, label: dict, report: Report) -> None:
        """Count a decisive label: its category, and its node and rank where it names them."""
        if not label.get("decisive"):
            return
        self.checked += 1
        rc = report.root_cause
        want = LABEL_TO_CATEGORY[label["label"]]
        wrong = []
        if rc.category != want:
            wrong.append(f"category {rc.category} (thread: {want})")
        if label.get("node") and rc.node != label["node"]:
            wrong.append(f"node {rc.node} (thread: {label['node']})")
        if label.get("rank") is not None and rc.rank != label["rank"]:
            wrong.append(f"rank {rc.rank} (thread: {label['rank']})")
        if wrong:
            self.mismatches.append(f"{name}: " + ", ".join(wrong))


def check_label_fields(name: str, label: dict) -> list[str]:
    """What is missing or inconsistent in one label (sidecar or label.json)."""
    problems = []
    if label.get("label") not in LABELS:
        problems.append(f"{name}: label {label.get('label')!r} is not in the vocabulary")
    if not isinstance(label.get("decisive"), bool):
        problems.append(f"{name}: 'decisive' must be true or false")
    elif not label["decisive"] and not label.get("why_not_decisive"):
        problems.append(f"{name}: a label that is not decisive says why")
    elif label["decisive"] and label.get("label") in UNDECIDABLE_LABELS:
        problems.append(f"{name}: label {label['label']!r} cannot be decisive")
    if not label.get("root_cause"):
        problems.append(f"{name}: no root_cause (the thread's resolution)")
    return problems
