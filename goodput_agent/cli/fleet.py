"""`goodput fleet`: where the fleet's GPU-hours went by diagnosed cause, which nodes keep
failing jobs, and which of them fail significantly more than the rest (with the test's
numbers); `--propose-drains` records drain proposals for those, for a person to approve."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from goodput_agent.cli.options import ledger_option
from goodput_agent.cli.render import TerminalConsole
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import json_text, markup

TOP_NODES = 20


def _period(since_text: str | None, until_text: str | None):  # noqa: ANN202 - (start, end)
    """--since: a duration back (30d) or a window (START/END, which also sets the end);
    --until: an ISO 8601 time or a duration ago (2d). Either may be missing."""
    from goodput_agent.core.timespec import looking_back

    since = until = None
    if since_text:
        try:
            window = looking_back(since_text)
        except BadInput as exc:
            raise BadInput(f"--since: {exc}") from None
        since = window.start
        until = None if _is_duration(since_text) else window.end
    if until_text:
        until = _instant(until_text)
    if since and until and until <= since:
        raise BadInput("--until: the period ends before it starts")
    return since, until


def _is_duration(text: str) -> bool:
    from goodput_agent.core.timespec import parse_duration

    try:
        parse_duration(text)
    except BadInput:
        return False
    return True


def _instant(text: str):  # noqa: ANN202 - a datetime
    from datetime import UTC, datetime

    from goodput_agent.core.timespec import parse_duration

    try:
        return datetime.now(UTC) - parse_duration(text)
    except BadInput:
        pass
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"--until: {text!r}: not a time (write an ISO 8601 time or 2d)") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _xids(xids: dict[str, int]) -> str:
    """Xid 79 in 3 failures, 48 in 1: `79×3, 48`."""
    return ", ".join(f"{x}×{n}" if n > 1 else x for x, n in xids.items())


def _hours(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f}"


def _p(v: float | None) -> str:
    return "—" if v is None else f"{v:.2g}"


def render_fleet(r, console: Console) -> None:  # noqa: ANN001 - a FleetReport
    since = r.since.isoformat() if r.since else "the ledger's start"
    console.print(f"[bold]Fleet[/] {markup(since)} → {markup(r.until.isoformat())}: "
                  f"{r.investigations} failed-job investigations, {r.sacct_jobs} sacct jobs "
                  f"({markup(r.exposure_source or 'no sacct history')})")
    t = Table(title="GPU-hours of failed jobs by diagnosed cause")
    for col in ("cause", "failures", "jobs", "GPU-hours"):
        t.add_column(col, justify="left" if col == "cause" else "right")
    for c in r.causes:
        t.add_row(markup(c.category), str(c.failures), str(c.jobs), _hours(c.gpu_hours))
    console.print(t)
    _render_nodes(r, console)
    if r.test is not None:
        x = r.test
        console.print(markup(
            f"test: {x.method}; {x.correction} over {x.nodes_tested} nodes, alpha {x.alpha:g}; "
            f"named only with ≥ {x.min_failures} failures on ≥ {x.min_jobs} different jobs; "
            f"fleet: {x.fleet_failures} node-attributed failures ({', '.join(x.node_causes)}) in "
            f"{x.fleet_exposure_gpu_h:,.0f} GPU-h = {x.fleet_rate_per_1k_gpu_h or 0:.3g} per "
            "1000 GPU-h"))
    console.print(f"[bold]repeat offenders:[/] {markup(', '.join(r.offenders) or 'none')}")
    _render_groups(r, console)
    for p in r.proposals:
        console.print(markup(f"drain proposed: {p.node} (action {p.action_id}, {p.status}; "
                             f"investigation {p.investigation_id}) — approve with `goodput "
                             f"approve {p.action_id} --as NAME`"))
    for n in r.notes:
        console.print(f"[dim]{markup(n)}[/]")


def _render_nodes(r, console: Console) -> None:  # noqa: ANN001 - a FleetReport
    t = Table(title=f"Nodes by failures attributed across different jobs (top {TOP_NODES})")
    for col in ("node", "fail", "jobs", "GPU-h", "rate/1k", "fleet/1k", "expect", "adj p",
                "named"):
        t.add_column(col, justify="left" if col in ("node", "named") else "right",
                     overflow="fold")
    for f in r.nodes[:TOP_NODES]:
        t.add_row(markup(f.node), str(f.failures), str(f.jobs), _hours(f.exposure_gpu_h),
                  _p(f.rate_per_1k_gpu_h), _p(f.fleet_rate_per_1k_gpu_h), _p(f.expected),
                  _p(f.adjusted_p), "[bold red]yes[/]" if f.named else markup(f.why_not or "no"))
    console.print(t)
    for f in r.nodes[:TOP_NODES]:
        if f.named:
            more = " …" if len(f.investigations) > 3 else ""
            console.print(markup(
                f"{f.node}: p {f.p_value:.3g}, adjusted {f.adjusted_p:.3g}; causes "
                f"{', '.join(f.categories)}; Xids {_xids(f.xids) or 'none'}; investigations "
                f"{', '.join(f.investigations[:3])}{more}; evidence "
                f"{', '.join(f'#{e}' for e in f.evidence_ids[:6])}"), highlight=False)


def _render_groups(r, console: Console) -> None:  # noqa: ANN001 - a FleetReport
    if not r.groups:
        return
    t = Table(title="Causes recurring per partition and account (≥ 2 different jobs)")
    for col in ("by", "value", "cause", "failures", "jobs", "GPU-hours"):
        t.add_column(col, justify="right" if col in ("failures", "jobs", "GPU-hours")
                     else "left")
    for g in r.groups[:TOP_NODES]:
        t.add_row(g.dimension, markup(g.value), markup(g.category), str(g.failures),
                  str(g.jobs), _hours(g.gpu_hours))
    console.print(t)


@click.command("fleet")
@ledger_option
@click.option("--since", "since_text", default=None, metavar="WHEN",
              help="Start of the period: a duration back (30d) or START/END (ISO 8601).")
@click.option("--until", "until_text", default=None, metavar="WHEN",
              help="End of the period: an ISO 8601 time or a duration ago (default: now).")
@click.option("--sacct", "sacct_path", type=click.Path(path_type=Path), default=None,
              help="A saved `TZ=UTC sacct -a -X -P --format=JobID,NodeList,AllocTRES,Elapsed,"
                   "Start,End,Partition,Account,State` history: GPU-hours and node exposure.")
@click.option("--slurm", "live", is_flag=True, help="Ask sacct for the period's history now.")
@click.option("--propose-drains", is_flag=True,
              help="Record a drain proposal (status proposed) for each repeat offender; it "
                   "runs only after `goodput approve`.")
@click.option("--alpha", default=0.01, show_default=True, type=click.FloatRange(0, 1,
              min_open=True), help="Significance level of the repeat-offender test.")
@click.option("--correction", type=click.Choice(["benjamini-hochberg", "bonferroni"]),
              default="benjamini-hochberg", show_default=True,
              help="Multiple-testing correction over all nodes tested.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def fleet_cmd(ledger_path: Path | None, since_text: str | None, until_text: str | None,
              sacct_path: Path | None, live: bool, propose_drains: bool, alpha: float,
              correction: str, as_json: bool) -> None:
    """GPU-hours lost by cause, nodes that keep failing jobs, and repeat offenders (named
    only when significantly above the fleet's failure rate per GPU-hour)."""
    from goodput_agent.accounting.fleet import OffenderRule, fleet_report
    from goodput_agent.accounting.fleet_drain import propose_drains as propose
    from goodput_agent.accounting.fleet_exposure import sacct_live
    from goodput_agent.cli.actions import _ledger_path
    from goodput_agent.ledger import open_ledger

    if live and sacct_path:
        raise click.UsageError("give --sacct FILE or --slurm, not both")
    since, until = _period(since_text, until_text)
    path = _ledger_path(ledger_path)
    if live:
        sacct_path = sacct_live(since, until)
    with open_ledger(path, read_only=not propose_drains) as lg:
        report = fleet_report(lg, since, until, sacct_path,
                              OffenderRule(alpha=alpha, correction=correction))
        if propose_drains:
            report.proposals = propose(lg, report)
    if as_json:
        click.echo(json_text(report.to_json()))
    else:
        render_fleet(report, TerminalConsole())
