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
    methods = (("goodput", s.ours), *s.baseline.items())
    t = Table(caption="detect: from the onset to the first alarm; culprit: the node named")
    t.add_column("", no_wrap=True)
    for name, _ in methods:
        t.add_column(name, no_wrap=True, justify="right")

    def sec(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f} s"

    rows = (("precision", lambda m: f"{m.precision:.3f}"), ("recall", lambda m: f"{m.recall:.3f}"),
            ("F1", lambda m: f"{m.f1:.3f}"), ("detect median", lambda m: sec(m.detect_median_s)),
            ("detect p95", lambda m: sec(m.detect_p95_s)),
            ("culprit node", lambda m: "-" if m.culprit_accuracy is None
             else f"{m.culprit_accuracy:.1%}"),
            ("TP / FP / FN", lambda m: f"{m.tp} / {m.fp} / {m.fn}"))
    for label, cell in rows:
        t.add_row(label, *(cell(m) for _, m in methods))
    console.print(t)


def eval_live(as_json: bool, seed: int = 29, jobs: int = 240) -> None:
    scores = score_live(seed, jobs)
    if as_json:
        click.echo(json.dumps(live_json(scores), indent=2))
    else:
        render(scores)
