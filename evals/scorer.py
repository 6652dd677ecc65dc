"""`goodput eval`: run the offline planner over generated cases and score it against a
trivial baseline, so the gain is visible. The baseline is what a hurried engineer concludes:
for failures, blame the node with the most error lines; for slowdowns, blame the rank with the
longest step and the kind of the longest thing on its timeline; for latency, queueing."""

from __future__ import annotations

import json
import statistics
import tempfile
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from goodput_agent.analysis.failure.observations import short_name
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import markup
from goodput_agent.evals.calibration import (
    Calibration,
    ReliabilityBin,
    Scored,
    calibrate,
    render_calibration,
)

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
    baseline_rank: int | None = None
    misleading: bool = False
    kind: str = "failure"
    change_error_s: float | None = None  # latency: |chosen change point - planted change|
    windows_given: bool = False  # latency: the incident named both windows (nothing to find)
    has_change: bool = True  # latency: the answer key plants a change time to find
    # the most confidence the bundle supports (answer key's max_confidence): a verdict above it
    # is wrong however it is labelled; under an expected `unknown`, any verdict at or below it
    # is an acceptable guess
    max_confidence: float | None = None
    # a proposal its tool refuses, or a remedy whose premise the report's numbers contradict
    remedy_problems: list[str] = Field(default_factory=list)

    @property
    def over_ceiling(self) -> bool:
        """A class named more surely than the bundle supports. The key's ceiling caps a guess
        at a class: an `unknown` where the key says `unknown` guesses none, and its confidence
        (that the bundle supports no class) is what the key itself says."""
        if self.expected_category == "unknown" and self.got_category == "unknown":
            return False
        return self.max_confidence is not None and self.confidence > self.max_confidence

    @property
    def category_ok(self) -> bool:
        if self.expected_category == "unknown" and self.max_confidence is not None:
            return self.got_category == "unknown" or not self.over_ceiling
        return self.got_category == self.expected_category and not self.over_ceiling

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
    baseline_rank_accuracy: float = 0.0  # ...the same for the baseline
    ranked_cases: int = 0
    baseline: str = ""  # what the baseline does, in words
    windows_within_5min: float | None = None  # latency: share of changes found within 5 min
    per_category: dict[str, dict[str, float]] = Field(default_factory=dict)
    confusion: dict[str, dict[str, int]] = Field(default_factory=dict)
    # calibration of the confidence (evals/calibration.py): correct = the category is right
    brier: float | None = None
    reliability: list[ReliabilityBin] = Field(default_factory=list)
    # the same per kind of question, where a suite mixes them (confidence tracks accuracy
    # per kind, or a kind's miscalibration hides in the others' numbers)
    brier_by_kind: dict[str, float] = Field(default_factory=dict)
    reliability_by_kind: dict[str, list[ReliabilityBin]] = Field(default_factory=dict)
    # answers whose class matched the key but whose confidence exceeded the key's ceiling
    over_ceiling: int = 0
    remedy_problems: int = 0  # over every case (CaseResult.remedy_problems)


def _same_node(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return short_name(a) == short_name(b)


def default_cases_dir() -> Path:
    return Path(__file__).resolve().parent / "cases"


SUITES = {"failure": "cases", "slowdown": "slowdown_cases", "latency": "latency_cases"}
# what a hurried engineer concludes without the analysis
NAIVE = {"latency": "queueing"}  # "latency rose, so raise the batch limits"
BASELINE_WORDS = {
    "failure": "blame the node with the most error lines",
    "slowdown": "blame the rank with the longest median step; the cause is the kind of the "
                "longest span on the timeline (DataLoader wait, NCCL kernel, compute kernel)",
    "latency": "always queueing",
}


def suite_dir(name: str) -> Path:
    if name == "independent":  # held out: generated on demand from a fixed seed, never shipped
        from goodput_agent.evals.independent import generated_suite
        return generated_suite()
    return Path(__file__).resolve().parent / SUITES[name]


def _change_error(report_latency: dict | None, expected: dict) -> float | None:
    from datetime import datetime

    windows = (report_latency or {}).get("windows") or {}
    got, want = windows.get("change_at"), expected.get("change_at")
    if not got or not want or windows.get("how") == "user":
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


def naive_slowdown_blame(case_dir: Path) -> tuple[str, str | None, int | None]:
    """What a user opening the incident traces in a viewer concludes: the rank whose median
    ProfilerStep is longest is the slow one (its host the node), and the cause is whatever
    the single longest span is: a DataLoader wait (input_stall), an NCCL kernel
    (communication) or a compute kernel (gpu_throttling: "that GPU is slow")."""
    from goodput_agent.parsing.base import ParseError
    from goodput_agent.parsing.kineto.load import is_dataloader_span, load_trace
    from goodput_agent.parsing.kineto.model import COMM, COMPUTE
    from goodput_agent.tools.profiler_traces import run_of

    slowest: tuple[float, str, str | None, int | None] | None = None  # step, host, rank
    longest: tuple[float, str] = (0.0, "unknown")
    for path in sorted(case_dir.rglob("*.json*")):
        rel = path.relative_to(case_dir).as_posix()
        if path.name in ANSWER_KEYS or path.parts[len(case_dir.parts)] == "metrics" or \
                run_of(rel) != "incident":
            continue
        parts = rel.split("/")
        hint = parts[parts.index("nodes") + 1] if "nodes" in parts[:-2] else None
        try:
            trace = load_trace(path, rel_path=rel, node_hint=hint)
        except ParseError:
            continue
        if trace.steps:
            med = statistics.median(s.dur for s in trace.steps)
            if slowest is None or med > slowest[0]:
                slowest = (med, rel, trace.meta.host, trace.meta.rank)
        for op in trace.gpu:
            if op.kind in (COMM, COMPUTE) and op.dur > longest[0]:
                longest = (op.dur, "communication" if op.kind == COMM else "gpu_throttling")
        for a in trace.annotations:
            if is_dataloader_span(a.name) and a.dur > longest[0]:
                longest = (a.dur, "input_stall")
    if slowest is None:
        return longest[1], None, None
    return longest[1], slowest[2], slowest[3]


def score_suite(cases_dir: Path | None = None) -> Scores:
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger
    from goodput_agent.planner.proposals import report_problems

    root = cases_dir or default_cases_dir()
    case_dirs = sorted(p.parent for p in root.glob("*/expected.json"))
    if not case_dirs:
        raise BadInput(f"{root}: no cases (no */expected.json)")
    scores = Scores()
    kinds: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger(Path(tmp) / "eval.duckdb")
        try:
            for case in case_dirs:
                expected = json.loads((case / "expected.json").read_text())
                kind = expected.get("kind", "failure")
                report = investigate_bundle(case, ledger, ignore=ANSWER_KEYS,
                                            pictures_dir=Path(tmp) / "pictures")
                b_rank = None
                if kind == "slowdown":
                    b_cat, b_node, b_rank = naive_slowdown_blame(case)
                elif kind in NAIVE:
                    b_cat, b_node = NAIVE[kind], None
                else:
                    b_cat, b_node = baseline_blame(case)
                kinds.add(kind)
                scores.cases.append(CaseResult(
                    case_id=expected.get("case_id", case.name),
                    expected_category=expected["category"], expected_node=expected.get("node"),
                    got_category=report.root_cause.category, got_node=report.root_cause.node,
                    expected_rank=expected.get("rank"), got_rank=report.root_cause.rank,
                    confidence=report.root_cause.confidence, baseline_category=b_cat,
                    baseline_node=b_node, baseline_rank=b_rank,
                    misleading=bool(expected.get("misleading")),
                    kind=kind, change_error_s=_change_error(report.latency, expected),
                    windows_given=((report.latency or {}).get("windows") or {}).get("how")
                    == "user", has_change=bool(expected.get("change_at")),
                    max_confidence=expected.get("max_confidence"),
                    remedy_problems=report_problems([(a.tool, a.args) for a in report.actions],
                                                    report.advice, report.latency)))
        finally:
            ledger.close()
    scores.baseline = "; ".join(BASELINE_WORDS.get(k, k) for k in sorted(kinds))
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
    # only where Goodput had to find the change itself (not where the user gave both windows)
    timed = [c for c in s.cases if c.kind == "latency" and c.expected_category != "unknown"
             and not c.windows_given and c.has_change]
    if timed:
        s.windows_within_5min = sum(c.change_error_s is not None and c.change_error_s <= 300
                                    for c in timed) / len(timed)
    ranked = [c for c in s.cases if c.expected_rank is not None]
    s.ranked_cases = len(ranked)
    s.rank_accuracy = sum(c.got_rank == c.expected_rank for c in ranked) / (len(ranked) or 1)
    s.baseline_rank_accuracy = sum(c.baseline_rank == c.expected_rank
                                   for c in ranked) / (len(ranked) or 1)
    for cat in sorted({c.expected_category for c in s.cases}):
        mine = [c for c in s.cases if c.expected_category == cat]
        s.per_category[cat] = {
            "cases": len(mine),
            "category_accuracy": sum(c.category_ok for c in mine) / len(mine),
            "node_accuracy": sum(c.node_ok for c in mine) / len(mine),
            "baseline_category_accuracy": sum(c.baseline_category == cat for c in mine) / len(mine),
            "baseline_node_accuracy": sum(_same_node(c.baseline_node, c.expected_node)
                                          for c in mine) / len(mine),
        }
        ranked_here = [c for c in mine if c.expected_rank is not None]
        if ranked_here:
            s.per_category[cat]["rank_accuracy"] = sum(
                c.got_rank == c.expected_rank for c in ranked_here) / len(ranked_here)
            s.per_category[cat]["baseline_rank_accuracy"] = sum(
                c.baseline_rank == c.expected_rank for c in ranked_here) / len(ranked_here)
        s.confusion[cat] = dict(Counter(c.got_category for c in mine))
    s.remedy_problems = sum(len(c.remedy_problems) for c in s.cases)
    s.over_ceiling = sum(c.over_ceiling and c.got_category == c.expected_category
                         for c in s.cases)
    cal = calibrate(Scored(confidence=c.confidence, correct=c.category_ok) for c in s.cases)
    s.brier, s.reliability = cal.brier, cal.bins
    kinds = sorted({c.kind for c in s.cases})
    for kind in kinds if len(kinds) > 1 else []:
        mine = calibrate(Scored(confidence=c.confidence, correct=c.category_ok)
                         for c in s.cases if c.kind == kind)
        if mine.brier is not None:
            s.brier_by_kind[kind], s.reliability_by_kind[kind] = mine.brier, mine.bins


def render_scores(s: Scores, console: Console) -> None:
    ranks = any("rank_accuracy" in row for row in s.per_category.values())
    t = Table(title=f"goodput eval: {len(s.cases)} cases")
    cols = ["category", "cases", "goodput cat", "goodput node", "baseline cat", "baseline node"]
    cols += ["goodput rank", "baseline rank"] if ranks else []
    for col in cols:
        t.add_column(col, justify="right" if col != "category" else "left")

    def pct(row: dict[str, float], key: str) -> str:
        return f"{row[key]:.0%}" if key in row else ""

    for cat, row in s.per_category.items():
        t.add_row(cat, str(int(row["cases"])), pct(row, "category_accuracy"),
                  pct(row, "node_accuracy"), pct(row, "baseline_category_accuracy"),
                  pct(row, "baseline_node_accuracy"),
                  *([pct(row, "rank_accuracy"), pct(row, "baseline_rank_accuracy")]
                    if ranks else []))
    t.add_row("[bold]all[/]", str(len(s.cases)), f"[bold]{s.category_accuracy:.0%}[/]",
              f"[bold]{s.node_accuracy:.0%}[/]", f"{s.baseline_category_accuracy:.0%}",
              f"{s.baseline_node_accuracy:.0%}",
              *([f"[bold]{s.rank_accuracy:.0%}[/]", f"{s.baseline_rank_accuracy:.0%}"]
                if ranks else []))
    console.print(t)
    console.print(f"baseline ({s.baseline or BASELINE_WORDS['failure']}): node accuracy "
                  f"{s.baseline_node_accuracy:.0%}", markup=False)
    console.print(f"culprit rank accuracy ({s.ranked_cases} cases whose answer names a rank): "
                  f"{s.rank_accuracy:.0%}, baseline {s.baseline_rank_accuracy:.0%}")
    if s.windows_within_5min is not None:
        console.print(f"change point found within 5 minutes of the planted change: "
                      f"{s.windows_within_5min:.0%}")
    if s.over_ceiling:
        console.print(f"right class, but more confident than the bundle supports (the answer "
                      f"key's ceiling): {s.over_ceiling} cases, counted wrong")
    cats = sorted({k for row in s.confusion.values() for k in row} | set(s.confusion))
    ct = Table(title="Confusion (rows: expected, columns: goodput)")
    ct.add_column("expected")
    for c in cats:
        ct.add_column(c[:10], justify="right")
    for exp, row in s.confusion.items():
        ct.add_row(exp, *(str(row.get(c, "")) for c in cats))
    console.print(ct)
    render_calibration(Calibration(brier=s.brier, bins=s.reliability), console)
    for kind, brier in s.brier_by_kind.items():  # a suite of several kinds: each its own
        bins = s.reliability_by_kind[kind]
        render_calibration(Calibration(brier=brier, bins=bins), console,
                           title=f"Reliability of the {kind} verdicts "
                                 f"({sum(b.cases for b in bins)} cases)")
    wrong = [c for c in s.cases if not (c.category_ok and c.node_ok) or
             c.expected_rank is not None and c.got_rank != c.expected_rank]
    for c in wrong:
        rank = (f" rank {c.expected_rank} / got {c.got_rank}" if c.expected_rank is not None
                else "")
        ceiling = f" (at most {c.max_confidence:.2f})" if c.max_confidence is not None else ""
        console.print("[red]miss[/] " + markup(
            f"{c.case_id}: expected {c.expected_category}@{c.expected_node}{ceiling}, got "
            f"{c.got_category}@{c.got_node} ({c.confidence:.2f}){rank}", newlines=False))
