"""What the watch does with one trigger: the existing collectors into a bundle beside the
ledger, then the ordinary bundle investigation (or the live latency question against
Prometheus). The trigger only chooses which read-only collector runs and on what; its text
never becomes a command line of its own (job ids are checked by the Slurm source)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from goodput_agent.ledger import Ledger
from goodput_agent.report import Report
from goodput_agent.watch.runner import GiveUp
from goodput_agent.watch.trigger import Trigger

LOG_TAIL_LINES = 20_000  # per container, as `goodput collect --k8s-*` takes by default
NODE_WINDOW = timedelta(hours=1)  # the kernel-log and reason window before a node event


class CollectSettings(BaseModel):
    """How to reach the watched systems for collection (the same as the sources use)."""

    slurm_conf: str | None = None
    timeout_s: float = 30.0
    prometheus_url: str | None = None
    kubeconfig: Path | None = None
    kube_context: str | None = None
    in_cluster: bool | None = None
    live: Any = None  # a detect.check.CheckOptions, for the live source's triggers
    kubectl: str = "kubectl"


class NothingToCollect(GiveUp):
    """A trigger whose `collect` names no collector this watch has."""


def bundle_dir(ledger: Ledger, trigger: Trigger) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", trigger.key)[:120]
    return ledger.path.parent / "reports" / f"watch-{safe}-{stamp}" / "bundle"


def investigate_trigger(trigger: Trigger, ledger: Ledger, settings: CollectSettings) -> Report:
    from goodput_agent.investigate import investigate_bundle

    c = trigger.collect
    if "live_slurm_job" in c:
        from goodput_agent.detect.check import CheckOptions, check_slurm_job

        return check_slurm_job(c["live_slurm_job"], ledger, _slurm(settings),
                               settings.live or CheckOptions()).report
    if "live_k8s_job" in c:
        from goodput_agent.detect.check import CheckOptions, check_k8s_job
        from goodput_agent.detect.k8s_job import KubectlSettings
        from goodput_agent.sources.k8s import K8sSource

        source = K8sSource.connect(kubeconfig=settings.kubeconfig, context=settings.kube_context,
                                   in_cluster=settings.in_cluster, timeout_s=settings.timeout_s)
        kubectl = KubectlSettings(kubectl=settings.kubectl,
                                  kubeconfig=str(settings.kubeconfig) if settings.kubeconfig
                                  else None, context=settings.kube_context)
        return check_k8s_job(c["live_k8s_job"], ledger, source, settings.live or CheckOptions(),
                             kubectl).report
    if "prometheus_service" in c:
        return _latency(trigger, ledger, settings)
    bundle = bundle_dir(ledger, trigger)
    if "slurm_job" in c:
        from goodput_agent.collect.slurm import collect_slurm_job

        collect_slurm_job(c["slurm_job"], bundle, _slurm(settings))
    elif "k8s_job" in c or "k8s_pod" in c:
        _k8s(c, bundle, settings)
    elif "node" in c and trigger.source == "slurm":
        collect_slurm_node(c["node"], trigger.occurred_at, bundle, settings)
    elif "node" in c:  # Kubernetes node conditions and taints, GPU alerts
        _node(trigger, bundle, settings)
    else:
        raise NothingToCollect(f"{trigger.key}: no collector for {sorted(c)}")
    return investigate_bundle(bundle, ledger, None)


def _slurm(settings: CollectSettings):  # noqa: ANN202 - a SlurmCLI
    from goodput_agent.sources.slurm import SlurmCLI

    return SlurmCLI(timeout_s=settings.timeout_s, slurm_conf=settings.slurm_conf)


def collect_slurm_node(node: str, at: datetime, out_dir: Path, settings: CollectSettings) -> None:
    """A node event's bundle: the node's state and reason, and every node reason."""
    from goodput_agent.collect.base import BundleWriter
    from goodput_agent.metrics.source import TimeWindow
    from goodput_agent.sources.errors import SourceError

    cli = _slurm(settings)
    window = TimeWindow(start=at - NODE_WINDOW, end=at + timedelta(minutes=5))
    with BundleWriter(out_dir, {"node": node}, window) as w:
        for what, read in (("the node's state", lambda: cli.show_nodes([node])),
                           ("node reasons (sinfo -R)", cli.node_reasons)):
            try:
                out = read()
            except SourceError as exc:
                w.source_error(what, exc)
                continue
            w.write_text(f"slurm/{out.name}", out.text, source="slurm", what=out.what,
                         command=out.argv)
        w.write_incident({"question": f"why did node {node} go down?", "node": node,
                          "window": {"start": window.start.isoformat(),
                                     "end": window.end.isoformat()}})


def _k8s(c: dict[str, str], out_dir: Path, settings: CollectSettings) -> None:
    from goodput_agent.collect.k8s import K8sTarget, collect_k8s_target

    target = K8sTarget(job=c.get("k8s_job"), pod=c.get("k8s_pod"), tail_lines=LOG_TAIL_LINES,
                       prometheus=settings.prometheus_url,
                       prometheus_timeout_s=settings.timeout_s)
    collect_k8s_target(out_dir, target, kubeconfig=settings.kubeconfig,
                       context=settings.kube_context, in_cluster=settings.in_cluster,
                       timeout_s=settings.timeout_s)


def _node(trigger: Trigger, out_dir: Path, settings: CollectSettings) -> None:
    from goodput_agent.watch.node_collect import collect_node_event

    k8s = None
    if trigger.source == "kubernetes" or settings.kubeconfig or settings.in_cluster:
        from goodput_agent.sources.errors import SourceError
        from goodput_agent.sources.k8s import K8sSource

        try:
            k8s = K8sSource.connect(kubeconfig=settings.kubeconfig, context=settings.kube_context,
                                    in_cluster=settings.in_cluster)
        except SourceError:
            k8s = None  # the node's Kubernetes side is missing evidence, the metrics remain
    if k8s is None and not settings.prometheus_url:
        raise NothingToCollect(f"{trigger.key}: a node event, but neither Kubernetes nor "
                               "--prometheus is reachable to collect it")
    collect_node_event(trigger.collect["node"], trigger.occurred_at, out_dir, k8s=k8s,
                       prometheus_url=settings.prometheus_url, state=trigger.state,
                       timeout_s=settings.timeout_s)


def _latency(trigger: Trigger, ledger: Ledger, settings: CollectSettings) -> Report:
    from goodput_agent.core.timespec import looking_back
    from goodput_agent.investigate import investigate_prometheus
    from goodput_agent.metrics.source import TimeWindow

    c = trigger.collect
    url = settings.prometheus_url  # never from the alert: its text chooses no address
    if not url:
        raise NothingToCollect(f"{trigger.key}: a latency alert, but no --prometheus URL")
    incident = None
    if c.get("window_start") and c.get("window_end"):
        incident = TimeWindow(start=datetime.fromisoformat(c["window_start"]),
                              end=datetime.fromisoformat(c["window_end"]))
    baseline = None
    if incident and c.get("baseline_start") and c.get("baseline_end"):
        baseline = TimeWindow(start=datetime.fromisoformat(c["baseline_start"]),
                              end=datetime.fromisoformat(c["baseline_end"]))
    search = None if incident else looking_back("6h")
    return investigate_prometheus(url, ledger, c["prometheus_service"], baseline=baseline,
                                  incident=incident, search=search,
                                  timeout_s=settings.timeout_s)
