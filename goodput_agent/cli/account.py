"""`goodput account --slurm-job ID | --k8s-job NS/NAME | BUNDLE`: where a job's GPU-hours went.

The live forms collect a bundle beside the ledger first (as `goodput investigate` does); for
Slurm, `sacct -D` (every run of a requeued job) is added to it as slurm/sacct_attempts.txt.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from goodput_agent.accounting.account import AccountOptions, account_bundle
from goodput_agent.accounting.attempts import SACCT_ATTEMPT_FIELDS, SACCT_ATTEMPTS_FILE
from goodput_agent.accounting.causes import like_escape
from goodput_agent.accounting.model import JobAccount
from goodput_agent.cli.k8s import K8S_OPTIONS, K8sArgs
from goodput_agent.cli.options import ledger_option
from goodput_agent.cli.render import TerminalConsole
from goodput_agent.core.untrusted import json_text, line, markup


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
    causes: dict[tuple[str, str | None], list[int]] = {}
    summaries: dict[tuple[str, str | None], str] = {}
    for a in acct.attempts:
        if a.failure is not None:
            key = (a.failure.category, a.failure.investigation_id)
            causes.setdefault(key, []).append(a.index)
            summaries[key] = a.failure.summary
    for (category, inv_id), indices in causes.items():
        which = ",".join(f"#{i}" for i in indices)
        console.print(markup(f"{which} {category}: {summaries[(category, inv_id)]} "
                             f"(investigation {inv_id or '—'})"), highlight=False)
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


def _k8s_bundle(args: K8sArgs, ledger_path: Path | None, timeout_s: float) -> Path:
    from goodput_agent.cli.k8s import collect_k8s_bundle, live_bundle_dir
    from goodput_agent.ledger import default_ledger_path

    bundle = live_bundle_dir(ledger_path or default_ledger_path(), args.label)
    collect_k8s_bundle(args, bundle, timeout_s)
    click.echo(f"goodput: bundle collected into {line(bundle)}", err=True)
    return bundle


_K8S_WANTED = {"k8s_job", "k8s_pod", "kubeconfig", "kube_context", "kube_namespace",
               "in_cluster", "log_since", "log_tail"}  # not the latency question's windows


def _k8s_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(K8S_OPTIONS):
        if opt(lambda: None).__click_params__[-1].name in _K8S_WANTED:
            f = opt(f)
    return f


@click.command("account")
@click.argument("bundle", required=False, type=click.Path(path_type=Path))
@click.option("--slurm-job", default=None, metavar="ID", help="A Slurm job (live: sacct -D).")
@_k8s_options
@ledger_option
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
def account_cmd(bundle: Path | None, slurm_job: str | None, ledger_path: Path | None,
                as_json: bool, svg_path: Path | None, interval_s: float | None,
                gpus: int | None, no_investigate: bool, timeout_s: float,
                **k8s_flags: Any) -> None:
    """Where a job's GPU-hours went: its attempts, start-up, productive time, checkpointing,
    progress lost to each failure and the failure's diagnosed cause, queueing."""
    from goodput_agent.ledger import open_ledger

    k8s = K8sArgs.pop(k8s_flags)
    if sum(x for x in (bundle is not None, bool(slurm_job), k8s.wanted)) != 1:
        raise click.UsageError("give one of BUNDLE, --slurm-job, --k8s-job or --k8s-pod")
    whole_job: list[str] = []
    if slurm_job:
        bundle = _slurm_bundle(slurm_job, ledger_path, timeout_s)
    elif k8s.wanted:
        bundle = _k8s_bundle(k8s, ledger_path, timeout_s)
        # `goodput investigate --k8s-job` keeps its bundle as reports/k8s-<ns>-<name>-<time>/
        whole_job = [f"%/{like_escape(bundle.parent.name.rsplit('-', 1)[0])}-%"]
    assert bundle is not None
    opts = AccountOptions(checkpoint_interval_s=interval_s, gpus=gpus,
                          investigate=not no_investigate, whole_job_targets=whole_job)
    target = f"slurm job {slurm_job}" if slurm_job else \
        f"k8s {'job' if k8s.k8s_job else 'pod'} {k8s.label}" if k8s.wanted else None
    with open_ledger(ledger_path) as ledger:
        acct = account_bundle(bundle, ledger, opts, target=target)
    if svg_path is not None:
        from goodput_agent.pictures.account_attempts import draw_account

        draw_account(acct, svg_path)
    if as_json:
        click.echo(json_text(acct.model_dump_json(indent=2)))
    else:
        render_account(acct, TerminalConsole())
