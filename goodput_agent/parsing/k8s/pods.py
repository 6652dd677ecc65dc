"""Pods: container terminations, pod reasons and conditions, the pod's rank."""

from __future__ import annotations

from typing import Any

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.json_positions import (
    JsonPath,
)
from goodput_agent.parsing.k8s.document import (
    DocumentEvents,
    as_dict,
    as_int,
    as_list,
    as_str,
)
from goodput_agent.parsing.k8s.verdicts import (
    DISRUPTION,
    EVICTED_RESOURCE,
    POD_REASONS,
    SIGNAL_NAMES,
    Verdict,
    classify_termination,
)

SINGLE_GPU_KEYS = ("nvidia.com/gpu", "amd.com/gpu")


def _env_value(spec: dict[str, Any], names: tuple[str, ...]) -> tuple[int | None, str | None]:
    for container in as_list(spec.get("containers")):
        env = {as_str(e.get("name")): e.get("value") for e in as_list(as_dict(container).get("env"))
               if isinstance(e, dict)}
        for name in names:
            value = as_int(env.get(name))
            if value is not None:
                return value, f"env {name}"
    return None, None


def _gpu_count(spec: dict[str, Any]) -> int | None:
    total: int | None = None
    for container in as_list(spec.get("containers")):
        resources = as_dict(as_dict(container).get("resources"))
        for group in ("limits", "requests"):
            for key in SINGLE_GPU_KEYS:
                value = as_int(as_dict(resources.get(group)).get(key))
                if value is not None:
                    total = (total or 0) + value
                    break
            else:
                continue
            break
    return total


def pod_rank(meta: dict[str, Any], spec: dict[str, Any],
             masters: set[str]) -> tuple[int | None, str | None]:
    """The pod's rank among its job's pods, and where it was read."""
    rank, source = _env_value(spec, ("RANK", "PET_NODE_RANK", "NODE_RANK", "GROUP_RANK",
                                     "JOB_COMPLETION_INDEX", "VC_TASK_INDEX"))
    if rank is not None:
        return rank, source
    labels = as_dict(meta.get("labels"))
    annotations = as_dict(meta.get("annotations"))
    for type_key, index_key in (("training.kubeflow.org/replica-type",
                                 "training.kubeflow.org/replica-index"),
                                ("pytorch-replica-type", "pytorch-replica-index")):
        index = as_int(labels.get(index_key))
        if index is None:
            continue
        replica_type = as_str(labels.get(type_key)).lower()
        if replica_type == "master":
            return 0, index_key
        job = as_str(labels.get("training.kubeflow.org/job-name") or labels.get("job-name"))
        if replica_type == "worker" and job in masters:
            return index + 1, f"{index_key} (+1: the job has a master)"
        return index, index_key
    completion = as_int(labels.get("batch.kubernetes.io/job-completion-index")
                      or annotations.get("batch.kubernetes.io/job-completion-index"))
    job_index = as_int(labels.get("jobset.sigs.k8s.io/job-index"))
    if completion is not None and not job_index:
        return completion, "batch.kubernetes.io/job-completion-index"
    if job_index is not None and not completion:
        return job_index, "jobset.sigs.k8s.io/job-index"
    for key in ("apps.kubernetes.io/pod-index", "leaderworkerset.sigs.k8s.io/worker-index"):
        value = as_int(labels.get(key))
        if value is not None:
            return value, key
    return None, None


def pytorch_masters(items: list[Any]) -> set[str]:
    out = set()
    for item in items:
        labels = as_dict(as_dict(as_dict(item).get("metadata")).get("labels"))
        if as_str(labels.get("training.kubeflow.org/replica-type")).lower() == "master":
            out.add(as_str(labels.get("training.kubeflow.org/job-name")))
    return out


def _termination(b: DocumentEvents, path: JsonPath, term: dict[str, Any], pod: dict[str, Any],
                 cs: dict[str, Any], which: str) -> None:
    reason = as_str(term.get("reason"))
    exit_code = as_int(term.get("exitCode"))
    signal = as_int(term.get("signal"))
    verdict = classify_termination(reason, exit_code, signal)
    sig = signal or (exit_code - 128 if exit_code is not None and 128 < exit_code < 160 else None)
    container = as_str(cs.get("name"))
    when = "last termination" if which == "lastState" else "terminated"
    summary = (f"pod {pod['name']} container {container} {when}: {reason or 'exit'} "
               f"(exit code {exit_code})")
    if sig in SIGNAL_NAMES:
        summary += f" {SIGNAL_NAMES[sig]}"
    if pod["node"]:
        summary += f" on {pod['node']}"
    b.add(verdict, path, summary, node=pod["node"], rank=pod["event_rank"],
          ts_value=term.get("finishedAt") or term.get("startedAt"),
          detail={"pod": pod["name"], "namespace": pod["namespace"], "container": container,
                  "exit_code": exit_code, "reason": reason, "message": as_str(term.get("message")),
                  "signal": SIGNAL_NAMES.get(sig) if sig else None,
                  "restart_count": as_int(cs.get("restartCount")), "state": which,
                  "started_at": term.get("startedAt"), "finished_at": term.get("finishedAt"),
                  "pod_rank": pod["rank"], "rank_source": pod["rank_source"]})


def _container_fact(cs: dict[str, Any]) -> dict[str, Any]:
    state = as_dict(cs.get("state"))
    current = next((k for k in ("running", "waiting", "terminated") if k in state), None)
    cur = as_dict(state.get(current)) if current else {}
    last = as_dict(as_dict(cs.get("lastState")).get("terminated"))
    return {"name": cs.get("name"), "state": current, "reason": cur.get("reason"),
            "exit_code": as_int(cur.get("exitCode")), "ready": cs.get("ready"),
            "restart_count": as_int(cs.get("restartCount")), "last_reason": last.get("reason"),
            "last_exit_code": as_int(last.get("exitCode")),
            "last_finished_at": last.get("finishedAt")}


def _pod_status_reason(b: DocumentEvents, base: JsonPath, status: dict[str, Any],
                       pod: dict[str, Any]) -> None:
    reason = as_str(status.get("reason"))
    message = as_str(status.get("message"))
    verdict = POD_REASONS.get(reason)
    if verdict is None and "node shutdown" in message.lower():
        # GKE/graceful node shutdown: the node was taken away (spot reclaim or maintenance)
        verdict = Verdict(EventKind.preempted, Role.primary, "preempted")
    if verdict is None:
        return
    detail: dict[str, Any] = {"pod": pod["name"], "namespace": pod["namespace"],
                              "reason": reason, "message": message, "phase": status.get("phase"),
                              "pod_rank": pod["rank"]}
    if reason == "Evicted" and (m := EVICTED_RESOURCE.search(message)):
        detail["resource"] = m.group(1)
        if m.group(1) == "memory":
            detail["suggests"] = "host_oom"
    ts_value = None
    for cond in as_list(status.get("conditions")):
        if as_dict(cond).get("type") in ("DisruptionTarget", "Ready"):
            ts_value = ts_value or as_dict(cond).get("lastTransitionTime")
    b.add(verdict, base + ("status", "reason"), f"pod {pod['name']} {reason}: {message}",
          node=pod["node"], rank=pod["event_rank"], ts_value=ts_value, detail=detail)


def _pod_conditions(b: DocumentEvents, base: JsonPath, status: dict[str, Any],
                    pod: dict[str, Any]) -> None:
    for k, cond in enumerate(as_list(status.get("conditions"))):
        cond = as_dict(cond)
        if cond.get("type") != "DisruptionTarget" or cond.get("status") != "True":
            continue
        reason = as_str(cond.get("reason"))
        verdict = DISRUPTION.get(reason, Verdict(EventKind.other, Role.context))
        message = as_str(cond.get("message"))
        b.add(verdict, base + ("status", "conditions", k),
              f"pod {pod['name']} disrupted: {reason} {message}".strip(), node=pod["node"],
              rank=pod["event_rank"], ts_value=cond.get("lastTransitionTime"),
              detail={"pod": pod["name"], "namespace": pod["namespace"], "condition":
                      "DisruptionTarget", "reason": reason, "message": message})


def read_pod(b: DocumentEvents, base: JsonPath, item: dict[str, Any],
             masters: set[str]) -> dict[str, Any]:
    meta, spec, status = as_dict(item.get("metadata")), as_dict(item.get("spec")), \
        as_dict(item.get("status"))
    rank, rank_source = pod_rank(meta, spec, masters)
    gpus = _gpu_count(spec)
    nproc, _ = _env_value(spec, ("PET_NPROC_PER_NODE", "NPROC_PER_NODE"))
    single_process = (gpus is not None and gpus <= 1) and (nproc is None or nproc <= 1)
    pod = {"name": as_str(meta.get("name")), "namespace": as_str(meta.get("namespace")),
           "node": as_str(spec.get("nodeName")) or None, "rank": rank, "rank_source": rank_source,
           "event_rank": rank if single_process else None}
    containers = []
    for group in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for j, cs in enumerate(as_list(status.get(group))):
            cs = as_dict(cs)
            containers.append(_container_fact(cs))
            for which in ("state", "lastState"):
                term = as_dict(as_dict(cs.get(which)).get("terminated"))
                if term:
                    _termination(b, base + ("status", group, j, which, "terminated"), term, pod,
                                 cs, which)
            waiting = as_dict(as_dict(cs.get("state")).get("waiting"))
            if waiting.get("reason") == "CrashLoopBackOff":
                b.add(Verdict(EventKind.other, Role.symptom),
                      base + ("status", group, j, "state", "waiting"),
                      f"pod {pod['name']} container {cs.get('name')} in CrashLoopBackOff",
                      node=pod["node"], rank=pod["event_rank"], ts_value=None,
                      detail={"pod": pod["name"], "container": cs.get("name"),
                              "reason": "CrashLoopBackOff",
                              "message": as_str(waiting.get("message"))})
    _pod_status_reason(b, base, status, pod)
    _pod_conditions(b, base, status, pod)
    if status.get("phase") == "Pending" and not pod["node"]:
        b.add(Verdict(EventKind.job_state, Role.context), base + ("status", "phase"),
              f"pod {pod['name']} Pending: not scheduled to any node", node=None, rank=None,
              ts_value=None, detail={"pod": pod["name"], "state": "Pending",
                                     "never_started": True})
    return {"name": pod["name"], "namespace": pod["namespace"], "node": pod["node"],
            "phase": status.get("phase"), "reason": status.get("reason"), "rank": rank,
            "rank_source": rank_source, "gpus": gpus, "containers": containers,
            # what processes in the pod print as their host (NCCL lines, torchelastic)
            "hostname": as_str(spec.get("hostname")) or None, "pod_ip": as_str(status.get("podIP"))
            or None, "host_ip": as_str(status.get("hostIP")) or None}
