"""Which sources a `goodput watch` runs, from its flags: the one place a new source plugs in.

`SourceOptions` holds what the flags say; `build_sources(options)` returns the pull sources
(polled by the runner on their interval: Slurm, Kubernetes, Prometheus alerts);
`start_receivers(options, sink)` starts the push sources (the Alertmanager webhook receiver)
that hand their triggers to `sink` — it returns once they are stored durably — and returns how
to stop each. A new source adds its fields to SourceOptions, its flags to `cli/watch.py`'s
`source_options`, and its construction below.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from goodput_agent.core.errors import BadInput
from goodput_agent.watch.slurm_source import SlurmFilters
from goodput_agent.watch.trigger import Poll, TriggerSink, WatchSource


class SourceOptions(BaseModel):
    slurm: bool = False
    slurm_filters: SlurmFilters = Field(default_factory=SlurmFilters)
    k8s: bool = False
    namespaces: list[str] = Field(default_factory=list)  # empty: every namespace
    selector: str = ""  # a label selector for the workloads and pods
    kubeconfig: Path | None = None
    kube_context: str | None = None
    in_cluster: bool | None = None
    prometheus_url: str | None = None  # poll its firing alerts; also what latency alerts ask
    alertmanager_listen: str | None = None  # HOST:PORT of the webhook receiver
    alertmanager_token_file: Path | None = None  # the bearer token the receiver requires
    since: datetime | None = None  # the first poll starts here (default: now)
    timeout_s: float = 30.0
    live: Any = None  # a detect.check.CheckOptions: look at running jobs (--live)
    live_interval_s: float = 10.0
    kubectl: str = "kubectl"  # --k8s --live: what runs the dump script in the pods

    @property
    def any(self) -> bool:
        return self.slurm or self.k8s or bool(self.prometheus_url or self.alertmanager_listen)


class _K8sWhenReachable:
    """The Kubernetes source, connected at its first poll: an API server that is down when the
    watch starts is a source that backs off and shows as down, not a watch that never runs."""

    name = "kubernetes"

    def __init__(self, options: SourceOptions):
        self.options = options
        self.source: Any = None

    def poll(self, cursor: str | None) -> Poll:
        if self.source is None:
            from goodput_agent.watch.k8s_source import K8sWatchSource

            o = self.options
            self.source = K8sWatchSource.connect(
                kubeconfig=o.kubeconfig, context=o.kube_context, in_cluster=o.in_cluster,
                namespaces=tuple(o.namespaces), selector=o.selector, since=o.since,
                request_timeout_s=o.timeout_s)
        return self.source.poll(cursor)


def _k8s_live(options: SourceOptions) -> WatchSource:
    from goodput_agent.detect.k8s_job import KubectlSettings
    from goodput_agent.sources.k8s import K8sSource
    from goodput_agent.watch.live_k8s_source import K8sLiveSource

    def connect() -> K8sSource:
        return K8sSource.connect(kubeconfig=options.kubeconfig, context=options.kube_context,
                                 in_cluster=options.in_cluster, timeout_s=options.timeout_s)

    kubectl = KubectlSettings(kubectl=options.kubectl,
                              kubeconfig=str(options.kubeconfig) if options.kubeconfig else None,
                              context=options.kube_context)
    return K8sLiveSource(connect, options.namespaces, options.selector, options.live, kubectl,
                         interval_s=options.live_interval_s)


def listen_address(text: str, flag: str = "--alertmanager-listen") -> tuple[str, int]:
    """`HOST:PORT` (IPv6 in brackets) as a server binds it; BadInput when it is not."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise BadInput(f"{flag} {text}: expected HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


def read_token(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the token: {exc.strerror}") from None
    if len(token) < 16:
        raise BadInput(f"{path}: the token is shorter than 16 characters")
    return token


def build_sources(options: SourceOptions) -> list[WatchSource]:
    sources: list[WatchSource] = []
    if options.slurm:
        from goodput_agent.sources.slurm import SlurmCLI
        from goodput_agent.watch.slurm_source import SlurmWatchSource

        sources.append(SlurmWatchSource(SlurmCLI(timeout_s=options.timeout_s),
                                        options.slurm_filters, options.since))
        if options.live is not None:
            from goodput_agent.watch.live_source import SlurmLiveSource

            sources.append(SlurmLiveSource(SlurmCLI(timeout_s=options.timeout_s),
                                           options.slurm_filters, options.live,
                                           interval_s=options.live_interval_s))
    if options.k8s:
        sources.append(_K8sWhenReachable(options))
        if options.live is not None:
            sources.append(_k8s_live(options))
    if options.prometheus_url:
        from goodput_agent.watch.prom_source import PrometheusAlertsSource

        sources.append(PrometheusAlertsSource(options.prometheus_url, timeout_s=options.timeout_s))
    return sources


def start_receivers(options: SourceOptions, sink: Callable[[str], TriggerSink]
                    ) -> list[Callable[[], None]]:
    """Push sources; `sink(source_name)` stores what that source receives."""
    if not options.alertmanager_listen:
        return []
    from goodput_agent.watch.alertmanager import AlertmanagerReceiver

    host, port = listen_address(options.alertmanager_listen)
    receiver = AlertmanagerReceiver(host, port, sink("alertmanager"),
                                    prometheus_url=options.prometheus_url or "",
                                    token=read_token(options.alertmanager_token_file))
    receiver.start()
    return [receiver.stop]
