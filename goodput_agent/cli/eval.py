"""`goodput eval`: score the offline planner on the generated suites (and the fleet and live
suites) against a naive baseline; with a model planner, cli/eval_model.py scores the model
beside it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from goodput_agent.cli.options import json_option, with_options
from goodput_agent.cli.planner_options import model_settings, planner_options


@click.command("eval")
@click.option("--cases", type=click.Path(path_type=Path), default=None,
              help="Folder of generated cases (default: the shipped suites).")
@click.option("--suite", type=click.Choice(["failure", "slowdown", "latency", "independent",
                                            "fleet", "live", "all"]), default="all",
              show_default=True,
              help="Which suite to score (independent: generated held-out cases; fleet: a "
                   "generated fleet history, about 10 s; live: 240 generated running jobs "
                   "replayed poll by poll, a few minutes; none of these in all).")
@click.option("--limit", type=int, default=None,
              help="With a model planner: only the first N cases (a slow self-hosted model).")
@with_options(planner_options)
@json_option
def eval_cmd(cases: Path | None, suite: str, as_json: bool, planner: str,
             **claude_flags: object) -> None:
    """Score the offline planner on generated cases against a naive baseline (--planner
    claude|openai-compatible: the model beside the offline planner, per case: valid/all tool
    calls, turns, tokens, seconds, and any case where the model lowered the offline verdict)."""
    from goodput_agent.cli.render import TerminalConsole
    from goodput_agent.evals.scorer import SUITES, render_scores, score_suite, suite_dir

    if suite == "fleet":
        _eval_fleet(as_json)
        return
    if suite == "live":
        from goodput_agent.evals.live.report import eval_live

        eval_live(as_json)
        return
    if planner in ("claude", "openai-compatible"):
        from goodput_agent.cli.eval_model import eval_with_model

        limit = claude_flags.pop("limit", None)
        eval_with_model(cases, suite, as_json, model_settings(planner, claude_flags), planner,
                        limit)  # type: ignore[arg-type]
        return

    names = list(SUITES) if suite == "all" else [suite]
    results = ({"cases": score_suite(cases)} if cases else
               {n: score_suite(suite_dir(n)) for n in names if suite_dir(n).is_dir()})
    if as_json:
        click.echo(json.dumps({k: v.model_dump() for k, v in results.items()}, indent=2))
        return
    for name, scores in results.items():
        TerminalConsole().rule(name)
        render_scores(scores, TerminalConsole())


def _eval_fleet(as_json: bool) -> None:
    from goodput_agent.cli.render import TerminalConsole
    from goodput_agent.evals.fleet_scorer import render_fleet_scores, score_fleet

    scores = score_fleet()
    if as_json:
        click.echo(json.dumps({"fleet": scores.model_dump()}, indent=2))
        return
    TerminalConsole().rule("fleet")
    render_fleet_scores(scores, TerminalConsole())
