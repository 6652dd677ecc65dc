"""What counts as an incident in a Kubernetes object, as Triggers (k8s_source.py watches).

Each function reads one object as the API server sent it and returns its incidents, each under
a `signature` that is stable for as long as the incident is visible on the object (the source
remembers signatures per object uid, so a status update that repeats a known incident emits
nothing, and a re-list after `410 Gone` emits only what it missed):

- a Job (batch/v1), JobSet (jobset.x-k8s.io) or PyTorchJob (kubeflow.org) whose status has the
  condition `Failed` = True: `k8s-job:<uid>:<attempt>` (attempt = JobSet status.restarts,
  which restarts its child Jobs; the others fail once);
- a pod requesting `nvidia.com/gpu` that was Evicted (`k8s-pod:<uid>:evicted`), or one of
  whose containers ended OOMKilled or Error: `k8s-pod:<uid>:<container>:<n>` where n is the
  number of the ended instance (restartCount while it is the current state, restartCount - 1
  once the kubelet restarted it and it shows as lastState), so both views of one end agree;
  only a container's first MAX_ENDS_PER_CONTAINER ends (a crash loop is one problem);
- a GPU node whose Ready condition is False or Unknown (`k8s-node:<node>:NotReady:<since>`),
  or that carries a GPU health taint (`k8s-node:<node>:taint:<key>:<since>`).

GPU health taints. Nothing NVIDIA ships taints by default: the device plugin marks an unhealthy
GPU by withdrawing it from allocatable, node-problem-detector sets conditions, and NVSentinel's
fault-quarantine cordons by default and taints only when its rulesets say so, with keys the
operator chooses ("nvidia.com/*" or "gpu.health/*" are the patterns its integration guide shows:
https://docs.nvidia.com/nvsentinel/getting-started/integrations). So the keys are a prefix
list the user can change; `nvidia.com/gpu` itself is left out, since clusters commonly taint
every GPU node with it (value "present", NoSchedule) to keep CPU pods away. The node lifecycle
controller's own `node.kubernetes.io/not-ready` / `unreachable` taints repeat the Ready
condition and are not counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from goodput_agent.core.timespec import rfc3339 as when
from goodput_agent.watch.trigger import Trigger

GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT_PREFIXES = ("nvidia.com/", "gpu.health/")
NOT_HEALTH_TAINTS = frozenset({GPU_RESOURCE})
POD_END_REASONS = frozenset({"OOMKilled", "Error"})
JOB_KINDS = {"jobs": "Job", "jobsets": "JobSet", "pytorchjobs": "PyTorchJob"}
# a container that keeps ending (a Deployment's pod in CrashLoopBackOff restarts for ever):
# its first ends are incidents; later ones repeat them and are not
MAX_ENDS_PER_CONTAINER = 3


@dataclass(frozen=True)
class Incident:
    signature: str  # stable within the object while the incident shows
    trigger: Trigger


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in _status(obj).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def _labels(obj: dict[str, Any], **extra: str) -> dict[str, str]:
    meta = _meta(obj)
    out = {"namespace": str(meta.get("namespace") or "")} if meta.get("namespace") else {}
    return {**out, **{k: v for k, v in extra.items() if v}}


def job_incidents(plural: str, obj: dict[str, Any], seen_at: datetime) -> list[Incident]:
    cond = _condition(obj, "Failed")
    if not cond or cond.get("status") != "True":
        return []
    meta, kind = _meta(obj), JOB_KINDS[plural]
    ns, name, uid = str(meta.get("namespace") or ""), str(meta.get("name")), meta.get("uid")
    attempt = int(_status(obj).get("restarts") or 0)
    trigger = Trigger(
        source="kubernetes", key=f"k8s-job:{uid}:{attempt}", question="failure",
        subject=f"{ns}/{name}", state=str(cond.get("reason") or "Failed"),
        occurred_at=when(cond.get("lastTransitionTime")) or
        when(_status(obj).get("completionTime")) or seen_at,
        collect={"k8s_job": f"{ns}/{kind}/{name}"},
        labels=_labels(obj, kind=kind), detail=str(cond.get("message") or ""))
    return [Incident(f"failed:{attempt}", trigger)]


def requests_gpu(pod: dict[str, Any]) -> bool:
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {} if isinstance(c, dict) else {}
        for group in ("limits", "requests"):
            try:
                if float((res.get(group) or {}).get(GPU_RESOURCE) or 0) > 0:
                    return True
            except (TypeError, ValueError):
                continue
    return False


def _owner(pod: dict[str, Any]) -> str:
    for ref in _meta(pod).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return f"{ref.get('kind')}/{ref.get('name')}"
    return ""


def _ended(status: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The container's last end (instance number, terminated state), if it ended."""
    restarts = int(status.get("restartCount") or 0)
    current = (status.get("state") or {}).get("terminated")
    if isinstance(current, dict):
        return restarts, current
    last = (status.get("lastState") or {}).get("terminated")
    if isinstance(last, dict):
        return max(restarts - 1, 0), last
    return None


def pod_incidents(pod: dict[str, Any], seen_at: datetime,
                  max_ends: int = MAX_ENDS_PER_CONTAINER) -> list[Incident]:
    if not requests_gpu(pod):
        return []
    meta, status = _meta(pod), _status(pod)
    ns, name, uid = str(meta.get("namespace") or ""), str(meta.get("name")), meta.get("uid")
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    common = {"source": "kubernetes", "question": "failure", "subject": f"{ns}/{name}",
              "nodes": [node] if node else [], "collect": {"k8s_pod": f"{ns}/{name}"}}
    if status.get("reason") == "Evicted":
        disrupted = _condition(pod, "DisruptionTarget") or {}
        trigger = Trigger(**common, key=f"k8s-pod:{uid}:evicted", state="Evicted",
                          occurred_at=when(disrupted.get("lastTransitionTime")) or seen_at,
                          labels=_labels(pod, owner=_owner(pod)),
                          detail=str(status.get("message") or ""))
        return [Incident("evicted", trigger)]
    out = []
    for cs in status.get("containerStatuses") or []:
        ended = _ended(cs) if isinstance(cs, dict) else None
        if ended is None or ended[1].get("reason") not in POD_END_REASONS \
                or ended[0] >= max_ends:
            continue
        instance, term = ended
        container = str(cs.get("name"))
        detail = str(term.get("message") or f"exit code {term.get('exitCode')}")
        trigger = Trigger(**common, key=f"k8s-pod:{uid}:{container}:{instance}",
                          state=str(term.get("reason")),
                          occurred_at=when(term.get("finishedAt")) or seen_at,
                          labels=_labels(pod, owner=_owner(pod), container=container,
                                         exit_code=str(term.get("exitCode", ""))),
                          detail=detail)
        out.append(Incident(f"ended:{container}:{instance}", trigger))
    return out


def is_gpu_node(node: dict[str, Any]) -> bool:
    status = _status(node)
    for group in ("capacity", "allocatable"):
        try:
            if float((status.get(group) or {}).get(GPU_RESOURCE) or 0) > 0:
                return True
        except (TypeError, ValueError):
            continue
    return False


def node_incidents(node: dict[str, Any], seen_at: datetime, resource_version: str,
                   taint_prefixes: tuple[str, ...] = GPU_TAINT_PREFIXES) -> list[Incident]:
    """NotReady and GPU health taints. A taint without timeAdded (only NoExecute taints carry
    one) is dated by the resourceVersion at which it was first seen: the signature keeps the
    key stable while the taint stays (the source remembers it), and a taint removed and added
    again later is a new incident."""
    if not is_gpu_node(node):
        return []
    name = str(_meta(node).get("name"))
    common = {"source": "kubernetes", "question": "node", "subject": name, "nodes": [name],
              "collect": {"node": name}}
    out = []
    ready = _condition(node, "Ready")
    if ready and ready.get("status") in ("False", "Unknown"):
        since = str(ready.get("lastTransitionTime") or "")
        trigger = Trigger(**common, key=f"k8s-node:{name}:NotReady:{since}", state="NotReady",
                          occurred_at=when(since) or seen_at,
                          labels={"condition": f"Ready={ready.get('status')}"},
                          detail=str(ready.get("message") or ready.get("reason") or ""))
        out.append(Incident(f"NotReady:{since}", trigger))
    for taint in (node.get("spec") or {}).get("taints") or []:
        key = str(taint.get("key") or "") if isinstance(taint, dict) else ""
        if key in NOT_HEALTH_TAINTS or not key.startswith(taint_prefixes):
            continue
        value, effect = str(taint.get("value") or ""), str(taint.get("effect") or "")
        since = str(taint.get("timeAdded") or f"rv{resource_version}")
        trigger = Trigger(**common, key=f"k8s-node:{name}:taint:{key}:{since}",
                          state=f"taint {key}", occurred_at=when(taint.get("timeAdded")) or
                          seen_at, labels={"taint": f"{key}={value}:{effect}"},
                          detail=f"{key}={value}:{effect}")
        out.append(Incident(f"taint:{key}={value}:{effect}", trigger))
    return out
