"""`goodput collect --slurm-job ID -o DIR`, and what `goodput investigate --slurm-job ID` runs:
collect into a bundle kept beside the ledger (reports/slurm-job-<id>-<time>/bundle, to attach to
a ticket), then the ordinary bundle investigation of it — so the live verdict and the verdict
on the collected bundle are one and the same."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from goodput_agent.cli.k8s import (
    K8sArgs,
    collect_k8s_bundle,
    collect_latency_options,
    k8s_options,
)
from goodput_agent.cli.ray_option import ray_option, ray_runner
from goodput_agent.cli.render import TerminalConsole
from goodput_agent.collect.base import Manifest
from goodput_agent.core.untrusted import json_text, line, markup
from goodput_agent.report import Report

SLURM_TIMEOUT_HELP = "Seconds to wait for each Slurm command."


def _slurm_cli(timeout_s: float):  # noqa: ANN202 - a SlurmCLI
    from goodput_agent.sources.slurm import SlurmCLI

    return SlurmCLI(timeout_s=timeout_s)


def render_manifest(m: Manifest, root: Path, console: Console) -> None:
    """Names and messages come from the cluster: shown with visible controls, never as markup."""
    t = Table(title=markup(f"Collected into {root}"))
    for col in ("file", "what", "bytes", "from"):
        t.add_column(col)
    for f in m.files:
        t.add_row(*map(markup, (f.path, f.what + (" (redacted)" if f.redacted else "")
                                + (f" (cut: {f.truncated})" if f.truncated else ""),
                                str(f.bytes), f.command or f.query or f.origin or "")))
    console.print(t)
    for e in m.errors:
        console.print("[yellow]missing:[/] " + markup(
            f"{e.what} — {e.source} {e.kind.replace('_', ' ')}: {e.error}"), highlight=False)


@click.command("collect")
@click.option("--slurm-job", "slurm_job", default=None, metavar="ID",
              help="The Slurm job to collect (sacct, scontrol, its output files, kernel logs).")
@k8s_options
@click.option("--prometheus", "prometheus", default=None, metavar="URL",
              help="With --k8s-*: also the DCGM exporter series of the pods' nodes, and a "
                   "vLLM pod's own series (the latency question).")
@collect_latency_options
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(path_type=Path),
              help="New (or empty) folder to write the bundle into.")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True,
              help="Seconds to wait for each Slurm command or Kubernetes/Prometheus call.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@ray_option
def collect_cmd(slurm_job: str | None, out_dir: Path, timeout_s: float, as_json: bool,
                ray_address: str | None = None, **k8s_flags: object) -> None:
    """Write an incident bundle from live sources, with a manifest.json of what was collected
    from where (commands, time window) and what could not be."""
    from goodput_agent.collect.slurm import collect_slurm_job

    k8s = K8sArgs.pop(k8s_flags)
    if bool(slurm_job) == k8s.wanted:
        raise click.UsageError("give one of --slurm-job, --k8s-job or --k8s-pod")
    if slurm_job and k8s.prometheus:
        raise click.UsageError("--prometheus goes with --k8s-job or --k8s-pod")
    if ray_address and k8s.wanted:
        raise click.UsageError("--ray goes with --slurm-job (a pod's logs come from the API)")
    runner = ray_runner(ray_address)  # the other nodes' kernel logs read there, as Ray tasks
    manifest = collect_k8s_bundle(k8s, out_dir, timeout_s) if k8s.wanted else \
        collect_slurm_job(slurm_job or "", out_dir, _slurm_cli(timeout_s),
                          on_node=runner.run_on if runner else None)
    if as_json:
        click.echo(json_text(manifest.model_dump_json(by_alias=True, indent=2)))
    else:
        render_manifest(manifest, out_dir, TerminalConsole())


def live_bundle_dir(ledger_path: Path, job_id: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return ledger_path.parent / "reports" / f"slurm-job-{job_id}-{stamp}" / "bundle"


def investigate_slurm_job(job_id: str, ledger_path: Path | None, kind: str | None,
                          pictures_dir: Path | None, timeout_s: float,
                          claude: object = None) -> Report:
    """Collect the job into a bundle beside the ledger, then investigate that bundle."""
    from goodput_agent.collect.slurm import collect_slurm_job
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import default_ledger_path, open_ledger

    bundle = live_bundle_dir(ledger_path or default_ledger_path(), job_id)
    collect_slurm_job(job_id, bundle, _slurm_cli(timeout_s))
    click.echo(f"goodput: bundle collected into {line(bundle)}", err=True)
    with open_ledger(ledger_path) as ledger:
        return investigate_bundle(bundle, ledger, kind, pictures_dir=pictures_dir,
                                  claude=claude)
