"""`goodput verify`: measure again after the fix; the verdict becomes a ledger row on the
executed actions (recovered / partly / not_recovered / regressed_elsewhere, or incomparable)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from goodput_agent.cli.actions import _echo_json, _ledger_path
from goodput_agent.cli.options import json_option, ledger_option
from goodput_agent.cli.render import TerminalConsole
from goodput_agent.core.untrusted import markup


@click.command("verify")
@click.argument("investigation_id")
@click.option("--after", "after", type=click.Path(path_type=Path), default=None,
              help="Bundle collected after the fix (same layout as the investigated one).")
@click.option("--slurm-job", "slurm_job", default=None, metavar="JOB",
              help="Failure: collect the job (and sinfo -R) from Slurm now as the after bundle.")
@click.option("--slurm-conf", type=click.Path(path_type=Path), default=None,
              help="With --slurm-job: slurm.conf of the cluster (default: $SLURM_CONF).")
@click.option("--prometheus", "prometheus_url", default=None, metavar="URL",
              help="Latency: measure the after window live from this Prometheus instead.")
@click.option("--since", "since_text", default=None, metavar="WHEN",
              help="With --prometheus: the after window (2h, or START/END); default: 1h.")
@click.option("--before", "before", type=click.Path(path_type=Path), default=None,
              help="The investigated bundle (default: the investigation's own target).")
@json_option
@ledger_option
def verify_cmd(investigation_id: str, after: Path | None, slurm_job: str | None,
               slurm_conf: Path | None, prometheus_url: str | None,
               since_text: str | None, before: Path | None, as_json: bool,
               ledger_path: Path | None) -> None:
    """Re-measure after the fix: recovered / partly / not_recovered / regressed_elsewhere, or
    incomparable (exit 3) when the conditions differ. The verdict becomes a ledger row."""
    from goodput_agent.ledger import open_ledger
    from goodput_agent.verify.run import verify_investigation

    source = window = None
    if prometheus_url:
        from goodput_agent.core.timespec import looking_back
        from goodput_agent.metrics.prometheus import PrometheusSource

        window = looking_back(since_text or "1h")
        source = PrometheusSource(prometheus_url, horizon=window)
    if slurm_job:
        after = _collect_after(slurm_job, slurm_conf, _ledger_path(ledger_path), investigation_id)
    with open_ledger(_ledger_path(ledger_path)) as lg:
        result, rows = verify_investigation(lg, investigation_id, after, before, source=source,
                                            window=window)
    if as_json:
        _echo_json({**result.model_dump(mode="json"), "ledger_rows": rows})
    else:
        render_verification(result, TerminalConsole())
    if result.verdict == "incomparable":
        sys.exit(3)


def _collect_after(job: str, slurm_conf: Path | None, ledger: Path, inv_id: str) -> Path:
    """The job as Slurm knows it now, collected beside the ledger (kept: it is the evidence)."""
    from datetime import UTC, datetime

    from goodput_agent.collect.slurm import collect_slurm_job
    from goodput_agent.sources.slurm import SlurmCLI

    out = ledger.parent / "reports" / inv_id / f"after-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    collect_slurm_job(job, out, SlurmCLI(slurm_conf=str(slurm_conf) if slurm_conf else None))
    return out


def render_verification(r: Any, console: Console) -> None:
    color = {"recovered": "green", "partly": "yellow", "incomparable": "cyan"}.get(r.verdict,
                                                                                   "red")
    body = [f"[bold {color}]{markup(r.verdict)}[/]  {markup(r.summary)}"]
    body += [f"condition: {markup(c)}" for c in r.conditions]
    console.print(Panel("\n".join(body), title=f"Verify ({r.kind})"))
    if r.phases:
        t = Table(title="Before / after", expand=True)
        for col in ("phase", "healthy", "before", "after"):
            t.add_column(col, justify="left" if col == "phase" else "right")
        for p in r.phases:
            t.add_row(markup(p.phase), *("—" if v is None else f"{v:.3g} {p.unit}"
                                 for v in (p.healthy, p.before, p.after)))
        console.print(t)
    for n in [*r.notes, *(f"evidence: {e}" for e in r.evidence[:10])]:
        console.print(f"[dim]{markup(n)}[/]")
