"""`goodput account --slurm-job ID | --k8s-job NS/NAME | BUNDLE`: where a job's GPU-hours went.

The live forms collect a bundle beside the ledger first (as `goodput investigate` does); for
Slurm, `sacct -D` (every run of a requeued job) is added to it as slurm/sacct_attempts.txt.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from goodput_agent.accounting.account import AccountOptions, account_bundle
from goodput_agent.accounting.attempts import SACCT_ATTEMPT_FIELDS, SACCT_ATTEMPTS_FILE
from goodput_agent.accounting.model import JobAccount
from goodput_agent.cli.render import TerminalConsole
from goodput_agent.untrusted import json_text, line, markup


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds:.0f} s"


def render_account(acct: JobAccount, console: Console) -> None:
    t = Table(title=markup(f"Attempts of {acct.target}"))
    for col in ("#", "state", "nodes", "GPUs", "queue", "elapsed", "productive", "lost",
                "cause"):
        t.add_column(col, overflow="fold")
    for a in acct.attempts:
        productive = sum(s.seconds for s in a.segments if s.kind == "productive")
        lost = sum(s.seconds for s in a.segments if s.kind == "lost_progress")
        cause = a.failure.category if a.failure else "—"
        nodes = a.nodes[0] + (f" +{len(a.nodes) - 1}" if len(a.nodes) > 1 else "") \
            if a.nodes else "—"
        t.add_row(str(a.index), *map(markup, (a.state, nodes)),
                  str(a.gpus), _hours(a.queue_wait_s), _hours(a.elapsed_s), _hours(productive),
                  _hours(lost), markup(cause))
    console.print(t)
    for a in acct.attempts:
        if a.failure is not None:
            console.print(markup(f"#{a.index} {a.failure.category}: {a.failure.summary} "
                                 f"(investigation {a.failure.investigation_id or '—'})"),
                          highlight=False)
    console.print(f"[bold]goodput fraction[/] {acct.goodput_fraction:.1%} of "
                  f"{acct.allocated_gpu_hours:.2f} GPU-h held · [bold]effective training time "
                  f"ratio[/] {acct.effective_training_time_ratio:.1%}")
    b = Table(title="Badput by cause (GPU-hours)")
    b.add_column("cause")
    b.add_column("GPU-h", justify="right")
    for cause, hours in acct.badput_gpu_hours_by_cause.items():
        b.add_row(markup(cause) + (" (waiting, not held)" if cause == "queueing" else ""),
                  f"{hours:.3f}")
    console.print(b)
    for note in acct.notes:
        console.print("[yellow]note:[/] " + markup(note), highlight=False)


def _slurm_bundle(job_id: str, ledger_path: Path | None, timeout_s: float) -> Path:
    from goodput_agent.cli.live import _slurm_cli, live_bundle_dir
    from goodput_agent.collect.slurm import collect_slurm_job
    from goodput_agent.ledger import default_ledger_path
    from goodput_agent.sources.errors import SourceError

    bundle = live_bundle_dir(ledger_path or default_ledger_path(), job_id)
    cli = _slurm_cli(timeout_s)
    collect_slurm_job(job_id, bundle, cli)
    try:
        out = cli.output("sacct_attempts.txt", f"every run of job {job_id} (sacct -D)",
                         ["sacct", "-j", job_id, "-D", "-P", f"--format={SACCT_ATTEMPT_FIELDS}"])
        (bundle / SACCT_ATTEMPTS_FILE).write_text(out.text)
    except SourceError as exc:
        click.echo(f"goodput: sacct -D: {line(exc.message)} (counting the last run only)",
                   err=True)
    click.echo(f"goodput: bundle collected into {line(bundle)}", err=True)
    return bundle


def _k8s_bundle(k8s_job: str, ledger_path: Path | None, timeout_s: float) -> Path:
    from goodput_agent.cli.k8s import K8sArgs, collect_k8s_bundle, live_bundle_dir
    from goodput_agent.ledger import default_ledger_path

    args = K8sArgs(k8s_job=k8s_job)
    bundle = live_bundle_dir(ledger_path or default_ledger_path(), args.label)
    collect_k8s_bundle(args, bundle, timeout_s)
    click.echo(f"goodput: bundle collected into {line(bundle)}", err=True)
    return bundle


@click.command("account")
@click.argument("bundle", required=False, type=click.Path(path_type=Path))
@click.option("--slurm-job", default=None, metavar="ID", help="A Slurm job (live: sacct -D).")
@click.option("--k8s-job", default=None, metavar="NS/NAME", help="A Kubernetes Job (live).")
@click.option("--ledger", "ledger_path", type=click.Path(path_type=Path), default=None,
              help="DuckDB ledger file (default: user data dir).")
@click.option("--json", "as_json", is_flag=True, help="Print the account as JSON.")
@click.option("--svg", "svg_path", type=click.Path(path_type=Path), default=None,
              help="Also draw the attempts on one clock into this SVG file.")
@click.option("--checkpoint-interval", "interval_s", type=float, default=None, metavar="SECONDS",
              help="Checkpoints every SECONDS from the first step, when the logs print none.")
@click.option("--gpus", type=int, default=None,
              help="GPUs per attempt, when the scheduler record does not say.")
@click.option("--no-investigate", is_flag=True,
              help="Do not investigate failed attempts the ledger has no verdict for.")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True,
              help="Seconds to wait for each Slurm command or Kubernetes call.")
def account_cmd(bundle: Path | None, slurm_job: str | None, k8s_job: str | None,
                ledger_path: Path | None, as_json: bool, svg_path: Path | None,
                interval_s: float | None, gpus: int | None, no_investigate: bool,
                timeout_s: float) -> None:
    """Where a job's GPU-hours went: its attempts, start-up, productive time, checkpointing,
    progress lost to each failure and the failure's diagnosed cause, queueing."""
    from goodput_agent.ledger import open_ledger

    if sum(x is not None for x in (bundle, slurm_job, k8s_job)) != 1:
        raise click.UsageError("give one of BUNDLE, --slurm-job or --k8s-job")
    whole_job: list[str] = []
    if slurm_job:
        bundle = _slurm_bundle(slurm_job, ledger_path, timeout_s)
    elif k8s_job:
        bundle = _k8s_bundle(k8s_job, ledger_path, timeout_s)
        # `goodput investigate --k8s-job` keeps its bundle as reports/k8s-<ns>-<name>-<time>/
        whole_job = ["%/k8s-" + k8s_job.replace("/", "-") + "-%"]
    assert bundle is not None
    opts = AccountOptions(checkpoint_interval_s=interval_s, gpus=gpus,
                          investigate=not no_investigate, whole_job_targets=whole_job)
    target = f"slurm job {slurm_job}" if slurm_job else f"k8s job {k8s_job}" if k8s_job else None
    with open_ledger(ledger_path) as ledger:
        acct = account_bundle(bundle, ledger, opts, target=target)
    if svg_path is not None:
        from goodput_agent.pictures.account_attempts import draw_account

        draw_account(acct, svg_path)
    if as_json:
        click.echo(json_text(acct.model_dump_json(indent=2)))
    else:
        render_account(acct, TerminalConsole())
