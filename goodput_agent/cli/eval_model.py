"""`goodput eval --planner claude|openai-compatible`: every case investigated by the offline
planner and by the model, side by side. Per case: both verdicts, how the model's verdict met the
failure analysis' (agreed / adopted / stands), valid tool calls of all the model made, turns,
tokens and seconds, with the offline planner's seconds beside them; and whether the model ever
lowered the offline verdict (category, node or rank right offline and wrong with the model)."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel

from goodput_agent.core.errors import BadInput


class PlannerResult(BaseModel):
    category: str
    node: str | None = None
    rank: int | None = None
    ok: bool
    node_ok: bool | None = None
    rank_ok: bool | None = None
    tool_calls: int = 0  # all tool calls (the model's; for offline, the playbook's)
    valid_tool_calls: int = 0
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    seconds: float = 0.0
    outcome: str = ""


class CaseRow(BaseModel):
    case: str
    expected: str
    offline: PlannerResult
    model: PlannerResult

    @property
    def lowered(self) -> bool:
        """Right offline, wrong with the model: category, node or rank."""
        o, m = self.offline, self.model
        return (o.ok and not m.ok) or (o.node_ok is True and m.node_ok is False) or \
            (o.rank_ok is True and m.rank_ok is False)


def _same_node(a: str | None, b: str | None) -> bool | None:
    from goodput_agent.analysis.failure.observations import short_name

    if b is None:
        return None
    return a is not None and short_name(a) == short_name(b)


def _result(report: Any, expected: dict[str, Any], seconds: float,  # noqa: ANN401
            stats: Any, ledger: Any) -> PlannerResult:  # noqa: ANN401
    from goodput_agent.planner.model_store import usage_totals

    rc, inv = report.root_cause, report.investigation_id or ""
    use = usage_totals(ledger, inv) or {}
    exp_rank = expected.get("rank")
    calls = len(ledger.investigation(inv).tool_calls) if stats is None else stats.tool_calls
    return PlannerResult(
        category=rc.category, node=rc.node, rank=rc.rank, ok=rc.category == expected["category"],
        node_ok=_same_node(rc.node, expected.get("node")),
        rank_ok=None if exp_rank is None else rc.rank == exp_rank,
        tool_calls=calls, valid_tool_calls=calls if stats is None else stats.valid_tool_calls,
        turns=stats.turns if stats else 0, input_tokens=int(use.get("input_tokens") or 0),
        output_tokens=int(use.get("output_tokens") or 0), cost_usd=use.get("cost_usd"),
        seconds=seconds, outcome=stats.outcome if stats else "")


def _case_dirs(cases: Path | None, suite: str) -> list[Path]:
    from goodput_agent.evals.scorer import SUITES, suite_dir

    roots = [cases] if cases else [suite_dir(n) for n in (SUITES if suite == "all" else [suite])
                                   if suite_dir(n).is_dir()]
    found = sorted(p.parent for r in roots for p in r.glob("*/expected.json"))
    if not found:
        raise BadInput(f"{roots[0] if roots else cases}: no cases (no */expected.json)")
    return found


def run_model_eval(case_dirs: list[Path], settings: Any, limit: int | None = None  # noqa: ANN401
                   ) -> list[CaseRow]:
    from goodput_agent.evals.scorer import ANSWER_KEYS
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger

    rows: list[CaseRow] = []
    with tempfile.TemporaryDirectory() as tmp, Ledger(Path(tmp) / "eval.duckdb") as ledger:
        for case in case_dirs[:limit]:
            expected = json.loads((case / "expected.json").read_text())
            got: dict[str, PlannerResult] = {}
            for name, planner in (("offline", None), ("model", settings)):
                stats: list[Any] = []
                t0 = time.perf_counter()
                report = investigate_bundle(case, ledger, ignore=ANSWER_KEYS, claude=planner,
                                            pictures_dir=Path(tmp) / "pictures",
                                            on_model_stats=stats.append)
                got[name] = _result(report, expected, time.perf_counter() - t0,
                                    stats[0] if stats else None, ledger)
            rows.append(CaseRow(case=expected.get("case_id", case.name),
                                expected=expected["category"], **got))
    return rows


def eval_with_model(cases: Path | None, suite: str, as_json: bool, settings: Any,  # noqa: ANN401
                    planner: str, limit: int | None = None) -> None:
    rows = run_model_eval(_case_dirs(cases, suite), settings, limit)
    acc = {n: sum(getattr(r, n).ok for r in rows) / len(rows) for n in ("offline", "model")}
    lowered = [r.case for r in rows if r.lowered]
    if as_json:
        click.echo(json.dumps({"model": settings.model, "planner": planner, "accuracy": acc,
                               "lowered": lowered,
                               "cases": [r.model_dump() for r in rows]}, indent=2, default=str))
        return
    _render(rows, acc, lowered, settings.model, planner)


def _render(rows: list[CaseRow], acc: dict[str, float], lowered: list[str], model: str,
            planner: str) -> None:
    from rich.table import Table

    from goodput_agent.cli.render import TerminalConsole
    from goodput_agent.core.untrusted import markup

    t = Table(title=f"offline vs {planner} ({markup(model)}): accuracy {acc['offline']:.0%} vs "
                    f"{acc['model']:.0%}; cases the model lowered: {len(lowered)}")
    for col in ("case", "expected", "offline", planner, "model verdict", "valid/all calls",
                "turns", "tokens in/out", "s model", "s offline", "cost $"):
        t.add_column(col)
    for r in rows:
        o, m = r.offline, r.model
        t.add_row(markup(r.case), markup(r.expected),
                  markup(f"{o.category}{'' if o.ok else ' x'}"),
                  markup(f"{m.category}{'' if m.ok else ' x'}"),
                  markup(m.outcome.split(":")[0] or "-"),
                  f"{m.valid_tool_calls}/{m.tool_calls}", str(m.turns),
                  f"{m.input_tokens}/{m.output_tokens}", f"{m.seconds:.1f}", f"{o.seconds:.1f}",
                  "—" if m.cost_usd is None else f"{m.cost_usd:.4f}")
    TerminalConsole().print(t)
    sys.stdout.flush()
