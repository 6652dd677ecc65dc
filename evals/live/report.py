"""`goodput eval --suite live`: print the scores (a table, or the JSON the issue names)."""

from __future__ import annotations

import json

import click
from rich.table import Table

from goodput_agent.evals.live.scorer import LiveScores, live_json, score_live


def render(s: LiveScores) -> None:
    from goodput_agent.cli.render import TerminalConsole

    console = TerminalConsole()
    console.rule("live")
    console.print(f"{s.jobs} running jobs: " + ", ".join(f"{k} {v}" for k, v in
                                                        sorted(s.by_fault.items())))
    t = Table(caption="detect: time from the onset to the first alarm; culprit: the node named")
    t.add_column("method", no_wrap=True)
    for col in ("prec.", "recall", "F1", "median", "p95", "culprit", "TP", "FP", "FN"):
        t.add_column(col, no_wrap=True)
    for name, m in (("goodput", s.ours), *s.baseline.items()):
        def sec(v: float | None) -> str:
            return "-" if v is None else f"{v:.0f} s"
        t.add_row(name, f"{m.precision:.3f}", f"{m.recall:.3f}", f"{m.f1:.3f}",
                  sec(m.detect_median_s), sec(m.detect_p95_s),
                  "-" if m.culprit_accuracy is None else f"{m.culprit_accuracy:.1%}",
                  str(m.tp), str(m.fp), str(m.fn))
    console.print(t)


def eval_live(as_json: bool, seed: int = 29, jobs: int = 240) -> None:
    scores = score_live(seed, jobs)
    if as_json:
        click.echo(json.dumps(live_json(scores), indent=2))
    else:
        render(scores)
