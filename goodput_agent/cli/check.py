"""`goodput check`: one look at one running job — stalled (who hangs), or one node slower
than its peers — recorded as an investigation. Read-only, like every investigation.

Exit codes: 0 the job progresses and no node is slow; 2 bad input (not running, unknown
job); 3 not enough evidence to judge (no progress readable, a metric series that stopped);
6 a hang found; 7 a slow node (straggler or throttled GPUs) found.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from goodput_agent.cli.options import json_option, ledger_option
from goodput_agent.core.errors import BadInput

EXIT_UNKNOWN, EXIT_HANG, EXIT_SLOW = 3, 6, 7


@click.command("check")
@click.option("--slurm-job", default=None, metavar="ID", help="A running Slurm job.")
@click.option("--slurm-conf", default=None, metavar="PATH", help="slurm.conf to use.")
@click.option("--k8s-job", default=None, metavar="NS/NAME",
              help="A running Kubernetes Job, JobSet, PyTorchJob (NS/KIND/NAME when names "
                   "collide); stacks through kubectl exec (opt-in RBAC: "
                   "deploy/kubernetes/optional/stack-dumps.yaml).")
@click.option("--kubeconfig", type=click.Path(path_type=Path), default=None,
              help="--k8s-job: kubeconfig file.")
@click.option("--context", "kube_context", default=None, help="--k8s-job: kubeconfig context.")
@click.option("-n", "--namespace", default=None, help="--k8s-job: when NS/ is omitted.")
@click.option("--in-cluster", is_flag=True, default=None,
              help="--k8s-job: use the pod's service account.")
@click.option("--kubectl", default="kubectl", show_default=True,
              help="--k8s-job: the kubectl that runs the dump script in the pods.")
@click.option("--prometheus", "prometheus_url", default=None, metavar="URL",
              help="Compare the job's nodes on their DCGM metrics (fail-slow), as PromQL "
                   "computed by this Prometheus.")
@click.option("--job-selector", default=None, metavar='LABELS',
              help='With --prometheus alone: the job\'s label matchers (job="llama"); its '
                   "progress is its step counter (--step-metric).")
@click.option("--step-metric", default=None, metavar="NAME",
              help="--job-selector: the counter of steps the job exports.")
@click.option("--nodes", "node_names", default=None, metavar="N1,N2",
              help="--job-selector: the job's nodes, for fail-slow (default: the node label's "
                   "values on the step counter's series).")
@click.option("--node-label", default="Hostname", show_default=True,
              help="The label that names the node in the metrics.")
@click.option("--metric", "extra_metrics", multiple=True, metavar="SHORT=NAME",
              help="More per-node metrics to compare: step_time=NAME (per-rank step time, "
                   "higher is slower) or ib_bw=NAME, pcie_bw=NAME (lower is slower).")
@click.option("--stacks", "stacks_when", type=click.Choice(["suspect", "always", "never"]),
              default="suspect", show_default=True,
              help="Dump every rank's stack (py-spy through srun --overlap): when the job is "
                   "silent past an ordinary step, always, or never.")
@click.option("--samples", default=1, show_default=True, type=click.IntRange(1, 20),
              help="Stack samples per rank (3 or more also finds a rank slower than the rest).")
@click.option("--py-spy", "pyspy", default="py-spy", show_default=True,
              help="py-spy as the nodes find it (a path, or a name on their PATH).")
@click.option("--min-stall", "min_stall_s", default=30.0, show_default=True,
              type=click.FloatRange(0.1), help="No stall is called on a shorter silence.")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True,
              help="Seconds for each command or query.")
@ledger_option
@json_option
def check_cmd(slurm_job: str | None, slurm_conf: str | None, k8s_job: str | None,
              kubeconfig: Path | None, kube_context: str | None, namespace: str | None,
              in_cluster: bool | None, kubectl: str, prometheus_url: str | None,
              job_selector: str | None, step_metric: str | None, node_names: str | None,
              node_label: str, extra_metrics: tuple[str, ...], stacks_when: str, samples: int,
              pyspy: str, min_stall_s: float, timeout_s: float, ledger_path: Path | None,
              as_json: bool) -> None:
    """Is this running job stalled (and who hangs), or is one of its nodes slow?"""
    from goodput_agent.analysis.live.stall import StallSettings
    from goodput_agent.detect.check import CheckOptions
    from goodput_agent.detect.slurm_job import DumpSettings
    from goodput_agent.ledger import open_ledger

    if sum(map(bool, (slurm_job, k8s_job, job_selector))) != 1:
        raise click.UsageError("name one running job: --slurm-job ID, --k8s-job NS/NAME, or "
                               "--prometheus URL --job-selector LABELS --step-metric NAME")
    if job_selector and not (prometheus_url and step_metric):
        raise click.UsageError("--job-selector needs --prometheus URL and --step-metric NAME")
    extra = {}
    for item in extra_metrics:
        short, sep, name = item.partition("=")
        if not sep or short not in ("step_time", "ib_bw", "pcie_bw", "nvlink_bw") or not name:
            raise BadInput(f"--metric {item}: expected step_time=NAME, ib_bw=NAME, "
                           "pcie_bw=NAME or nvlink_bw=NAME")
        extra[short] = name
    options = CheckOptions(
        dumps=DumpSettings(when=stacks_when, samples=samples, timeout_s=timeout_s, pyspy=pyspy),
        stall=StallSettings(min_stall_s=min_stall_s), prometheus_url=prometheus_url,
        node_label=node_label, extra_metrics=extra, timeout_s=timeout_s)
    with open_ledger(ledger_path) as ledger:
        if slurm_job:
            from goodput_agent.detect.check import check_slurm_job
            from goodput_agent.sources.slurm import SlurmCLI

            cli = SlurmCLI(timeout_s=timeout_s, slurm_conf=slurm_conf)
            result = check_slurm_job(slurm_job, ledger, cli, options)
        elif job_selector:
            from goodput_agent.detect.check import check_prometheus_job

            result = check_prometheus_job(
                job_selector, step_metric or "", ledger, options,
                [n for n in (node_names or "").split(",") if n] or None)
        else:
            from goodput_agent.detect.check import check_k8s_job
            from goodput_agent.detect.k8s_job import KubectlSettings
            from goodput_agent.sources.k8s import K8sSource

            source = K8sSource.connect(kubeconfig=kubeconfig, context=kube_context,
                                       namespace=namespace, in_cluster=in_cluster,
                                       timeout_s=timeout_s)
            result = check_k8s_job(k8s_job, ledger, source, options, KubectlSettings(
                kubectl=kubectl, kubeconfig=str(kubeconfig) if kubeconfig else None,
                context=kube_context))
    f = result.finding
    if as_json:
        from goodput_agent.core.untrusted import json_text

        doc = {"finding": f.model_dump(mode="json", exclude={"stacks": {"groups"}}),
               "report": json.loads(result.report.to_json()),
               "stacks_dir": result.stacks_dir}
        click.echo(json_text(json.dumps(doc, indent=2, default=str)))
    else:
        _render(result)
    sys.exit(EXIT_HANG if f.kind == "hang" else EXIT_SLOW if f.alarm
             else EXIT_UNKNOWN if f.kind == "unknown" else 0)


def _render(result) -> None:  # noqa: ANN001 - a detect.check.CheckResult
    from goodput_agent.cli.render import TerminalConsole
    from goodput_agent.cli.render_report import render_report
    from goodput_agent.core.untrusted import markup

    console = TerminalConsole()
    f = result.finding
    head = {"hang": "[red]HANG[/]", "straggler": "[yellow]SLOW NODE[/]",
            "gpu_throttling": "[yellow]THROTTLED[/]", "healthy": "[green]progressing[/]",
            "unknown": "[yellow]cannot judge[/]"}[f.kind]
    console.print(f"{head} {markup(f.summary)}", highlight=False)
    if f.stacks is not None and f.stacks.groups:
        for g in f.stacks.groups[:6]:
            console.print(markup(f"  {g['ranks']:>5} ranks  {g['state']:<12} {g['where']}"),
                          highlight=False)
    if result.stacks_dir:
        console.print(markup(f"stacks as dumped: {result.stacks_dir}"), highlight=False)
    render_report(result.report, console)
