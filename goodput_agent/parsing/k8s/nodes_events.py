"""Nodes (conditions, GPU shortfall) and Kubernetes Events."""

from __future__ import annotations

import re
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
from goodput_agent.parsing.k8s.relayed import relayed_verdict
from goodput_agent.parsing.k8s.verdicts import (
    EVICTED_RESOURCE,
    GPU_SHORTFALL,
    Verdict,
    classify_k8s_event,
)

NODE_IN_MESSAGE = re.compile(r"\b[Nn]ode (?:\"|')?([A-Za-z0-9][\w.\-]*)(?:\"|')? "
                              r"(?:status is now|has been rebooted|is not ready)"
                              r"|\bon node (?:\"|')?([A-Za-z0-9][\w.\-]*)")
_GPU_CONDITION = re.compile(r"gpu|xid|nvlink|nvidia|dcgm", re.IGNORECASE)


def read_node(b: DocumentEvents, base: JsonPath, item: dict[str, Any]) -> dict[str, Any]:
    meta, spec, status = as_dict(item.get("metadata")), as_dict(item.get("spec")), \
        as_dict(item.get("status"))
    name = as_str(meta.get("name")) or None
    taints = [as_dict(t) for t in as_list(spec.get("taints"))]
    taint_keys = [as_str(t.get("key")) for t in taints]
    ready: bool | None = None
    ready_reason = None
    for k, cond in enumerate(as_list(status.get("conditions"))):
        cond = as_dict(cond)
        ctype, cstatus = as_str(cond.get("type")), as_str(cond.get("status"))
        reason, message = as_str(cond.get("reason")), as_str(cond.get("message"))
        detail: dict[str, Any] = {"condition": ctype, "status": cstatus, "reason": reason,
                                  "message": message, "taints": taint_keys or None,
                                  "unschedulable": spec.get("unschedulable")}
        if ctype == "Ready":
            ready = cstatus == "True"
            ready_reason = reason or None
            if ready:
                continue
            verdict = Verdict(EventKind.node_not_ready, Role.primary, "node_failure")
            summary = f"node {name} Ready={cstatus}: {reason} {message}".strip()
        elif cstatus == "True":  # every other condition is a problem when True
            verdict = Verdict(EventKind.other, Role.context)
            if _GPU_CONDITION.search(ctype):
                detail["suggests"] = "gpu_hardware"
            summary = f"node {name} {ctype}=True: {reason} {message}".strip()
        else:
            continue
        b.add(verdict, base + ("status", "conditions", k), summary, node=name,
              ts_value=cond.get("lastTransitionTime") or cond.get("lastHeartbeatTime"),
              detail=detail)
    gpus = _gpu_shortfall(status)
    if gpus:
        capacity, allocatable = gpus
        # the device plugin withdraws a GPU it marked unhealthy (an Xid it treats as fatal)
        b.add(Verdict(EventKind.gpu_device_unhealthy, Role.primary, "gpu_hardware"),
              base + ("status", "allocatable"),
              f"node {name} offers {allocatable} of its {capacity} GPUs: the device plugin "
              "marked a GPU unhealthy", node=name, ts_value=None,
              detail={"capacity": capacity, "allocatable": allocatable, **GPU_SHORTFALL})
    return {"name": name, "ready": ready, "reason": ready_reason, "taints": taint_keys,
            "unschedulable": bool(spec.get("unschedulable")),
            "gpu_capacity": gpus[0] if gpus else None}


def _gpu_shortfall(status: dict[str, Any]) -> tuple[int, int] | None:
    cap = as_dict(status.get("capacity")).get("nvidia.com/gpu")
    alloc = as_dict(status.get("allocatable")).get("nvidia.com/gpu")
    try:
        c, a = int(str(cap)), int(str(alloc))
    except ValueError:
        return None
    return (c, a) if a < c else None


def _event_ts(item: dict[str, Any]) -> Any:
    series = as_dict(item.get("series"))
    meta = as_dict(item.get("metadata"))
    # the first occurrence dates an event: a repeated event (count 40, series) started the
    # first time it happened, not the fortieth
    for value in (item.get("firstTimestamp"), item.get("deprecatedFirstTimestamp"),
                  item.get("eventTime"), item.get("lastTimestamp"),
                  item.get("deprecatedLastTimestamp"), series.get("lastObservedTime"),
                  meta.get("creationTimestamp")):
        if isinstance(value, str) and value:
            return value
    return None


def read_event(b: DocumentEvents, base: JsonPath, item: dict[str, Any]) -> None:
    reason = as_str(item.get("reason"))
    message = as_str(item.get("message") or item.get("note"))
    event_type = as_str(item.get("type"))
    verdict = relayed_verdict(message) or classify_k8s_event(reason, message, event_type)
    if verdict is None:
        return
    obj = as_dict(item.get("involvedObject") or item.get("regarding"))
    source = as_dict(item.get("source") or item.get("deprecatedSource"))
    obj_kind, obj_name = as_str(obj.get("kind")), as_str(obj.get("name"))
    node = obj_name if obj_kind == "Node" else None
    if node is None and (m := NODE_IN_MESSAGE.search(message)):
        node = m.group(1) or m.group(2)
    node = node or as_str(source.get("host")) or None
    detail: dict[str, Any] = {"reason": reason, "message": message, "type": event_type,
                              "object_kind": obj_kind, "object": obj_name,
                              "namespace": obj.get("namespace"), "count": as_int(item.get("count")),
                              "source": source.get("component")
                              or item.get("reportingController")}
    if reason == "Evicted" and (m := EVICTED_RESOURCE.search(message)):
        detail["resource"] = m.group(1)
        if m.group(1) == "memory":
            detail["suggests"] = "host_oom"
    b.add(verdict, base, f"{obj_kind or 'object'} {obj_name} {reason}: {message}".strip(),
          node=node, ts_value=_event_ts(item), detail=detail)
