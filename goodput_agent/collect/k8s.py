"""Collect a Kubernetes job (or one pod) into a bundle, in the files the bundle parsers read:

    k8s/pods.json     the pods, as `kubectl get pods -l <selector> -o json` prints them (a List)
    k8s/events.json   events about those pods, the workload and the pods' nodes (a List)
    k8s/nodes.json    the pods' nodes: conditions, taints, allocatable nvidia.com/gpu (a List)
    k8s/workloads.json  the Deployment/StatefulSet owning the pods (collect/k8s_owner.py)
    logs/<pod>.log                 the pod's (first) container log, with the kubelet's timestamps
    logs/<pod>_<container>.log     other containers
    logs/previous/<pod>.log        the previous instance of a restarted container (--previous)
    incident.yaml     the question, job and time window (from the pods' start and end)
    metrics/vllm/<family>.json, config/engine_args.yaml   a vLLM pod's series and command line,
                      with --prometheus: its latency question (collect/k8s_serving.py)
    manifest.json     (collect/base.py) every API call, the window, and what could not be read

A source that is unreachable, forbidden or slow leaves its files out and an error in the
manifest (the report lists it as missing evidence); only a target that does not exist is an
error for the caller (NotFound: the user named the wrong job).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import structlog

from goodput_agent.collect.base import BundleWriter, Manifest
from goodput_agent.collect.k8s_owner import collect_owners
from goodput_agent.collect.k8s_serving import choose_question
from goodput_agent.collect.k8s_target import K8sTarget, as_list
from goodput_agent.core.timespec import rfc3339 as _ts
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.sources.errors import NotFound, SourceError
from goodput_agent.sources.k8s import (
    SOURCE,
    K8sSource,
    Workload,
    containers_with_logs,
    pod_nodes,
    split_ref,
)

log = structlog.get_logger(__name__)

WINDOW_MARGIN = timedelta(minutes=5)


@dataclass
class K8sCollected:
    workload: Workload | None = None
    pods: list[dict[str, Any]] = field(default_factory=list)
    window: TimeWindow | None = None


def pods_window(pods: list[dict[str, Any]], now: datetime | None = None) -> TimeWindow | None:
    """From the first pod's start to the last container's end (now, while one still runs),
    with a margin on both sides."""
    starts, ends, running = [], [], False
    for pod in pods:
        status = pod.get("status") or {}
        for value in (status.get("startTime"), (pod.get("metadata") or {}).get(
                "creationTimestamp")):
            if (ts := _ts(value)) is not None:
                starts.append(ts)
                break
        for cs in status.get("containerStatuses") or []:
            state = cs.get("state") or {}
            running |= "running" in state
            for s in (state, cs.get("lastState") or {}):
                if (ts := _ts((s.get("terminated") or {}).get("finishedAt"))) is not None:
                    ends.append(ts)
    if not starts:
        return None
    end = (now or datetime.now(UTC)) if running or not ends else max(ends)
    return TimeWindow(start=min(starts) - WINDOW_MARGIN, end=end + WINDOW_MARGIN)


def _write(writer: BundleWriter, src: K8sSource, rel: str, what: str, query: str,
           text: str) -> None:
    writer.write_text(rel, text, source=SOURCE, what=what, query=query, origin=src.where)


def collect_k8s(writer: BundleWriter, src: K8sSource, target: K8sTarget,
                now: datetime | None = None) -> K8sCollected:
    """Read the target from the API and write its files; errors become manifest entries,
    except a target that does not exist (NotFound is raised)."""
    out = K8sCollected()
    try:
        if target.pod:
            ns, _, name = split_ref(target.pod, src.namespace)
            out.pods = [src.pod(ns, name)]
            query = f"GET /api/v1/namespaces/{ns}/pods/{name}"
            involved = {("Pod", name)}
        else:
            ns, kind, name = split_ref(target.job or "", src.namespace)
            out.workload = wl = src.workload(ns, name, kind)
            out.pods = src.workload_pods(wl)
            query = f"GET /api/v1/namespaces/{ns}/pods?labelSelector={wl.selector}"
            involved = {(wl.kind, wl.name)} | {("Pod", p["metadata"]["name"])
                                               for p in out.pods}
    except ValueError as exc:
        raise NotFound(SOURCE, str(exc)) from None
    except NotFound:
        raise
    except SourceError as exc:
        writer.source_error(f"the pods of {target.pod or target.job} (and with them their "
                            "events, nodes and logs)", exc)
        return out
    # the pods' own controllers too (a JobSet's child Jobs, a Deployment's ReplicaSets):
    # BackoffLimitExceeded, DeadlineExceeded and FailedCreate are their events
    involved |= {(str(ref.get("kind")), str(ref.get("name"))) for p in out.pods
                 for ref in (p.get("metadata") or {}).get("ownerReferences") or []
                 if isinstance(ref, dict)}
    _write(writer, src, "k8s/pods.json", f"pods of {target.pod or target.job}", query,
           as_list(out.pods, "v1", "Pod"))
    out.window = pods_window(out.pods, now)
    if out.window is not None:
        writer.manifest.window = out.window
    nodes = pod_nodes(out.pods)
    try:
        events = src.events(ns, involved, nodes)
        _write(writer, src, "k8s/events.json", "events about the pods, workload and nodes",
               f"GET /api/v1/namespaces/{ns}/events; GET /api/v1/events?fieldSelector="
               "involvedObject.kind=Node,involvedObject.name=<node>", as_list(events, "v1",
                                                                               "Event"))
    except SourceError as exc:
        writer.source_error("Kubernetes events of the pods and nodes", exc)
    if nodes:
        try:
            _write(writer, src, "k8s/nodes.json", f"the pods' nodes ({len(nodes)})",
                   "GET /api/v1/nodes/<node> for " + ",".join(sorted(nodes)),
                   as_list(src.nodes(nodes), "v1", "Node"))
        except SourceError as exc:
            writer.source_error("the nodes the pods ran on", exc)
    collect_owners(writer, src, out.pods)
    _collect_logs(writer, src, out.pods, target)
    if target.prometheus and out.window is not None and nodes:
        collect_dcgm(writer, target.prometheus, nodes, out.window, target.prometheus_timeout_s)
    for note in src.truncated:
        writer.error(SOURCE, note, "error", "list cut at the item cap (max_items)")
    name = out.workload.name if out.workload else out.pods[0]["metadata"]["name"]
    spec: dict[str, object] = {"question": f"why did {name} fail?", "job": name}
    if out.window is not None:
        spec["window"] = {"start": out.window.start.isoformat(),
                          "end": out.window.end.isoformat()}
    writer.write_incident(choose_question(writer, target, out.pods, out.window, spec, now))
    return out


def _collect_logs(writer: BundleWriter, src: K8sSource, pods: list[dict[str, Any]],
                  target: K8sTarget) -> None:
    since = int(target.since.total_seconds()) if target.since else None
    for pod in pods:
        meta = pod.get("metadata") or {}
        ns, name = meta.get("namespace") or src.namespace, str(meta.get("name"))
        for k, (container, restarted) in enumerate(containers_with_logs(pod)):
            stem = name if k == 0 else f"{name}_{container}"
            runs = [(False, f"logs/{stem}.log")]
            if restarted:
                runs.append((True, f"logs/previous/{stem}.log"))
            for previous, rel in runs:
                what = f"{'previous ' if previous else ''}log of {ns}/{name} -c {container}"
                try:
                    text = src.log(ns, name, container, previous=previous,
                                   tail_lines=target.tail_lines, since_seconds=since)
                except SourceError as exc:
                    writer.source_error(what, exc)
                    continue
                query = (f"GET /api/v1/namespaces/{ns}/pods/{name}/log?container={container}"
                         f"&timestamps=true{'&previous=true' if previous else ''}"
                         f"{f'&tailLines={target.tail_lines}' if target.tail_lines else ''}"
                         f"{f'&sinceSeconds={since}' if since else ''}")
                _write(writer, src, rel, what, query, text)


def collect_dcgm(writer: BundleWriter, url: str, nodes: set[str], window: TimeWindow,
                 timeout_s: float = 30.0) -> None:
    """The DCGM exporter series of `nodes` over the window, one query_range answer per metric
    under metrics/dcgm/ (the bundle reads the Xid gauge as Xid events and the clocks for
    throttling). A metric with no series is skipped; a failing server is missing evidence."""
    from goodput_agent.metrics.dcgm_health import RAW_METRICS, range_answer
    from goodput_agent.metrics.prometheus import PrometheusSource
    from goodput_agent.metrics.source import MetricsUnavailable

    src = PrometheusSource(url, timeout_s=timeout_s, horizon=window)
    for metric in RAW_METRICS:
        try:
            answer, query = range_answer(src, metric, nodes, window)
        except MetricsUnavailable as exc:
            writer.error("prometheus", f"DCGM series {metric} of the pods' nodes", "unreachable"
                         if src.down else "error", str(exc))
            if src.down:
                return
            continue
        if answer is not None:
            writer.write_text(f"metrics/dcgm/{metric}.json", orjson.dumps(answer).decode(),
                              source="prometheus", what=f"DCGM {metric} of the pods' nodes",
                              query=query, origin=url)


def collect_k8s_target(out_dir: Path, target: K8sTarget, *, kubeconfig: Path | None = None,
                       context: str | None = None, namespace: str | None = None,
                       in_cluster: bool | None = None, timeout_s: float = 20.0) -> Manifest:
    """Collect the job or pod into `out_dir`; a configuration or connection problem becomes
    missing evidence in the manifest, a target that does not exist is NotFound."""
    label = target.job or target.pod or ""
    kind = "k8s_job" if target.job else "k8s_pod"
    with BundleWriter(out_dir, {kind: label}) as writer:
        try:
            src = K8sSource.connect(kubeconfig=kubeconfig, context=context,
                                    namespace=namespace, in_cluster=in_cluster,
                                    timeout_s=timeout_s)
            collect_k8s(writer, src, target)
        except NotFound:
            raise
        except SourceError as exc:  # no usable kubeconfig: nothing could be read
            writer.source_error(f"everything from Kubernetes about {label}", exc)
            writer.write_incident({"question": f"why did {label} fail?"})
    return writer.manifest
