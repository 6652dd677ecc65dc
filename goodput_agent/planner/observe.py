"""The failure analysis' input, gathered from the evidence tools' outputs: events on one clock,
the rank-to-host and rank-to-GPU maps, each log's first and last sign of life, and the typed
scheduler facts (jobs, nodes, pods). The offline playbook and the failure_verdict tool both
build it here, so a model planner sees the same analysis the offline planner concludes with."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath

from goodput_agent.analysis.failure.observations import Activity, Observations, short_name
from goodput_agent.bundle import Inventory
from goodput_agent.core.events import Event
from goodput_agent.parsing.registry import KUBERNETES_FORMATS, SLURM_FORMATS
from goodput_agent.planner.scheduler_facts import SchedulerFacts
from goodput_agent.toolkit import EventsOutput

# the evidence tools whose events the failure analysis weighs, in the playbook's order
EVIDENCE_TOOLS = ("scheduler_state", "job_log_events", "kernel_log_events", "gpu_metrics_events")


def scheduler_kind(inv: Inventory | None) -> str | None:
    formats = {f.format for f in inv.files} if inv else set()
    return ("slurm" if formats & SLURM_FORMATS
            else "kubernetes" if formats & KUBERNETES_FORMATS else None)


def files_named_after_nodes(inv: Inventory, nodes: set[str]) -> dict[str, str]:
    """The node of each file no folder places (nodes/NODE/...) whose name holds one of the
    job's node names, or its short name, as a whole word (dmesg-a100-38.txt, kern.gpu-3.log,
    a100-38_syslog for a100-38.cluster): where its lines name no host, the file is that
    node's. Of names inside one another (a100-3, a100-38), the longest that is whole wins; of
    two spellings of one node (the scheduler's a100-38, NCCL's a100-38.cluster), the one the
    file spells whole, whatever order the names come in."""
    out: dict[str, str] = {}
    spellings = {(spelled, n) for n in nodes if n for spelled in (n, short_name(n))}
    for f in inv.files:
        if f.node_hint:
            continue
        name = PurePosixPath(f.rel_path).name
        hits = [(spelled, n) for spelled, n in spellings
                if spelled in name and re.search(
                    rf"(?<![A-Za-z0-9]){re.escape(spelled)}(?![A-Za-z0-9])", name)]
        if hits:
            out[f.rel_path] = max(hits, key=lambda h: (len(h[0]), h[0] == h[1], h[1]))[1]
    return out


def _name_pods_nodes(events: list[Event], facts: SchedulerFacts) -> None:
    """An event about a pod (a Kubernetes Event on it, its status row) names no node when the
    file that reports it does not say where the pod ran; another file does (the pods, with
    the node each is bound to): the event is then that node's."""
    bound = {p.name: p.node for p in facts.pods if p.name and p.node}
    if not bound:
        return
    for e in events:
        if e.node is None:
            pod = e.detail.get("object") if e.detail.get("object_kind") == "Pod" \
                else e.detail.get("pod")
            pod = pod if isinstance(pod, str) and pod in bound else _pod_of_file(
                e.locator.path, bound)
            if pod is not None:
                e.node = bound[pod]


def _name_fragment_pod(events: list[Event], facts: SchedulerFacts,
                       k8s_files: set[str]) -> None:
    """A pasted fragment of `kubectl describe pod` (its Events block, a container's Last State)
    names neither the pod nor its node; when exactly one of the job's pods failed (get pods:
    Evicted, CrashLoopBackOff, OOMKilled), the fragment is that pod's and the fault its node's."""
    pod = facts.only_failing_pod()
    if pod is None:
        return
    for e in events:
        if e.node is None and e.locator.path in k8s_files and e.role != "context" \
                and not e.detail.get("pod") and not e.detail.get("object"):
            e.node = pod.node
            e.detail["pod_from"] = f"the only failing pod, {pod.name} ({pod.source})"


def _pod_of_file(path: str, pods: Mapping[str, str]) -> str | None:
    """The pod whose log a file is, by its name as `kubectl logs POD [--previous] > POD.log`
    writes it (logs/POD.log, POD-previous.log, POD.txt)."""
    name = path.rsplit("/", 1)[-1]
    for suffix in (".gz", ".log", ".txt", ".out"):
        name = name.removesuffix(suffix)
    for tail in ("-previous", ".previous", "_previous"):
        name = name.removesuffix(tail)
    return name if name in pods else None


def observations(outputs: Mapping[str, object]) -> tuple[Observations, SchedulerFacts]:
    """`outputs`: tool name → output (bundle_inventory's Inventory, the evidence tools'
    EventsOutput, log_activity's files)."""
    inv: Inventory = outputs["bundle_inventory"]  # type: ignore[assignment]
    obs = Observations(incident=inv.incident, clock=inv.clock, job_id=inv.incident.job)
    for name in EVIDENCE_TOOLS:
        out = outputs.get(name)
        if not isinstance(out, EventsOutput):
            continue
        obs.events.extend(out.events)
        for r, h in out.rank_hosts.items():
            obs.rank_hosts.setdefault(r, h)
        for r, g in out.rank_gpus.items():
            obs.rank_gpus.setdefault(r, g)
        obs.facts.update(out.facts)
    facts = SchedulerFacts.from_files(obs.facts)
    for task, host in facts.srun_task_hosts.items():
        obs.rank_hosts.setdefault(task, host)  # only where no log named the host
    obs.events.sort(key=Event.sort_key)
    obs.scheduler_kind = scheduler_kind(inv)
    kernel_logs = {f.rel_path for f in inv.of_format("kernel_log")}  # once, not per event
    obs.kernel_log_nodes = {e.node for e in obs.events if e.node and e.locator.path in
                            kernel_logs}
    obs.kernel_log_nodes |= {f.node_hint for f in inv.of_format("kernel_log") if f.node_hint}
    obs.kernel_log_nodes |= set(facts.kernel_log_hosts)
    obs.job_log_nodes = {f.node_hint for f in inv.of_format("job_log") if f.node_hint}
    obs.job_nodes = facts.job_nodes(obs.job_id)
    obs.launcher_nodes = list(dict.fromkeys(facts.srun_task_hosts.values()))
    # Slurm-on-Kubernetes: when Slurm itself names a pod as a node, that name is the node
    obs.host_aliases = facts.host_aliases(set(obs.job_nodes) if obs.scheduler_kind == "slurm"
                                          else set())
    obs.job_pods = {p.name for p in facts.pods if p.name}
    # a cluster spec's hosts (TF_CONFIG) name the job's nodes too; the task a file's own spec
    # names is that file's host, whatever the file is called
    cluster = {h for f in obs.facts.values() for h in f.get("cluster_hosts") or []}
    named = files_named_after_nodes(inv, {*obs.job_nodes, *obs.rank_hosts.values(), *cluster})
    named |= {path: str(f["process_host"]) for path, f in obs.facts.items()
              if f.get("process_host")}
    for e in obs.events:
        if e.node is None and e.locator.path in named:
            e.node = named[e.locator.path]
    obs.kernel_log_nodes |= {n for path, n in named.items() if path in kernel_logs}
    _name_pods_nodes(obs.events, facts)
    _name_fragment_pod(obs.events, facts, {f.rel_path for f in inv.files
                                           if f.format in KUBERNETES_FORMATS})
    obs.latest_run_start = facts.latest_run_start(obs.job_id)
    if obs.job_id is None:
        obs.job_id = facts.first_job_id()
    activity = outputs.get("log_activity")
    for a in getattr(activity, "files", []) or []:
        obs.activity.append(Activity(path=a.path, node=a.node, rank=a.rank, first=a.first,
                                     last=a.last, format=a.format or None,
                                     last_progress=a.last_progress, last_step=a.last_step,
                                     prior_progress=a.prior_progress))
    return obs, facts
