"""`goodput watch`: investigate every failed job as it happens; `goodput watch status`.

Exit codes of `goodput watch`: 0 stopped cleanly (SIGTERM/SIGINT, or `--once` with every source
read and every incident investigated), 2 bad input, 4 (`--once`) a source could not be read,
5 (`--once`) an incident could not be investigated after its retries (recorded as failed).
`goodput watch status`: 0 every source healthy, 4 a source is failing, 2 no watch ledger.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from goodput_agent.watch.status import WatchStatus

from goodput_agent.cli.options import ledger_option, with_options
from goodput_agent.cli.serve import page_options, serve_config, start_pages
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import json_dumps, line

EXIT_SOURCE_DOWN, EXIT_INCIDENT_FAILED = 4, 5


# the flags that choose and configure sources (sources.SourceOptions); a new source adds its
# flags here and reads them in _source_options
source_options: list[Callable[[Any], Any]] = [
    click.option("--slurm", is_flag=True, help="Follow Slurm job ends (sacct) and node "
                 "DOWN/DRAIN events (sinfo -R)."),
    click.option("--slurm-conf", default=None, metavar="PATH",
                 help="slurm.conf to use (default: $SLURM_CONF, else Slurm's own)."),
    click.option("--partition", "partitions", multiple=True, help="Only this partition "
                 "(repeatable)."),
    click.option("--account", "accounts", multiple=True, help="Only this account (repeatable)."),
    click.option("--user", "users", multiple=True, help="Only this user's jobs (repeatable)."),
    click.option("--min-nodes", default=0, type=click.IntRange(0), help="Only jobs on at "
                 "least this many nodes."),
    click.option("--min-gpus", default=0, type=click.IntRange(0), help="Only jobs with at "
                 "least this many GPUs (AllocTRES gres/gpu)."),
    click.option("--no-node-events", is_flag=True, help="Jobs only: no node DOWN/DRAIN "
                 "triggers."),
    click.option("--k8s", is_flag=True, help="Watch Kubernetes: failed Jobs, JobSets and "
                 "PyTorchJobs, GPU pods that end OOMKilled/Error/Evicted, GPU nodes NotReady or "
                 "tainted."),
    click.option("--namespace", "namespaces", multiple=True, help="--k8s: only this "
                 "namespace (repeatable; default: all)."),
    click.option("--selector", default="", help="--k8s: a label selector for workloads and "
                 "pods."),
    click.option("--kubeconfig", type=click.Path(path_type=Path), default=None,
                 help="--k8s: kubeconfig file (default: $KUBECONFIG, ~/.kube/config)."),
    click.option("--context", "kube_context", default=None, help="--k8s: kubeconfig context."),
    click.option("--in-cluster", is_flag=True, default=None,
                 help="--k8s: use the pod's service account."),
    click.option("--prometheus", "prometheus_url", default=None, metavar="URL",
                 help="Poll this Prometheus' firing alerts (the rules in "
                      "deploy/prometheus/); latency alerts are investigated against it."),
    click.option("--alertmanager-listen", default=None, metavar="HOST:PORT",
                 help="Receive Alertmanager webhooks here (path /alertmanager)."),
    click.option("--alertmanager-token-file", type=click.Path(path_type=Path), default=None,
                 metavar="FILE", help="Require this bearer token on webhooks (Alertmanager: "
                 "http_config.authorization.credentials_file)."),
    click.option("--live", is_flag=True, help="--slurm/--k8s: also look at every running job each "
                 "--live-interval for a stall (who hangs, from the ranks' stacks) or a slow "
                 "node (with --prometheus), while it runs."),
    click.option("--live-interval", "live_interval_s", default=10.0, show_default=True,
                 type=click.FloatRange(1), help="Seconds between looks at the running jobs."),
    click.option("--min-stall", "min_stall_s", default=30.0, show_default=True,
                 type=click.FloatRange(0.1), help="--live: no stall is called on a shorter "
                 "silence."),
    click.option("--py-spy", "pyspy", default="py-spy", show_default=True,
                 help="--live: py-spy as the nodes find it."),
    click.option("--kubectl", default="kubectl", show_default=True,
                 help="--k8s --live: the kubectl that runs the dump script in the pods."),
    click.option("--since", "since_text", default=None, metavar="WHEN",
                 help="Where the first poll starts: 2h (that long ago) or an ISO time "
                      "(default: now). A restart resumes from the stored cursor instead."),
]




def _source_options(flags: dict[str, Any], timeout_s: float):  # noqa: ANN202
    from goodput_agent.core.timespec import looking_back
    from goodput_agent.watch.slurm_source import SlurmFilters
    from goodput_agent.watch.sources import SourceOptions

    since_text = flags.pop("since_text")
    live, live_interval_s = flags.pop("live"), flags.pop("live_interval_s")
    min_stall_s, pyspy = flags.pop("min_stall_s"), flags.pop("pyspy")
    kubectl = flags.pop("kubectl")
    live_options = None
    if live:
        from goodput_agent.analysis.live.stall import StallSettings
        from goodput_agent.detect.check import CheckOptions
        from goodput_agent.detect.slurm_job import DumpSettings

        live_options = CheckOptions(
            dumps=DumpSettings(pyspy=pyspy, timeout_s=timeout_s),
            stall=StallSettings(min_stall_s=min_stall_s),
            prometheus_url=flags.get("prometheus_url"), timeout_s=timeout_s)
    return SourceOptions(
        live=live_options, live_interval_s=live_interval_s, kubectl=kubectl,
        slurm=flags.pop("slurm"), timeout_s=timeout_s, k8s=flags.pop("k8s"),
        namespaces=list(flags.pop("namespaces")), selector=flags.pop("selector"),
        kubeconfig=flags.pop("kubeconfig"), kube_context=flags.pop("kube_context"),
        in_cluster=flags.pop("in_cluster"), prometheus_url=flags.pop("prometheus_url"),
        alertmanager_listen=flags.pop("alertmanager_listen"),
        alertmanager_token_file=flags.pop("alertmanager_token_file"),
        since=looking_back(since_text).start if since_text else None,
        slurm_filters=SlurmFilters(
            partitions=list(flags.pop("partitions")), accounts=list(flags.pop("accounts")),
            users=list(flags.pop("users")), min_nodes=flags.pop("min_nodes"),
            min_gpus=flags.pop("min_gpus"), node_events=not flags.pop("no_node_events")))


PAGE_FLAGS = ("policy_path", "token_file", "proxy_secret_file", "trusted_proxies",
              "proxy_user_header", "proxy_groups_header")


def _pages(serve_at: str, ledger: Path, flags: dict[str, Any], slurm_conf: str | None,
           options: Any) -> Callable[[], None]:
    from goodput_agent.watch.sources import listen_address

    host, port = listen_address(serve_at, "--serve")
    config = serve_config(ledger, host, flags, Path(slurm_conf) if slurm_conf else None,
                          options.kubeconfig)
    click.echo(f"goodput watch: review pages on http://{host}:{port}/", err=True)
    return start_pages(config, port)


@click.group("watch", invoke_without_command=True)
@with_options(source_options)
@click.option("--once", is_flag=True, help="One poll of each source, investigate what it "
              "found, exit (for cron and tests).")
@click.option("--interval", "interval_s", default=30.0, show_default=True,
              type=click.FloatRange(0.1), help="Seconds between polls of a source.")
@click.option("--concurrency", default=2, show_default=True, type=click.IntRange(1, 64),
              help="Investigations at once.")
@click.option("--group-window", "group_window_s", default=60.0, show_default=True,
              type=click.FloatRange(0), help="Seconds within which failures sharing a node, a "
              "switch or a node-fault reason are one grouped incident.")
@click.option("--group-min", "group_min", default=3, show_default=True,
              type=click.IntRange(2), help="Failures that make a group.")
@click.option("--max-attempts", default=3, show_default=True, type=click.IntRange(1),
              help="Investigation attempts per incident before it is marked failed.")
@click.option("--notify-url", default=None, metavar="URL", help="POST a notification here "
              "after each investigation.")
@click.option("--notify-format", type=click.Choice(["slack", "json"]), default="slack",
              show_default=True)
@click.option("--review-url", default=None, metavar="URL",
              help="Base address of `goodput serve`, for the link in notifications.")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True,
              help="Seconds to wait for each source command or call.")
@click.option("--serve", "serve_at", default=None, metavar="HOST:PORT",
              help="Serve the review pages from this process too (they read through the "
                   "watch's own sessions of the ledger); with the page options below.")
@with_options(page_options)
@ledger_option
@click.pass_context
def watch(ctx: click.Context, once: bool, interval_s: float, concurrency: int,
          group_window_s: float, group_min: int, max_attempts: int, notify_url: str | None,
          notify_format: str, review_url: str | None, timeout_s: float, serve_at: str | None,
          ledger_path: Path | None, slurm_conf: str | None, **flags: Any) -> None:
    """Investigate every failed job and node fault as it happens, exactly once (the queue and
    the cursors live in the ledger: a restart resumes, a kill loses nothing)."""
    if ctx.invoked_subcommand:
        return
    from goodput_agent.core.arenas import cap_malloc_arenas

    cap_malloc_arenas()  # before any thread starts: RSS flat over a day of investigations
    from goodput_agent.ledger import open_ledger
    from goodput_agent.watch.grouping import GroupRule
    from goodput_agent.watch.investigator import CollectSettings, investigate_trigger
    from goodput_agent.watch.runner import Watch, WatchOptions
    from goodput_agent.watch.sources import build_sources, start_receivers

    if slurm_conf:
        import os

        os.environ["SLURM_CONF"] = slurm_conf  # the sources' and the collectors' commands
    options = _source_options(flags, timeout_s)
    if options.live is not None and not (options.slurm or options.k8s):
        raise click.UsageError("--live looks at running jobs: add --slurm or --k8s")
    sources = build_sources(options)
    if not sources and not options.any:
        raise click.UsageError("choose what to watch: --slurm, --k8s, --prometheus URL or "
                               "--alertmanager-listen HOST:PORT")
    settings = CollectSettings(slurm_conf=slurm_conf, timeout_s=timeout_s,
                               prometheus_url=options.prometheus_url,
                               kubeconfig=options.kubeconfig, kube_context=options.kube_context,
                               in_cluster=options.in_cluster, live=options.live,
                               kubectl=options.kubectl)
    notify = None
    if notify_url:
        from goodput_agent.watch.notify import NotifySettings, notifier

        notify = notifier(NotifySettings(url=notify_url, format=notify_format,  # type: ignore[arg-type]
                                         review_url=review_url))
    run_options = WatchOptions(interval_s=interval_s, concurrency=concurrency,
                               max_attempts=max_attempts,
                               group=GroupRule(window_s=group_window_s, min_size=group_min))
    page_flags = {k: flags.pop(k) for k in list(flags) if k in PAGE_FLAGS}
    with open_ledger(ledger_path) as ledger:
        w = Watch(ledger, sources, lambda t, lg: investigate_trigger(t, lg, settings),
                  run_options, notify)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: w.stop())
        stops = start_receivers(options, w.sink)
        if serve_at:
            stops.append(_pages(serve_at, ledger.path, page_flags, slurm_conf, options))
        click.echo(f"goodput watch: {', '.join(s.name for s in sources) or 'receivers'}; "
                   f"ledger {line(ledger.path)}", err=True)
        try:
            summary = w.run(once=once)
        finally:
            for stop in stops:
                stop()
    click.echo(f"goodput watch: stopped ({summary.investigated} investigated, "
               f"{summary.failed} failed, {summary.polls_failed} failed polls)", err=True)
    if once and summary.polls_failed:
        sys.exit(EXIT_SOURCE_DOWN)
    if once and summary.failed:
        sys.exit(EXIT_INCIDENT_FAILED)


@watch.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@ledger_option
def watch_status(as_json: bool, ledger_path: Path | None) -> None:
    """Each source's health and lag, the queue by state, and the storm groups."""
    from goodput_agent.ledger import default_ledger_path
    from goodput_agent.watch.status import read_status

    path = ledger_path or default_ledger_path()
    status = read_status(path)
    if status is None:
        raise BadInput(f"{path}: no watch has run on this ledger (goodput watch --slurm)")
    if as_json:
        click.echo(json_dumps(status.model_dump(mode="json")))
    else:
        render_status(status)
    if not status.healthy:
        sys.exit(EXIT_SOURCE_DOWN)


def render_status(status: WatchStatus) -> None:
    from rich.table import Table

    from goodput_agent.cli.render import TerminalConsole
    from goodput_agent.core.untrusted import markup
    from goodput_agent.watch.status import age, when

    console = TerminalConsole()
    style = {True: "green", False: "yellow"}.get(status.running, "dim")  # type: ignore[arg-type]
    console.print(f"watch: [{style}]{markup(status.state)}[/]", highlight=False)
    at_last = "" if status.running else " (at its last poll)"
    t = Table(title=f"sources{at_last}")
    for col in ("source", "health", "lag", "last ok", "failures", "last error"):
        t.add_column(col)
    for s in status.sources:
        t.add_row(markup(s.source), "[green]ok[/]" if s.ok else "[red]down[/]", age(s.lag_s),
                  when(s.last_ok_at), str(s.consecutive_failures),
                  markup(s.last_error or ""))
    console.print(t)
    console.print("queue: " + ", ".join(f"{k} {v}" for k, v in status.queue.items()),
                  highlight=False)
    failed = [i for i in status.incidents if i["status"] == "failed"]
    for i in failed:  # each failed incident, with why (the queue's count alone hides them)
        console.print(markup(f"failed: {i['source']} {i['question']} {i['subject']} after "
                             f"{i['attempts']} attempts: {i['error'] or 'no error recorded'}"),
                      style="red", highlight=False)
    for g in status.groups[:10]:
        console.print(markup(f"group {g['group_key']}: {g['members']} incidents, "
                             f"investigation {g['investigation_id'] or '(pending)'}, "
                             f"shared {', '.join(g['signals'][:5])}"), highlight=False)
