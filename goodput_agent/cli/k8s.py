"""The Kubernetes options of `goodput investigate` and `goodput collect`:

    goodput investigate --k8s-job train/llama-70b      # Job, JobSet, PyTorchJob, Deployment, ...
    goodput investigate --k8s-pod serving/vllm-0
    goodput collect --k8s-job train/llama-70b -o incident/

As with --slurm-job, the live investigation collects into a bundle kept beside the ledger
(reports/k8s-<namespace>-<name>-<time>/bundle) and investigates that bundle, so the live verdict
and the verdict on the collected bundle are the same. An API server that is unreachable or that
forbids a read gives a partial report naming the missing evidence; a job that does not exist is
one line and exit 2.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from goodput_agent.collect.base import Manifest
    from goodput_agent.collect.k8s_serving import LatencyWindows
    from goodput_agent.report import Report
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import line

K8S_OPTIONS: list[Callable[[Any], Any]] = [
    click.option("--k8s-job", "k8s_job", default=None, metavar="NS/NAME",
                 help="A Kubernetes Job, JobSet, PyTorchJob, Deployment or StatefulSet "
                      "(NS/KIND/NAME to say which): its pods, events, nodes and logs."),
    click.option("--k8s-pod", "k8s_pod", default=None, metavar="NS/NAME",
                 help="One Kubernetes pod: its status, events, node and logs."),
    click.option("--kubeconfig", "kubeconfig", default=None, type=click.Path(path_type=Path),
                 help="kubeconfig file (default $KUBECONFIG, ~/.kube/config; in a pod the "
                      "service account)."),
    click.option("--context", "kube_context", default=None, help="kubeconfig context."),
    click.option("-n", "--namespace", "kube_namespace", default=None,
                 help="Namespace when NS/ is not given (default: the context's)."),
    click.option("--in-cluster", "in_cluster", is_flag=True, default=None,
                 help="Use the pod's service account (in-cluster config)."),
    click.option("--log-since", "log_since", default=None, metavar="DURATION",
                 help="Container logs: only the last DURATION (30m, 6h, 2d)."),
    click.option("--log-tail", "log_tail", default=20_000, show_default=True, type=int,
                 help="Container logs: at most this many lines per container."),
    click.option("--baseline", "baseline", default=None, metavar="WINDOW",
                 help="With --k8s-pod and --prometheus, a vLLM pod's latency question: the "
                      "good window (10:00-11:00 or START/END in ISO 8601)."),
    click.option("--incident", "incident", default=None, metavar="WINDOW",
                 help="With --k8s-pod and --prometheus: the bad window, same forms."),
]
# `goodput collect` has no --since/--service of its own (`investigate` has them already)
COLLECT_LATENCY_OPTIONS: list[Callable[[Any], Any]] = [
    click.option("--since", "since", default=None, metavar="WHEN",
                 help="With --k8s-pod and --prometheus, a vLLM pod's series: look back this "
                      "far (default 6h), or this window (10:00-11:00, START/END)."),
    click.option("--service", "service", default=None,
                 help="With --k8s-pod and --prometheus: the model (model_name), when the pod "
                      "serves several."),
]
_DURATION = re.compile(r"^(\d+)([smhd])$")


def k8s_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(K8S_OPTIONS):
        f = opt(f)
    return f


def collect_latency_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(COLLECT_LATENCY_OPTIONS):
        f = opt(f)
    return f


@dataclass
class K8sArgs:
    k8s_job: str | None = None
    k8s_pod: str | None = None
    kubeconfig: Path | None = None
    kube_context: str | None = None
    kube_namespace: str | None = None
    in_cluster: bool | None = None
    log_since: str | None = None
    log_tail: int = 20_000
    prometheus: str | None = None  # also the DCGM series of the pods' nodes from here
    # a vLLM pod's latency question (collect/k8s_serving.py)
    baseline: str | None = None
    incident: str | None = None
    since: str | None = None
    service: str | None = None
    tz_name: str | None = None

    @classmethod
    def pop(cls, kwargs: dict[str, Any]) -> K8sArgs:
        """Take this dataclass's options out of a click command's keyword arguments."""
        return cls(**{k: kwargs.pop(k) for k in list(cls.__dataclass_fields__) if k in kwargs})

    @property
    def wanted(self) -> bool:
        return bool(self.k8s_job or self.k8s_pod)

    @property
    def label(self) -> str:
        return self.k8s_job or self.k8s_pod or ""


def _since(text: str | None) -> timedelta | None:
    if not text:
        return None
    m = _DURATION.match(text.strip())
    if not m:
        raise BadInput(f"--log-since {text!r}: give a duration like 30m, 6h or 2d")
    return timedelta(seconds=int(m[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m[2]])


def collect_k8s_bundle(args: K8sArgs, out_dir: Path, timeout_s: float = 20.0) -> Manifest:
    """Collect the job or pod into `out_dir`; a configuration or connection problem becomes
    missing evidence in the manifest, a target that does not exist is BadInput (exit 2)."""
    from goodput_agent.collect.k8s import K8sTarget, collect_k8s_target

    if bool(args.k8s_job) == bool(args.k8s_pod):
        raise click.UsageError("give one of --k8s-job or --k8s-pod")
    if args.log_tail < 0:
        raise click.UsageError("--log-tail must be 0 (no limit) or more")
    target = K8sTarget(job=args.k8s_job, pod=args.k8s_pod, since=_since(args.log_since),
                       tail_lines=args.log_tail or None, prometheus=args.prometheus,
                       prometheus_timeout_s=timeout_s, latency=latency_windows(args))
    return collect_k8s_target(out_dir, target, kubeconfig=args.kubeconfig,
                              context=args.kube_context, namespace=args.kube_namespace,
                              in_cluster=args.in_cluster, timeout_s=timeout_s)


def latency_windows(args: K8sArgs) -> LatencyWindows | None:
    """The latency question's windows and service; only with --k8s-pod and --prometheus."""
    from goodput_agent.collect.k8s_serving import MAX_SPAN, LatencyWindows
    from goodput_agent.core.timespec import looking_back, parse_window

    given = {"--baseline": args.baseline, "--incident": args.incident, "--since": args.since,
             "--service": args.service}
    if not (args.k8s_pod and args.prometheus):
        if any(given.values()):
            raise click.UsageError(f"{', '.join(k for k, v in given.items() if v)}: only with "
                                   "--k8s-pod and --prometheus (a vLLM pod's latency)")
        return None
    tz = args.tz_name
    lw = LatencyWindows(
        search=looking_back(args.since, tz_name=tz) if args.since else None,
        baseline=parse_window(args.baseline, tz_name=tz) if args.baseline else None,
        incident=parse_window(args.incident, tz_name=tz) if args.incident else None,
        service=args.service)
    asked = lw.asked(datetime.now(UTC))
    if asked.end - asked.start > MAX_SPAN:
        raise click.UsageError(f"the latency windows span {asked.end - asked.start}: a pod's "
                               f"series are collected sample for sample, at most "
                               f"{MAX_SPAN.total_seconds() / 3600:g} h (narrow --since)")
    return lw


def live_bundle_dir(ledger_path: Path, label: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "target"
    return ledger_path.parent / "reports" / f"k8s-{safe}-{stamp}" / "bundle"


def investigate_k8s(args: K8sArgs, ledger_path: Path | None, kind: str | None,
                    pictures_dir: Path | None, timeout_s: float,
                    claude: object = None) -> Report:
    """Collect into a bundle beside the ledger, then investigate that bundle."""
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import default_ledger_path, open_ledger

    bundle = live_bundle_dir(ledger_path or default_ledger_path(), args.label)
    manifest = collect_k8s_bundle(args, bundle, timeout_s)
    click.echo(f"goodput: bundle collected into {line(bundle)}", err=True)
    if why := manifest.target.get("question_why"):  # a vLLM pod: which question, and why
        click.echo(line(f"goodput: the {manifest.target.get('question')} question: {why}"),
                   err=True)
    with open_ledger(ledger_path) as ledger:
        return investigate_bundle(bundle, ledger, kind, pictures_dir=pictures_dir,
                                  claude=claude)
