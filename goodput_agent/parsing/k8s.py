"""Kubernetes objects as `kubectl get pods|events|nodes -o json` prints them (format "k8s_list").

One document is a List (kind List, PodList, EventList, NodeList; items may mix kinds) or a single
Pod, Node or Event. JSON has no natural lines, so every Event's Locator is found by one token
scan of the document (JsonPositions): it spans the JSON value that produced the event (a
container's `terminated` block, a node condition, an event item), and the value's JSON path is
kept in detail["json_path"].

Pods carry a pod rank (the replica / completion index, or env RANK): that is the rank of the pod,
which holds several training processes when it has several GPUs, so Event.rank is only set when
the pod runs at most one GPU; otherwise the index stays in detail["pod_rank"].

JsonPositions and load_json_document are shared with the Slurm JSON parsers.
"""

from __future__ import annotations

import gzip
import json
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from goodput_agent.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.timefmt import parse_iso

MAX_JSON_BYTES = 50 * 1024 * 1024
EXCERPT_CHARS = 500

JsonPath = tuple[str | int, ...]

# ---------------------------------------------------------------------------------------------
# JSON documents with positions
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"(\s*:)?|[{}\[\],]')
_SPACES = re.compile(r"\s+")


def load_json_document(path: Path, ctx: ParseContext, what: str) -> tuple[Any, str]:
    """The parsed document and its text; ParseError (one line) when it is not readable JSON."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ParseError(f"{ctx.rel_path}: cannot read {what} ({exc.strerror})") from None
    if size > MAX_JSON_BYTES:
        raise ParseError(f"{ctx.rel_path}: {what} is {size // (1024 * 1024)} MiB, over the "
                         f"{MAX_JSON_BYTES // (1024 * 1024)} MiB limit for JSON documents; "
                         "export a narrower selection")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                raw = fh.read(MAX_JSON_BYTES + 1)
        else:
            raw = path.read_bytes()
    except (OSError, EOFError) as exc:
        raise ParseError(f"{ctx.rel_path}: cannot read {what} ({exc})") from None
    text = raw.decode("utf-8-sig", errors="replace")
    try:
        return json.loads(text), text
    except json.JSONDecodeError as exc:
        raise ParseError(f"{ctx.rel_path}: {what} is not valid JSON (line {exc.lineno}, "
                         f"column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise ParseError(f"{ctx.rel_path}: {what} is nested too deeply to read") from None


def _decode_key(raw: str) -> str:
    if "\\" not in raw:
        return raw
    try:
        return json.loads(f'"{raw}"')
    except json.JSONDecodeError:
        return raw


class JsonPositions:
    """Character spans of selected JSON paths, from one token scan of the document text.

    `keep(path)` chooses which paths to remember (bounded memory on big documents). A path's span
    starts at its key (or at its opening bracket for array elements) and ends at its closing
    bracket (or at the key, for scalars).
    """

    def __init__(self, text: str, keep: Callable[[JsonPath], bool]):
        self._text = text
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self._spans: dict[JsonPath, list[int]] = {}
        self._scan(keep)

    def _scan(self, keep: Callable[[JsonPath], bool]) -> None:
        slots: list[str | int] = []  # per open container: current key (object) or index (array)
        kinds: list[str] = []
        spans = self._spans
        pending: JsonPath | None = None  # a remembered key whose scalar value has not ended yet
        for m in _TOKEN.finditer(self._text):
            ch = self._text[m.start()]
            if ch == '"':
                if m.group(2) and kinds and kinds[-1] == "{":
                    slots[-1] = _decode_key(m.group(1))
                    p = tuple(slots)
                    pending = p if keep(p) else None
                    if pending:
                        spans[p] = [m.start(), m.end()]
                continue
            if ch in "{[":
                pending = None
                p = tuple(slots)
                if p not in spans and keep(p):
                    spans[p] = [m.start(), m.start() + 1]
                kinds.append(ch)
                slots.append(0 if ch == "[" else "")
                continue
            if pending is not None:
                end = m.start()
                while end > spans[pending][0] and self._text[end - 1].isspace():
                    end -= 1
                spans[pending][1] = end
                pending = None
            if ch == ",":
                if kinds and kinds[-1] == "[":
                    slots[-1] = int(slots[-1]) + 1
            elif kinds:  # } or ]
                kinds.pop()
                slots.pop()
                p = tuple(slots)
                if p in spans:
                    spans[p][1] = m.end()

    def _line(self, offset: int) -> int:
        return bisect_right(self._newlines, offset - 1) + 1

    def _nearest(self, path: JsonPath) -> JsonPath | None:
        for n in range(len(path), -1, -1):
            if path[:n] in self._spans:
                return path[:n]
        return None

    def lines(self, path: JsonPath) -> tuple[int, int]:
        """1-based first and last line of `path` (or of its nearest remembered ancestor)."""
        found = self._nearest(path)
        if found is None:
            return 1, 1
        start, end = self._spans[found]
        return self._line(start), self._line(max(start, end - 1))

    def excerpt(self, path: JsonPath, limit: int = EXCERPT_CHARS) -> str:
        """The document text of `path`, whitespace collapsed, capped at `limit` characters."""
        found = self._nearest(path)
        if found is None:
            return ""
        start, end = self._spans[found]
        return _SPACES.sub(" ", self._text[start:min(end, start + limit * 4)]).strip()[:limit]


def json_path_text(path: JsonPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def locator_for(positions: JsonPositions, ctx: ParseContext, *paths: JsonPath) -> Locator:
    """A Locator spanning the lines of all given paths."""
    spans = [positions.lines(p) for p in paths] or [(1, 1)]
    return Locator(path=ctx.rel_path, line_start=min(s for s, _ in spans),
                   line_end=max(e for _, e in spans))


# ---------------------------------------------------------------------------------------------
# Kubernetes
# ---------------------------------------------------------------------------------------------

_LIST_KINDS = {"List": None, "PodList": "Pod", "EventList": "Event", "NodeList": "Node"}
_OBJECT_KINDS = {"Pod", "Node", "Event"}
_KIND_RE = re.compile(r'"kind"\s*:\s*"(List|PodList|EventList|NodeList|Pod|Node|Event)"')
_KEEP_KEYS = frozenset({
    "items", "metadata", "name", "status", "containerStatuses", "initContainerStatuses",
    "ephemeralContainerStatuses", "state", "lastState", "terminated", "waiting", "reason",
    "message", "exitCode", "conditions", "spec", "nodeName", "taints", "involvedObject",
    "regarding", "note", "type",
})
_SINGLE_GPU_KEYS = ("nvidia.com/gpu", "amd.com/gpu")
_EXTERNAL_SIGNALS = {1, 2, 9, 15}  # SIGHUP, SIGINT, SIGKILL, SIGTERM: sent by someone else
_CRASH_SIGNALS = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}
_SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 9: "SIGKILL", 15: "SIGTERM", **_CRASH_SIGNALS}
_NODE_IN_MESSAGE = re.compile(r"\b[Nn]ode (?:\"|')?([A-Za-z0-9][\w.\-]*)(?:\"|')? "
                              r"(?:status is now|has been rebooted|is not ready)"
                              r"|\bon node (?:\"|')?([A-Za-z0-9][\w.\-]*)")
_EVICTED_RESOURCE = re.compile(r"low on resource: ([\w\-]+(?:\.[\w\-]+)*)")


def _keep_path(path: JsonPath) -> bool:
    return len(path) <= 9 and all(isinstance(p, int) or p in _KEEP_KEYS for p in path)


@dataclass(frozen=True)
class Verdict:
    kind: EventKind
    role: Role
    category: str | None = None
    weight: str | None = None


def _ts(value: Any, ctx: ParseContext) -> tuple[datetime | None, Clock]:
    if not isinstance(value, str) or not value:
        return None, Clock.none
    hit = parse_iso(value, ctx.clock)
    return (hit[0], hit[1]) if hit else (None, Clock.none)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class _Builder:
    """Accumulates events for one document."""

    def __init__(self, positions: JsonPositions, ctx: ParseContext):
        self.positions = positions
        self.ctx = ctx
        self.events: list[Event] = []

    def add(self, verdict: Verdict, path: JsonPath, summary: str, *, node: str | None,
            ts_value: Any, detail: dict[str, Any], rank: int | None = None) -> None:
        ts, clock = _ts(ts_value, self.ctx)
        detail = {k: v for k, v in detail.items() if v is not None and v != ""}
        detail["json_path"] = json_path_text(path)
        if verdict.weight:
            detail["weight"] = verdict.weight
        self.events.append(Event(
            kind=verdict.kind, role=verdict.role, category=verdict.category, ts=ts, clock=clock,
            node=node or None, rank=rank, summary=summary[:300],
            locator=locator_for(self.positions, self.ctx, path),
            excerpt=self.positions.excerpt(path), detail=detail))


# ------------------------------------------------------------------------------------- pods


def classify_termination(reason: str, exit_code: int | None, signal: int | None) -> Verdict:
    """What one container termination says about the failure."""
    if reason == "OOMKilled":
        return Verdict(EventKind.cgroup_oom, Role.primary, "host_oom")
    if reason == "DeadlineExceeded":
        return Verdict(EventKind.time_limit, Role.primary, "time_limit")
    if reason == "ContainerStatusUnknown":  # the container vanished with its pod; no verdict
        return Verdict(EventKind.exit_status, Role.context)
    if exit_code == 0 or reason == "Completed":
        return Verdict(EventKind.exit_status, Role.context)
    sig = signal or (exit_code - 128 if exit_code is not None and 128 < exit_code < 160 else None)
    if sig in _EXTERNAL_SIGNALS:
        return Verdict(EventKind.signal, Role.symptom)
    if sig == 11:
        return Verdict(EventKind.segfault, Role.primary, "application_error")
    if sig in _CRASH_SIGNALS:
        return Verdict(EventKind.signal, Role.primary, "application_error")
    if exit_code is None and not reason:
        return Verdict(EventKind.exit_status, Role.context)
    # a plain non-zero exit: the program failed, the reason is in its own log
    return Verdict(EventKind.exit_status, Role.primary, "application_error", weight="low")


def _env_value(spec: dict[str, Any], names: tuple[str, ...]) -> tuple[int | None, str | None]:
    for container in _list(spec.get("containers")):
        env = {_str(e.get("name")): e.get("value") for e in _list(_dict(container).get("env"))
               if isinstance(e, dict)}
        for name in names:
            value = _int(env.get(name))
            if value is not None:
                return value, f"env {name}"
    return None, None


def _gpu_count(spec: dict[str, Any]) -> int | None:
    total: int | None = None
    for container in _list(spec.get("containers")):
        resources = _dict(_dict(container).get("resources"))
        for group in ("limits", "requests"):
            for key in _SINGLE_GPU_KEYS:
                value = _int(_dict(resources.get(group)).get(key))
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
    labels = _dict(meta.get("labels"))
    annotations = _dict(meta.get("annotations"))
    for type_key, index_key in (("training.kubeflow.org/replica-type",
                                 "training.kubeflow.org/replica-index"),
                                ("pytorch-replica-type", "pytorch-replica-index")):
        index = _int(labels.get(index_key))
        if index is None:
            continue
        replica_type = _str(labels.get(type_key)).lower()
        if replica_type == "master":
            return 0, index_key
        job = _str(labels.get("training.kubeflow.org/job-name") or labels.get("job-name"))
        if replica_type == "worker" and job in masters:
            return index + 1, f"{index_key} (+1: the job has a master)"
        return index, index_key
    completion = _int(labels.get("batch.kubernetes.io/job-completion-index")
                      or annotations.get("batch.kubernetes.io/job-completion-index"))
    job_index = _int(labels.get("jobset.sigs.k8s.io/job-index"))
    if completion is not None and not job_index:
        return completion, "batch.kubernetes.io/job-completion-index"
    if job_index is not None and not completion:
        return job_index, "jobset.sigs.k8s.io/job-index"
    for key in ("apps.kubernetes.io/pod-index", "leaderworkerset.sigs.k8s.io/worker-index"):
        value = _int(labels.get(key))
        if value is not None:
            return value, key
    return None, None


def _pytorch_masters(items: list[Any]) -> set[str]:
    out = set()
    for item in items:
        labels = _dict(_dict(_dict(item).get("metadata")).get("labels"))
        if _str(labels.get("training.kubeflow.org/replica-type")).lower() == "master":
            out.add(_str(labels.get("training.kubeflow.org/job-name")))
    return out


def _termination(b: _Builder, path: JsonPath, term: dict[str, Any], pod: dict[str, Any],
                 cs: dict[str, Any], which: str) -> None:
    reason = _str(term.get("reason"))
    exit_code = _int(term.get("exitCode"))
    signal = _int(term.get("signal"))
    verdict = classify_termination(reason, exit_code, signal)
    sig = signal or (exit_code - 128 if exit_code is not None and 128 < exit_code < 160 else None)
    container = _str(cs.get("name"))
    when = "last termination" if which == "lastState" else "terminated"
    summary = (f"pod {pod['name']} container {container} {when}: {reason or 'exit'} "
               f"(exit code {exit_code})")
    if sig in _SIGNAL_NAMES:
        summary += f" {_SIGNAL_NAMES[sig]}"
    if pod["node"]:
        summary += f" on {pod['node']}"
    b.add(verdict, path, summary, node=pod["node"], rank=pod["event_rank"],
          ts_value=term.get("finishedAt") or term.get("startedAt"),
          detail={"pod": pod["name"], "namespace": pod["namespace"], "container": container,
                  "exit_code": exit_code, "reason": reason, "message": _str(term.get("message")),
                  "signal": _SIGNAL_NAMES.get(sig) if sig else None,
                  "restart_count": _int(cs.get("restartCount")), "state": which,
                  "started_at": term.get("startedAt"), "finished_at": term.get("finishedAt"),
                  "pod_rank": pod["rank"], "rank_source": pod["rank_source"]})


def _container_fact(cs: dict[str, Any]) -> dict[str, Any]:
    state = _dict(cs.get("state"))
    current = next((k for k in ("running", "waiting", "terminated") if k in state), None)
    cur = _dict(state.get(current)) if current else {}
    last = _dict(_dict(cs.get("lastState")).get("terminated"))
    return {"name": cs.get("name"), "state": current, "reason": cur.get("reason"),
            "exit_code": _int(cur.get("exitCode")), "ready": cs.get("ready"),
            "restart_count": _int(cs.get("restartCount")), "last_reason": last.get("reason"),
            "last_exit_code": _int(last.get("exitCode")),
            "last_finished_at": last.get("finishedAt")}


_POD_REASONS: dict[str, Verdict] = {
    "Evicted": Verdict(EventKind.other, Role.context),
    "DeadlineExceeded": Verdict(EventKind.time_limit, Role.primary, "time_limit"),
    "Preempted": Verdict(EventKind.preempted, Role.primary, "preempted"),
    "Preempting": Verdict(EventKind.preempted, Role.primary, "preempted"),
    "NodeLost": Verdict(EventKind.node_not_ready, Role.primary, "node_failure"),
    "NodeAffinity": Verdict(EventKind.other, Role.context),
    "UnexpectedAdmissionError": Verdict(EventKind.other, Role.context),
}
_DISRUPTION: dict[str, Verdict] = {
    "PreemptionByScheduler": Verdict(EventKind.preempted, Role.primary, "preempted"),
    "PreemptionByKubeScheduler": Verdict(EventKind.preempted, Role.primary, "preempted"),
    "DeletionByTaintManager": Verdict(EventKind.node_not_ready, Role.symptom, "node_failure"),
    "TerminationByKubelet": Verdict(EventKind.other, Role.context),
    "EvictionByEvictionAPI": Verdict(EventKind.other, Role.context),
    "DeletionByPodGC": Verdict(EventKind.other, Role.context),
}


def _pod_status_reason(b: _Builder, base: JsonPath, status: dict[str, Any],
                       pod: dict[str, Any]) -> None:
    reason = _str(status.get("reason"))
    message = _str(status.get("message"))
    verdict = _POD_REASONS.get(reason)
    if verdict is None and "node shutdown" in message.lower():
        # GKE/graceful node shutdown: the node was taken away (spot reclaim or maintenance)
        verdict = Verdict(EventKind.preempted, Role.primary, "preempted")
    if verdict is None:
        return
    detail: dict[str, Any] = {"pod": pod["name"], "namespace": pod["namespace"],
                              "reason": reason, "message": message, "phase": status.get("phase"),
                              "pod_rank": pod["rank"]}
    if reason == "Evicted" and (m := _EVICTED_RESOURCE.search(message)):
        detail["resource"] = m.group(1)
        if m.group(1) == "memory":
            detail["suggests"] = "host_oom"
    ts_value = None
    for cond in _list(status.get("conditions")):
        if _dict(cond).get("type") in ("DisruptionTarget", "Ready"):
            ts_value = ts_value or _dict(cond).get("lastTransitionTime")
    b.add(verdict, base + ("status", "reason"), f"pod {pod['name']} {reason}: {message}",
          node=pod["node"], rank=pod["event_rank"], ts_value=ts_value, detail=detail)


def _pod_conditions(b: _Builder, base: JsonPath, status: dict[str, Any],
                    pod: dict[str, Any]) -> None:
    for k, cond in enumerate(_list(status.get("conditions"))):
        cond = _dict(cond)
        if cond.get("type") != "DisruptionTarget" or cond.get("status") != "True":
            continue
        reason = _str(cond.get("reason"))
        verdict = _DISRUPTION.get(reason, Verdict(EventKind.other, Role.context))
        message = _str(cond.get("message"))
        b.add(verdict, base + ("status", "conditions", k),
              f"pod {pod['name']} disrupted: {reason} {message}".strip(), node=pod["node"],
              rank=pod["event_rank"], ts_value=cond.get("lastTransitionTime"),
              detail={"pod": pod["name"], "namespace": pod["namespace"], "condition":
                      "DisruptionTarget", "reason": reason, "message": message})


def _pod(b: _Builder, base: JsonPath, item: dict[str, Any], masters: set[str]) -> dict[str, Any]:
    meta, spec, status = _dict(item.get("metadata")), _dict(item.get("spec")), \
        _dict(item.get("status"))
    rank, rank_source = pod_rank(meta, spec, masters)
    gpus = _gpu_count(spec)
    nproc, _ = _env_value(spec, ("PET_NPROC_PER_NODE", "NPROC_PER_NODE"))
    single_process = (gpus is not None and gpus <= 1) and (nproc is None or nproc <= 1)
    pod = {"name": _str(meta.get("name")), "namespace": _str(meta.get("namespace")),
           "node": _str(spec.get("nodeName")) or None, "rank": rank, "rank_source": rank_source,
           "event_rank": rank if single_process else None}
    containers = []
    for group in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for j, cs in enumerate(_list(status.get(group))):
            cs = _dict(cs)
            containers.append(_container_fact(cs))
            for which in ("state", "lastState"):
                term = _dict(_dict(cs.get(which)).get("terminated"))
                if term:
                    _termination(b, base + ("status", group, j, which, "terminated"), term, pod,
                                 cs, which)
            waiting = _dict(_dict(cs.get("state")).get("waiting"))
            if waiting.get("reason") == "CrashLoopBackOff":
                b.add(Verdict(EventKind.other, Role.symptom),
                      base + ("status", group, j, "state", "waiting"),
                      f"pod {pod['name']} container {cs.get('name')} in CrashLoopBackOff",
                      node=pod["node"], rank=pod["event_rank"], ts_value=None,
                      detail={"pod": pod["name"], "container": cs.get("name"),
                              "reason": "CrashLoopBackOff",
                              "message": _str(waiting.get("message"))})
    _pod_status_reason(b, base, status, pod)
    _pod_conditions(b, base, status, pod)
    return {"name": pod["name"], "namespace": pod["namespace"], "node": pod["node"],
            "phase": status.get("phase"), "reason": status.get("reason"), "rank": rank,
            "rank_source": rank_source, "gpus": gpus, "containers": containers,
            # what processes in the pod print as their host (NCCL lines, torchelastic)
            "hostname": _str(spec.get("hostname")) or None, "pod_ip": _str(status.get("podIP"))
            or None, "host_ip": _str(status.get("hostIP")) or None}


# ------------------------------------------------------------------------------------ nodes

_GPU_CONDITION = re.compile(r"gpu|xid|nvlink|nvidia|dcgm", re.IGNORECASE)


def _node(b: _Builder, base: JsonPath, item: dict[str, Any]) -> dict[str, Any]:
    meta, spec, status = _dict(item.get("metadata")), _dict(item.get("spec")), \
        _dict(item.get("status"))
    name = _str(meta.get("name")) or None
    taints = [_dict(t) for t in _list(spec.get("taints"))]
    taint_keys = [_str(t.get("key")) for t in taints]
    ready: bool | None = None
    ready_reason = None
    for k, cond in enumerate(_list(status.get("conditions"))):
        cond = _dict(cond)
        ctype, cstatus = _str(cond.get("type")), _str(cond.get("status"))
        reason, message = _str(cond.get("reason")), _str(cond.get("message"))
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
              detail={"capacity": capacity, "allocatable": allocatable, "weight": 0.6})
    return {"name": name, "ready": ready, "reason": ready_reason, "taints": taint_keys,
            "unschedulable": bool(spec.get("unschedulable")),
            "gpu_capacity": gpus[0] if gpus else None}


def _gpu_shortfall(status: dict[str, Any]) -> tuple[int, int] | None:
    cap = _dict(status.get("capacity")).get("nvidia.com/gpu")
    alloc = _dict(status.get("allocatable")).get("nvidia.com/gpu")
    try:
        c, a = int(str(cap)), int(str(alloc))
    except ValueError:
        return None
    return (c, a) if a < c else None


# ----------------------------------------------------------------------------------- events


def classify_k8s_event(reason: str, message: str, event_type: str) -> Verdict | None:
    """What a Kubernetes Event says; None for routine events not worth keeping."""
    if reason == "NodeNotReady" or "status is now: NodeNotReady" in message:
        return Verdict(EventKind.node_not_ready, Role.primary, "node_failure")
    if reason == "NodeHasInsufficientMemory":
        return Verdict(EventKind.node_not_ready, Role.primary, "host_oom")
    if reason.startswith("NodeHasInsufficient") or reason == "NodeHasDiskPressure":
        return Verdict(EventKind.node_not_ready, Role.primary, "node_failure")
    if reason in ("OOMKilling", "SystemOOM"):
        return Verdict(EventKind.host_oom_kill, Role.primary, "host_oom")
    if reason == "Rebooted":
        return Verdict(EventKind.node_fail, Role.primary, "node_failure")
    if reason in ("Preempted", "Preempting"):
        return Verdict(EventKind.preempted, Role.primary, "preempted")
    if reason == "DeadlineExceeded":
        return Verdict(EventKind.time_limit, Role.primary, "time_limit")
    if reason in ("BackOff", "Killing", "TaintManagerEviction"):
        return Verdict(EventKind.other, Role.symptom)
    if reason in ("Evicted", "FailedScheduling", "NodeReady", "NodeNotSchedulable") or \
            event_type == "Warning":
        return Verdict(EventKind.other, Role.context)
    return None


def _event_ts(item: dict[str, Any]) -> Any:
    series = _dict(item.get("series"))
    meta = _dict(item.get("metadata"))
    # the first occurrence dates an event: a repeated event (count 40, series) started the
    # first time it happened, not the fortieth
    for value in (item.get("firstTimestamp"), item.get("deprecatedFirstTimestamp"),
                  item.get("eventTime"), item.get("lastTimestamp"),
                  item.get("deprecatedLastTimestamp"), series.get("lastObservedTime"),
                  meta.get("creationTimestamp")):
        if isinstance(value, str) and value:
            return value
    return None


def _event(b: _Builder, base: JsonPath, item: dict[str, Any]) -> None:
    reason = _str(item.get("reason"))
    message = _str(item.get("message") or item.get("note"))
    event_type = _str(item.get("type"))
    verdict = classify_k8s_event(reason, message, event_type)
    if verdict is None:
        return
    obj = _dict(item.get("involvedObject") or item.get("regarding"))
    source = _dict(item.get("source") or item.get("deprecatedSource"))
    obj_kind, obj_name = _str(obj.get("kind")), _str(obj.get("name"))
    node = obj_name if obj_kind == "Node" else None
    if node is None and (m := _NODE_IN_MESSAGE.search(message)):
        node = m.group(1) or m.group(2)
    node = node or _str(source.get("host")) or None
    detail: dict[str, Any] = {"reason": reason, "message": message, "type": event_type,
                              "object_kind": obj_kind, "object": obj_name,
                              "namespace": obj.get("namespace"), "count": _int(item.get("count")),
                              "source": source.get("component")
                              or item.get("reportingController")}
    if reason == "Evicted" and (m := _EVICTED_RESOURCE.search(message)):
        detail["resource"] = m.group(1)
        if m.group(1) == "memory":
            detail["suggests"] = "host_oom"
    b.add(verdict, base, f"{obj_kind or 'object'} {obj_name} {reason}: {message}".strip(),
          node=node, ts_value=_event_ts(item), detail=detail)


# ----------------------------------------------------------------------------------- parser


def _item_kind(item: dict[str, Any], default: str | None) -> str | None:
    kind = item.get("kind")
    if isinstance(kind, str) and kind in _OBJECT_KINDS:
        return kind
    if default:
        return default
    if "involvedObject" in item or "regarding" in item:
        return "Event"
    status = _dict(item.get("status"))
    if "containerStatuses" in status or "containers" in _dict(item.get("spec")):
        return "Pod"
    if "nodeInfo" in status or "capacity" in status:
        return "Node"
    return None


class K8sListParser:
    format = "k8s_list"

    def sniff(self, head: str, name: str) -> bool:
        text = head.lstrip()
        if not text.startswith("{"):
            return False
        if _KIND_RE.search(head) and '"apiVersion"' in head:
            return True
        return '"apiVersion"' in head and re.search(r'"items"\s*:\s*\[', head) is not None

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        doc, text = load_json_document(path, ctx, "Kubernetes JSON")
        if not isinstance(doc, dict):
            raise ParseError(f"{ctx.rel_path}: Kubernetes JSON is not an object")
        kind = _str(doc.get("kind"))
        if isinstance(doc.get("items"), list):
            items, base, default = doc["items"], ("items",), _LIST_KINDS.get(kind)
        elif kind in _OBJECT_KINDS:
            items, base, default = [doc], None, kind
        else:
            raise ParseError(f"{ctx.rel_path}: JSON is neither a Kubernetes List nor a Pod, "
                             f"Node or Event (kind {kind or 'missing'})")
        builder = _Builder(JsonPositions(text, _keep_path), ctx)
        masters = _pytorch_masters(items)
        facts: dict[str, Any] = {"pods": [], "nodes": [], "events": 0}
        skipped = 0
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                skipped += 1
                continue
            path: JsonPath = (*base, i) if base else ()
            item_kind = _item_kind(item, default)
            if item_kind == "Pod":
                facts["pods"].append(_pod(builder, path, item, masters))
            elif item_kind == "Node":
                facts["nodes"].append(_node(builder, path, item))
            elif item_kind == "Event":
                facts["events"] += 1
                _event(builder, path, item)
            else:
                skipped += 1
        warnings = [f"{skipped} items of other kinds skipped"] if skipped else []
        return ParseResult(format=self.format, events=builder.events, facts=facts,
                           lines_read=text.count("\n") + 1, warnings=warnings)


K8S_LIST = K8sListParser()
PARSER = K8S_LIST
PARSERS = (K8S_LIST,)
