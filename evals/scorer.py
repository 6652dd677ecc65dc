"""`goodput eval`: run the offline planner over generated cases and score it against a
trivial baseline (blame the node with the most error lines), so the gain is visible."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from goodput_agent.analysis.observations import short_name
from goodput_agent.errors import BadInput

ANSWER_KEYS = ("expected.json",)  # the case's answer, not evidence
ERROR_WORDS = ("error", "fail", "timeout", "timed out", "killed", "abort", "exception", "xid")


class CaseResult(BaseModel):
    case_id: str
    expected_category: str
    expected_node: str | None
    got_category: str
    got_node: str | None
    expected_rank: int | None = None
    got_rank: int | None = None
    confidence: float
    baseline_category: str
    baseline_node: str | None
    misleading: bool = False
    kind: str = "failure"
    change_error_s: float | None = None  # latency: |chosen change point - planted change|

    @property
    def category_ok(self) -> bool:
        return self.got_category == self.expected_category

    @property
    def node_ok(self) -> bool:
        return _same_node(self.got_node, self.expected_node)


class Scores(BaseModel):
    cases: list[CaseResult] = Field(default_factory=list)
    category_accuracy: float = 0.0
    node_accuracy: float = 0.0
    baseline_category_accuracy: float = 0.0
    baseline_node_accuracy: float = 0.0
    rank_accuracy: float = 0.0  # over the cases whose answer names a rank
    windows_within_5min: float | None = None  # latency: share of changes found within 5 min
    per_category: dict[str, dict[str, float]] = Field(default_factory=dict)
    confusion: dict[str, dict[str, int]] = Field(default_factory=dict)


def _same_node(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return short_name(a) == short_name(b)


def default_cases_dir() -> Path:
    return Path(__file__).resolve().parent / "cases"


SUITES = {"failure": "cases", "slowdown": "slowdown_cases", "latency": "latency_cases"}
# what a hurried engineer concludes without the analysis
NAIVE = {"slowdown": "gpu_throttling",  # "the step got longer, so the GPU got slower"
         "latency": "queueing"}  # "latency rose, so raise the batch limits"


def suite_dir(name: str) -> Path:
    return Path(__file__).resolve().parent / SUITES[name]


def _change_error(report_latency: dict | None, expected: dict) -> float | None:
    from datetime import datetime

    got = ((report_latency or {}).get("windows") or {}).get("change_at")
    want = expected.get("change_at")
    if not got or not want:
        return None
    return abs((datetime.fromisoformat(str(got).replace("Z", "+00:00"))
                - datetime.fromisoformat(str(want).replace("Z", "+00:00"))).total_seconds())


def baseline_blame(case_dir: Path) -> tuple[str, str | None]:
    """Count lines with an error word per node (from nodes/<node>/ folders or NCCL host
    prefixes) and blame the loudest node; the category is the loudest keyword's."""
    per_node: Counter[str] = Counter()
    words: Counter[str] = Counter()
    for path in sorted(case_dir.rglob("*")):
        if not path.is_file() or path.name in ("expected.json", "incident.yaml"):
            continue
        parts = path.relative_to(case_dir).parts
        folder_node = parts[1] if len(parts) > 2 and parts[0] == "nodes" else None
        for line in path.read_text(errors="replace").splitlines():
            low = line.lower()
            if not any(w in low for w in ERROR_WORDS):
                continue
            node = folder_node or _host_prefix(line)
            if node:
                per_node[node] += 1
            for w in ("nccl", "xid", "out of memory", "killed", "timeout"):
                if w in low:
                    words[w] += 1
    node = per_node.most_common(1)[0][0] if per_node else None
    top = words.most_common(1)[0][0] if words else ""
    category = {"nccl": "network_fault", "timeout": "network_fault", "xid": "gpu_hardware",
                "out of memory": "gpu_oom", "killed": "host_oom"}.get(top, "unknown")
    return category, node


def _host_prefix(line: str) -> str | None:
    head = line.split(" ", 1)[0]
    for sep in ("]:", ": "):
        if sep in head:
            head = head.split(sep, 1)[-1]
    parts = head.split(":")
    if len(parts) >= 3 and parts[1].isdigit():
        return parts[0]
    return None


def score_suite(cases_dir: Path | None = None) -> Scores:
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger

    root = cases_dir or default_cases_dir()
    case_dirs = sorted(p.parent for p in root.glob("*/expected.json"))
    if not case_dirs:
        raise BadInput(f"{root}: no cases (no */expected.json)")
    scores = Scores()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger(Path(tmp) / "eval.duckdb")
        try:
            for case in case_dirs:
                expected = json.loads((case / "expected.json").read_text())
                kind = expected.get("kind", "failure")
                report = investigate_bundle(case, ledger, ignore=ANSWER_KEYS,
                                            pictures_dir=Path(tmp) / "pictures")
                b_cat, b_node = ((NAIVE[kind], None) if kind in NAIVE
                                 else baseline_blame(case))
                scores.cases.append(CaseResult(
                    case_id=expected.get("case_id", case.name),
                    expected_category=expected["category"], expected_node=expected.get("node"),
                    got_category=report.root_cause.category, got_node=report.root_cause.node,
                    expected_rank=expected.get("rank"), got_rank=report.root_cause.rank,
                    confidence=report.root_cause.confidence, baseline_category=b_cat,
                    baseline_node=b_node, misleading=bool(expected.get("misleading")),
                    kind=kind, change_error_s=_change_error(report.latency, expected)))
        finally:
            ledger.close()
    _aggregate(scores)
    return scores


def _aggregate(s: Scores) -> None:
    n = len(s.cases) or 1
    s.category_accuracy = sum(c.category_ok for c in s.cases) / n
    s.node_accuracy = sum(c.node_ok for c in s.cases) / n
    s.baseline_category_accuracy = sum(c.baseline_category == c.expected_category
                                       for c in s.cases) / n
    s.baseline_node_accuracy = sum(_same_node(c.baseline_node, c.expected_node)
                                   for c in s.cases) / n
    timed = [c for c in s.cases if c.kind == "latency" and c.expected_category != "unknown"]
    if timed:
        s.windows_within_5min = sum(c.change_error_s is not None and c.change_error_s <= 300
                                    for c in timed) / len(timed)
    ranked = [c for c in s.cases if c.expected_rank is not None]
    s.rank_accuracy = sum(c.got_rank == c.expected_rank for c in ranked) / (len(ranked) or 1)
    for cat in sorted({c.expected_category for c in s.cases}):
        mine = [c for c in s.cases if c.expected_category == cat]
        s.per_category[cat] = {
            "cases": len(mine),
            "category_accuracy": sum(c.category_ok for c in mine) / len(mine),
            "node_accuracy": sum(c.node_ok for c in mine) / len(mine),
            "baseline_category_accuracy": sum(c.baseline_category == cat for c in mine) / len(mine),
        }
        s.confusion[cat] = dict(Counter(c.got_category for c in mine))


def render_scores(s: Scores, console: Console) -> None:
    t = Table(title=f"goodput eval: {len(s.cases)} cases")
    for col in ("category", "cases", "goodput cat", "goodput node", "baseline cat"):
        t.add_column(col, justify="right" if col != "category" else "left")
    for cat, row in s.per_category.items():
        t.add_row(cat, str(int(row["cases"])), f"{row['category_accuracy']:.0%}",
                  f"{row['node_accuracy']:.0%}", f"{row['baseline_category_accuracy']:.0%}")
    t.add_row("[bold]all[/]", str(len(s.cases)), f"[bold]{s.category_accuracy:.0%}[/]",
              f"[bold]{s.node_accuracy:.0%}[/]", f"{s.baseline_category_accuracy:.0%}")
    console.print(t)
    console.print(f"baseline (blame the node with the most error lines): node accuracy "
                  f"{s.baseline_node_accuracy:.0%}")
    console.print(f"culprit rank accuracy (cases whose answer names a rank): "
                  f"{s.rank_accuracy:.0%}")
    if s.windows_within_5min is not None:
        console.print(f"change point found within 5 minutes of the planted change: "
                      f"{s.windows_within_5min:.0%}")
    cats = sorted({k for row in s.confusion.values() for k in row} | set(s.confusion))
    ct = Table(title="Confusion (rows: expected, columns: goodput)")
    ct.add_column("expected")
    for c in cats:
        ct.add_column(c[:10], justify="right")
    for exp, row in s.confusion.items():
        ct.add_row(exp, *(str(row.get(c, "")) for c in cats))
    console.print(ct)
    wrong = [c for c in s.cases if not (c.category_ok and c.node_ok)]
    for c in wrong:
        console.print(f"[red]miss[/] {c.case_id}: expected {c.expected_category}@"
                      f"{c.expected_node}, got {c.got_category}@{c.got_node} ({c.confidence:.2f})")
