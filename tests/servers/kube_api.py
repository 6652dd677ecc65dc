"""The project's own small Kubernetes API server: a FIXTURE API server, not Kubernetes.

Why it exists: no kube-apiserver can be installed on this kind of machine from any reachable
registry (Debian ships only the clients — kubectl — and etcd; the server binaries come from
dl.k8s.io or container registries, which are out of reach). So the live Kubernetes source is
tested against this server, which serves objects loaded from fixture data (the eval cases'
`kubectl get -o json` Lists, or objects a test builds) in the exact API shapes:

- discovery (`/version`, `/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>`) in the legacy
  (non-aggregated) form, enough for `kubectl` 1.32 to talk to it (tests/servers/test_kube_api.py);
- list (typed `PodList`/`EventList`/... whose items carry no kind/apiVersion, as the real server
  sends them) with `labelSelector` (=, ==, !=, in, notin, exists, !key), `fieldSelector` (the
  fields the real server supports per resource; others answer 400 "field label not supported"),
  `limit` + `continue` (an opaque token; `remainingItemCount` only when no selector is set);
- get, and pod logs (`/log?container=&previous=true&tailLines=&sinceSeconds=&sinceTime=
  &timestamps=&limitBytes=`) with the kubelet's 400 answers (container name required, unknown
  container, no previous terminated container);
- for the mutating tools (issue 7): PATCH (merge-patch, strategic-merge-patch for built-in kinds,
  json-patch; the patch is applied), DELETE pods (the answer is the pod with deletionTimestamp
  set; there is no kubelet here, so the pod is removed at once, as after the kubelet confirms),
  and `?dryRun=All`, which answers exactly as the change would but stores nothing;
- errors as v1 Status objects in the real shape (404 NotFound, 403 Forbidden with the RBAC
  authorizer's message, 400 BadRequest, 401 Unauthorized, 415 UnsupportedMediaType).

Optional: `rules` (RBAC PolicyRules, e.g. the ClusterRole in deploy/kubernetes/rbac.yaml)
makes the server authorize every resource request as the real RBAC authorizer would (403
otherwise); `token` requires `Authorization: Bearer <token>`. Every request is recorded in
`.requests` (verb, API group, resource with subresource, namespace, name), which is how the RBAC
test proves the ClusterRole covers each call the source makes.

Watch (`?watch=true&resourceVersion=&allowWatchBookmarks=&timeoutSeconds=`) is served by
tests/servers/kube_watch.py from the cluster's change history: chunked JSON lines, bookmarks, a
`410 Gone` for a compacted resourceVersion (as an HTTP 410 or an ERROR event, as the real
server answers one or the other), and injected faults (a connection dropped mid-stream).

Not served: server-side apply, OpenAPI, Table output, admission, controllers (nothing
recreates a deleted pod; Jobs do not run). Only loopback.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import ssl
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

SERVER_VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-goodput-fixture",
                  "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                  "goVersion": "go1.23", "compiler": "gc", "platform": "linux/amd64"}


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short: tuple[str, ...] = ()
    builtin: bool = True  # strategic merge patch works only for built-in kinds
    fields: tuple[str, ...] = ()  # field selector labels beyond metadata.name/namespace

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


_POD_FIELDS = ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
               "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
               "status.nominatedNodeName")
_EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                 "involvedObject.uid", "involvedObject.apiVersion",
                 "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                 "reportingComponent", "source", "type")

RESOURCES = (
    Resource("", "v1", "pods", "Pod", True, ("po",), fields=_POD_FIELDS),
    Resource("", "v1", "events", "Event", True, ("ev",), fields=_EVENT_FIELDS),
    Resource("", "v1", "nodes", "Node", False, ("no",), fields=("spec.unschedulable",)),
    Resource("", "v1", "namespaces", "Namespace", False, ("ns",), fields=("status.phase",)),
    Resource("batch", "v1", "jobs", "Job", True, fields=("status.successful",)),
    Resource("apps", "v1", "deployments", "Deployment", True, ("deploy",)),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",)),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",)),
    Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", True, builtin=False),
    Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", True, builtin=False),
)
_BY_KIND = {(r.api_version, r.kind): r for r in RESOURCES}
_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
_NAMESPACES = _BY_PATH[("", "v1", "namespaces")]

# strategic merge: the merge key of lists that merge by key (from the API's patchMergeKey tags)
_MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
               "env": "name", "volumes": "name", "volumeMounts": "mountPath",
               "ports": "containerPort", "imagePullSecrets": "name", "taints": "key",
               "conditions": "type", "tolerations": None, "ownerReferences": "uid",
               "hostAliases": "ip", "topologySpreadConstraints": "topologyKey"}

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    """An error answered as a v1 Status object."""

    def __init__(self, code: int, reason: str, message: str,
                 details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Failure", "message": self.message,
                               "reason": self.reason, "code": self.code}
        if self.details is not None:
            out["details"] = self.details
        return out


def _not_found(res: Resource, name: str) -> ApiError:
    plural = f"{res.plural}.{res.group}" if res.group else res.plural
    return ApiError(404, "NotFound", f'{plural} "{name}" not found',
                    {"name": name, "group": res.group, "kind": res.plural} if res.group
                    else {"name": name, "kind": res.plural})


def _bad(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


# ------------------------------------------------------------------------------------ logs


@dataclass
class LogLine:
    ts: datetime | None
    text: str
    stamp: str | None = None  # the RFC 3339 time as written (nanoseconds kept)


_TS_PREFIX = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (.*)$")


def _parse_ts(text: str) -> datetime | None:
    text = text.replace("Z", "+00:00")
    if "." in text:  # nanoseconds: Python keeps microseconds
        head, _, rest = text.partition(".")
        digits = re.match(r"\d+", rest)
        frac = digits.group(0) if digits else ""
        text = f"{head}.{frac[:6].ljust(6, '0')}{rest[len(frac):]}"
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def log_lines(text: str, default_ts: datetime | None = None) -> list[LogLine]:
    """A container log as the kubelet keeps it: each line with the time it was written. Lines
    that start with an RFC 3339 time (`kubectl logs --timestamps` output) take it (and lose the
    prefix); others take the previous line's time, or `default_ts`."""
    out, last = [], default_ts
    for raw in text.splitlines():
        m = _TS_PREFIX.match(raw)
        ts = _parse_ts(m.group(1)) if m else None
        stamp = None
        if m and ts is not None:
            last, stamp, raw = ts, m.group(1), m.group(2)
        out.append(LogLine(last, raw, stamp))
    return out


def _rfc3339nano(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


# ----------------------------------------------------------------------------- selectors

_SET_REQ = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*"
                      r"(?:(notin|in)\s*\(([^)]*)\)|(==|=|!=)\s*([\w.-]*))?\s*$")


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


def label_matcher(selector: str) -> Any:
    """A predicate over a labels dict; ApiError 400 for a selector the server cannot parse."""
    reqs = []
    for part in _split_top(selector):
        m = _SET_REQ.match(part)
        if not m or (m.group(1) and (m.group(3) or m.group(5))):
            raise _bad(f"unable to parse requirement: found '{part.strip()}', "
                       "expected: in, notin, =, ==, !=, gt, lt")
        neg, key, setop, values, op, value = m.groups()
        reqs.append((neg, key, setop, [v.strip() for v in (values or "").split(",")
                                       if v.strip()], op, value))

    def match(labels: dict[str, str]) -> bool:
        for neg, key, setop, values, op, value in reqs:
            have = labels.get(key)
            if setop == "in" and have not in values:
                return False
            if setop == "notin" and have in values:
                return False
            if op in ("=", "==") and have != value:
                return False
            if op == "!=" and have == value:
                return False
            if not setop and not op and (have is None) != bool(neg):
                return False
        return True

    return match


def _dig(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _field_value(res: Resource, obj: dict[str, Any], label: str) -> str:
    if res.kind == "Event" and label == "source":
        value = _dig(obj, "source.component") or obj.get("reportingComponent")
    else:
        value = _dig(obj, label)
    if isinstance(value, bool):
        return "true" if value else "false"
    if label == "spec.unschedulable" and value is None:
        return "false"
    return "" if value is None else str(value)


def field_matcher(res: Resource, selector: str) -> Any:
    reqs = []
    for part in _split_top(selector):
        m = re.match(r"^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not m:
            raise _bad(f"invalid selector: '{selector}'; can't understand '{part}'")
        label, op, value = m.groups()
        if label not in ("metadata.name", "metadata.namespace", *res.fields):
            raise _bad(f'field label not supported: {label}')
        reqs.append((label, op, value))

    def match(obj: dict[str, Any]) -> bool:
        return all((_field_value(res, obj, label) == value) == (op != "!=")
                   for label, op, value in reqs)

    return match


# -------------------------------------------------------------------------------- patches


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge(target: Any, patch: Any, key: str | None = None) -> Any:
    """Strategic merge patch for the built-in kinds: like a merge patch, except that lists
    with a merge key (containers by name, env by name, taints by key, ...) merge element-wise,
    `$patch: delete` in an element removes it, and `$patch: replace` replaces the map."""
    if isinstance(patch, dict):
        if patch.get("$patch") == "replace":
            return {k: v for k, v in patch.items() if k != "$patch"}
        out = dict(target) if isinstance(target, dict) else {}
        for k, value in patch.items():
            if k.startswith("$"):
                continue
            if value is None:
                out.pop(k, None)
            else:
                out[k] = strategic_merge(out.get(k), value, k)
        return out
    if isinstance(patch, list) and key in _MERGE_KEYS and _MERGE_KEYS[key] \
            and isinstance(target, list):
        mkey = _MERGE_KEYS[key]
        out_list = [copy.deepcopy(e) for e in target]
        for element in patch:
            if not isinstance(element, dict):
                continue
            idx = next((i for i, e in enumerate(out_list) if isinstance(e, dict)
                        and e.get(mkey) == element.get(mkey)), None)
            if element.get("$patch") == "delete":
                if idx is not None:
                    out_list.pop(idx)
            elif idx is None:
                out_list.append({k: v for k, v in element.items() if not k.startswith("$")})
            else:
                out_list[idx] = strategic_merge(out_list[idx], element, None)
        return out_list
    return copy.deepcopy(patch)


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 (add, remove, replace, test)."""
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest",
                       "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(target)
    for op in ops:
        parts = _pointer(str(op.get("path", "")))
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent.get(p)
            if parent is None:
                raise ApiError(422, "Invalid", f"doc is missing path: \"{op.get('path')}\"")
        last = parts[-1] if parts else ""
        kind = op.get("op")
        if kind == "test":
            have = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if have != op.get("value"):
                raise ApiError(422, "Invalid", f"testing value {op.get('path')} failed")
        elif kind == "remove":
            parent.pop(int(last) if isinstance(parent, list) else last)
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op.get("value"))
                elif kind == "add":
                    parent.insert(int(last), op.get("value"))
                else:
                    parent[int(last)] = op.get("value")
            else:
                parent[last] = op.get("value")
        else:
            raise _bad(f"Unexpected kind: {kind}")
    return doc


# ---------------------------------------------------------------------------------- RBAC


@dataclass(frozen=True)
class Attributes:
    verb: str
    group: str
    resource: str  # with subresource: "pods/log"
    namespace: str | None
    name: str | None


def role_rules(role: dict[str, Any], namespace: str) -> list[dict[str, Any]]:
    """A Role's rules as this server applies them: only to requests in `namespace` (what a
    RoleBinding there grants; a ClusterRole's rules are passed as they are)."""
    return [{**r, "_namespace": namespace} for r in role["rules"]]


def _rule_allows(rule: dict[str, Any], a: Attributes) -> bool:
    def has(values: Any, want: str) -> bool:
        return isinstance(values, list) and ("*" in values or want in values)

    if "_namespace" in rule and a.namespace != rule["_namespace"]:
        return False  # a Role grants nothing cluster-wide nor in another namespace
    if not has(rule.get("verbs"), a.verb) or not has(rule.get("apiGroups"), a.group):
        return False
    if not has(rule.get("resources"), a.resource):
        return False
    names = rule.get("resourceNames")
    return not names or (a.name is not None and a.name in names)


def forbidden(user: str, a: Attributes) -> ApiError:
    base, _, sub = a.resource.partition("/")
    plural = f"{base}.{a.group}" if a.group else base
    subject = f'{plural} "{a.name}"' if a.name else plural
    scope = (f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope")
    details: dict[str, Any] = {"kind": base}
    if a.name:
        details["name"] = a.name
    if a.group:
        details["group"] = a.group
    return ApiError(403, "Forbidden", f'{subject} is forbidden: User "{user}" cannot {a.verb} '
                    f'resource "{a.resource}" in API group "{a.group}" {scope}', details)


# ---------------------------------------------------------------------------------- state


@dataclass
class FixtureCluster:
    """The objects and container logs the fixture API server serves."""

    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    # (namespace, pod, container, previous) -> lines
    logs: dict[tuple[str, str, str, bool], list[LogLine]] = field(default_factory=dict)
    resource_version: int = 1000
    # every change, for watch: (resourceVersion, ADDED/MODIFIED/DELETED, key, object)
    history: list[tuple[int, str, tuple[str, str, str], dict[str, Any]]] = \
        field(default_factory=list)
    compacted_rv: int = 0  # a watch from an older resourceVersion is answered 410 Gone

    def record(self, kind: str, key: tuple[str, str, str], obj: dict[str, Any]) -> None:
        self.history.append((self.resource_version, kind, key, copy.deepcopy(obj)))

    def remove(self, api_version: str, kind: str, namespace: str | None, name: str) -> None:
        """Delete an object (a DELETED watch event), as a controller or a person would."""
        res = _BY_KIND[(api_version, kind)]
        key = self._key(res, namespace, name)
        obj = self.objects.pop(key)
        self.resource_version += 1
        obj["metadata"]["resourceVersion"] = str(self.resource_version)
        self.record("DELETED", key, obj)

    def compact(self) -> None:
        """Forget the history so far, as etcd compaction does: older resourceVersions expire."""
        self.compacted_rv = self.resource_version
        self.history.clear()

    def _key(self, res: Resource, namespace: str | None, name: str) -> tuple[str, str, str]:
        return (res.plural + "." + res.group, namespace or "", name)

    def add(self, obj: dict[str, Any]) -> dict[str, Any]:
        res = _BY_KIND.get((obj.get("apiVersion", ""), obj.get("kind", "")))
        if res is None:
            raise ValueError(f"the fixture API server does not serve {obj.get('apiVersion')} "
                             f"{obj.get('kind')}")
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        meta.setdefault("uid", str(uuid.uuid5(uuid.NAMESPACE_URL, json.dumps(
            [res.plural, meta.get("namespace"), meta.get("name")]))))
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        self.resource_version += 1
        meta["resourceVersion"] = str(self.resource_version)
        if res.kind in ("Deployment", "StatefulSet", "Job"):
            meta.setdefault("generation", 1)
        key = self._key(res, meta.get("namespace"), meta["name"])
        self.record("MODIFIED" if key in self.objects else "ADDED", key, obj)
        self.objects[key] = obj
        ns = meta.get("namespace")
        if ns and self._key(_NAMESPACES, None, ns) not in self.objects:
            self.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                      "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        return obj

    def add_log(self, namespace: str, pod: str, container: str, text: str, *,
                previous: bool = False, default_ts: datetime | None = None) -> None:
        self.logs[(namespace, pod, container, previous)] = log_lines(text, default_ts)

    def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.objects.get(self._key(res, namespace, name))
        if obj is None:
            raise _not_found(res, name)
        return obj

    def items(self, res: Resource, namespace: str | None) -> list[dict[str, Any]]:
        prefix = res.plural + "." + res.group
        keys = sorted(k for k in self.objects if k[0] == prefix
                      and (namespace is None or k[1] == namespace))
        return [self.objects[k] for k in keys]

    # the eval cases' bundles (kubectl get -o json Lists + logs/<pod>.log) as a cluster
    @classmethod
    def from_bundle(cls, bundle: Path) -> FixtureCluster:
        """Objects from every `kubectl get -o json` List under `bundle/k8s/`, each pod's log
        from `logs/<pod>.log` (its first container's current log), and the pods' controllers
        (from their ownerReferences, as minimal objects) so that they can be looked up."""
        cluster = cls()
        for path in sorted((bundle / "k8s").glob("*.json")):
            doc = json.loads(path.read_text())
            for item in doc.get("items", [doc]):
                cluster.add(item)
        for pod in cluster.items(_BY_PATH[("", "v1", "pods")], None):
            meta = pod["metadata"]
            for ref in meta.get("ownerReferences") or []:
                owner = {"apiVersion": ref["apiVersion"], "kind": ref["kind"],
                         "metadata": {"name": ref["name"], "namespace": meta["namespace"],
                                      "uid": ref.get("uid")}}
                res = _BY_KIND.get((ref["apiVersion"], ref["kind"]))
                if res and cluster._key(res, meta["namespace"], ref["name"]) not in \
                        cluster.objects:
                    cluster.add(owner)
            log = bundle / "logs" / f"{meta['name']}.log"
            containers = pod.get("spec", {}).get("containers") or []
            if log.is_file() and containers:
                started = _first_start(pod)
                cluster.add_log(meta["namespace"], meta["name"], containers[0]["name"],
                                log.read_text(errors="replace"), default_ts=started)
        return cluster


def _first_start(pod: dict[str, Any]) -> datetime | None:
    for cs in pod.get("status", {}).get("containerStatuses") or []:
        for state in (cs.get("state") or {}, cs.get("lastState") or {}):
            for value in state.values():
                if isinstance(value, dict) and value.get("startedAt"):
                    return _parse_ts(value["startedAt"])
    start = pod.get("status", {}).get("startTime")
    return _parse_ts(start) if start else None


# --------------------------------------------------------------------------------- server


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    verb: str | None = None  # the RBAC verb, None for non-resource URLs
    group: str = ""
    resource: str = ""
    namespace: str | None = None
    name: str | None = None
    dry_run: bool = False
    code: int = 200


class FixtureKubeAPI:
    """The state and request handling of one fixture API server (no sockets here)."""

    def __init__(self, cluster: FixtureCluster, *, rules: list[dict[str, Any]] | None = None,
                 token: str | None = None, user: str = "system:serviceaccount:goodput:goodput",
                 now: datetime | None = None):
        self.cluster = cluster
        self.rules = rules
        self.token = token
        self.user = user
        self.now = now  # the server's clock for sinceSeconds; None: the real clock
        # watch (tests/servers/kube_watch.py): how an expired resourceVersion is answered
        # ("http": 410 Gone; "event": 200 and an ERROR event with code 410), and faults the
        # next watch calls meet, in order (kube_watch.WatchFault)
        self.expired_as = "event"
        self.watch_faults: list[Any] = []
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.address = "127.0.0.1:0"

    # ---- dispatch

    def handle(self, method: str, raw_path: str, headers: dict[str, str],
               body: bytes) -> tuple[int, str, bytes]:
        url = urlsplit(raw_path)
        query = parse_qs(url.query, keep_blank_values=True)
        rec = Recorded(method, url.path, query)
        with self.lock:
            self.requests.append(rec)
            try:
                if self.token is not None and not _bearer_ok(headers.get("authorization", ""),
                                                             self.token):
                    raise ApiError(401, "Unauthorized", "Unauthorized")
                code, ctype, payload = self._route(method, url.path, query, headers, body, rec)
            except ApiError as exc:
                code, ctype, payload = exc.code, "application/json", exc.status()
        rec.code = code
        if not isinstance(payload, (bytes, dict, list)):  # a watch: streamed by the handler
            return code, ctype, payload
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return code, ctype, data

    def _route(self, method: str, path: str, query: dict[str, list[str]],
               headers: dict[str, str], body: bytes, rec: Recorded) -> tuple[int, str, Any]:
        parts = [p for p in path.split("/") if p]
        if path in ("/version", "/version/"):
            return 200, "application/json", SERVER_VERSION
        if parts == ["api"]:
            return 200, "application/json", {
                "kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": self.address}]}
        if parts == ["apis"]:
            return 200, "application/json", self._groups()
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            if method != "GET":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")
            return 200, "application/json", self._resource_list(group, version)
        return self._resource(method, group, version, rest, query, headers, body, rec)

    def _groups(self) -> dict[str, Any]:
        groups: dict[str, list[str]] = {}
        for r in RESOURCES:
            if r.group and r.version not in groups.setdefault(r.group, []):
                groups[r.group].append(r.version)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
             "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
            for g, vs in groups.items()]}

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        found = [r for r in RESOURCES if r.group == group and r.version == version]
        if not found:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        out = []
        for r in found:
            verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                     "watch"]
            out.append({"name": r.plural, "singularName": r.kind.lower(),
                        "namespaced": r.namespaced, "kind": r.kind, "verbs": verbs,
                        **({"shortNames": list(r.short)} if r.short else {})})
            if r.kind == "Pod":
                out.append({"name": "pods/log", "singularName": "", "namespaced": True,
                            "kind": "Pod", "verbs": ["get"]})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version, "resources": out}

    def _resource(self, method: str, group: str, version: str, rest: list[str],
                  query: dict[str, list[str]], headers: dict[str, str], body: bytes,
                  rec: Recorded) -> tuple[int, str, Any]:
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        res = _BY_PATH.get((group, version, rest[0]))
        if res is None or len(rest) > 3 or (namespace and not res.namespaced):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub and not (res.kind == "Pod" and sub == "log"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        watch = query.get("watch", [""])[0] in ("true", "1")
        verb = {"GET": ("watch" if watch else "get") if name else
                ("watch" if watch else "list"), "PATCH": "patch", "DELETE": "delete",
                "PUT": "update", "POST": "create"}.get(method)
        if verb is None:
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")
        attrs = Attributes(verb, group, f"{res.plural}/{sub}" if sub else res.plural,
                           namespace, name)
        rec.verb, rec.group, rec.resource = attrs.verb, attrs.group, attrs.resource
        rec.namespace, rec.name = namespace, name
        if self.rules is not None and not any(_rule_allows(r, attrs) for r in self.rules):
            raise forbidden(self.user, attrs)
        if watch:
            from tests.servers.kube_watch import watch_plan

            return 200, "application/json", watch_plan(self, res, namespace, query)
        dry = query.get("dryRun", [])
        if dry and dry != ["All"]:
            raise ApiError(400, "BadRequest", f'Invalid dryRun value: "{dry[0]}"; supported '
                           'values: "All"')
        rec.dry_run = dry == ["All"]
        if verb == "list":
            return 200, "application/json", self._list(res, namespace, query)
        if verb == "get" and sub == "log":
            return 200, "text/plain", self._log(namespace or "", name or "", query)
        if verb == "get":
            return 200, "application/json", self.cluster.get(res, namespace, name or "")
        if verb == "patch":
            return 200, "application/json", self._patch(
                res, namespace, name or "", headers.get("content-type", ""), body, rec.dry_run)
        if verb == "delete":
            return 200, "application/json", self._delete(res, namespace, name or "", body,
                                                          rec.dry_run)
        raise ApiError(405, "MethodNotAllowed",
                       f"{verb} is not served by the fixture API server")

    # ---- verbs

    def _list(self, res: Resource, namespace: str | None,
              query: dict[str, list[str]]) -> dict[str, Any]:
        labels = query.get("labelSelector", [""])[0]
        fields = query.get("fieldSelector", [""])[0]
        lmatch = label_matcher(labels) if labels else None
        fmatch = field_matcher(res, fields) if fields else None
        items = self.cluster.items(res, namespace)
        rv = str(self.cluster.resource_version)
        token = query.get("continue", [""])[0]
        if token:
            try:
                state = json.loads(base64.b64decode(token + "=" * (-len(token) % 4)))
                start = str(state["start"])
                rv = str(int(state["rv"]))
            except (ValueError, KeyError, TypeError):
                raise _bad("continue key is not valid: incorrect encoded start "
                           "resourceVersion (version meta.k8s.io/v1)") from None
            items = [o for o in items if _list_key(o) >= start]
        if lmatch:
            items = [o for o in items if lmatch((o.get("metadata") or {}).get("labels") or {})]
        if fmatch:
            items = [o for o in items if fmatch(o)]
        limit = int(query.get("limit", ["0"])[0] or 0)
        meta: dict[str, Any] = {"resourceVersion": rv}
        if limit > 0 and len(items) > limit:
            rest = items[limit:]
            items = items[:limit]
            meta["continue"] = base64.b64encode(json.dumps(
                {"v": "meta.k8s.io/v1", "rv": int(rv), "start": _list_key(rest[0])}
            ).encode()).decode()
            if not labels and not fields:
                meta["remainingItemCount"] = len(rest)
        out = []
        for obj in items:
            obj = copy.deepcopy(obj)
            obj.pop("kind", None)
            obj.pop("apiVersion", None)
            out.append(obj)
        return {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta,
                "items": out}

    def _log(self, namespace: str, name: str, query: dict[str, list[str]]) -> bytes:
        pod = self.cluster.get(_BY_PATH[("", "v1", "pods")], namespace, name)
        names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        container = query.get("container", [""])[0]
        if not container:
            if len(names) != 1:
                raise _bad(f"a container name must be specified for pod {name}, choose one "
                           f"of: [{' '.join(names)}]")
            container = names[0]
        init = [c["name"] for c in (pod.get("spec") or {}).get("initContainers") or []]
        if container not in names + init:
            raise _bad(f"container {container} is not valid for pod {name}")
        previous = query.get("previous", ["false"])[0] in ("true", "1")
        lines = self.cluster.logs.get((namespace, name, container,
                                       _log_instance(pod, container, name, previous)))
        if lines is None:
            if previous:
                raise _bad(f'previous terminated container "{container}" in pod "{name}" '
                           "not found")
            lines = []
        since = None
        if query.get("sinceSeconds"):
            now = self.now or datetime.now(UTC)
            since = now - timedelta(seconds=int(query["sinceSeconds"][0]))
        elif query.get("sinceTime"):
            since = _parse_ts(query["sinceTime"][0])
        if since is not None:
            lines = [ln for ln in lines if ln.ts is None or ln.ts >= since]
        tail = query.get("tailLines", [""])[0]
        if tail:
            lines = lines[-int(tail):] if int(tail) > 0 else []
        stamps = query.get("timestamps", ["false"])[0] in ("true", "1")
        text = "".join((f"{ln.stamp or _rfc3339nano(ln.ts)} " if stamps and ln.ts else "")
                       + ln.text + "\n" for ln in lines)
        data = text.encode()
        limit = query.get("limitBytes", [""])[0]
        return data[:int(limit)] if limit else data

    def _patch(self, res: Resource, namespace: str | None, name: str, ctype: str,
               body: bytes, dry_run: bool) -> dict[str, Any]:
        current = self.cluster.get(res, namespace, name)
        ctype = ctype.split(";")[0].strip()
        accepted = [JSON_PATCH, MERGE, "application/apply-patch+yaml"]
        if res.builtin:
            accepted.insert(2, STRATEGIC)
        if ctype not in accepted or ctype == "application/apply-patch+yaml":
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                           "unknown format - accepted media types include: "
                           + ", ".join(accepted))
        try:
            patch = json.loads(body or b"null")
        except ValueError as exc:
            raise _bad(f"error decoding patch: {exc}") from None
        if ctype == JSON_PATCH:
            new = json_patch(current, patch)
        elif ctype == MERGE:
            new = merge_patch(current, patch)
        else:
            new = strategic_merge(current, patch)
        meta, old_meta = new.setdefault("metadata", {}), current["metadata"]
        for key in ("name", "namespace", "uid", "creationTimestamp"):
            if key in old_meta:
                meta[key] = old_meta[key]
        if new == current:  # a no-op patch stores nothing, as the real server
            return copy.deepcopy(current)
        if "generation" in old_meta and new.get("spec") != current.get("spec"):
            meta["generation"] = int(old_meta["generation"]) + 1
        if dry_run:
            return new
        self.cluster.resource_version += 1
        meta["resourceVersion"] = str(self.cluster.resource_version)
        self.cluster.objects[self.cluster._key(res, namespace, name)] = new
        self.cluster.record("MODIFIED", self.cluster._key(res, namespace, name), new)
        return copy.deepcopy(new)

    def _delete(self, res: Resource, namespace: str | None, name: str, body: bytes,
                dry_run: bool) -> dict[str, Any]:
        current = copy.deepcopy(self.cluster.get(res, namespace, name))
        options = json.loads(body) if body.strip() else {}
        if isinstance(options, dict) and "All" in (options.get("dryRun") or []):
            dry_run = True
        if not dry_run:
            self.cluster.resource_version += 1
            del self.cluster.objects[self.cluster._key(res, namespace, name)]
            self.cluster.record("DELETED", self.cluster._key(res, namespace, name), current)
        if res.kind != "Pod":
            details = {"name": name, "kind": res.plural, "uid": current["metadata"]["uid"]}
            if res.group:
                details["group"] = res.group
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": details}
        grace = options.get("gracePeriodSeconds") if isinstance(options, dict) else None
        if grace is None:
            grace = (current.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        meta = current["metadata"]
        if (current.get("spec") or {}).get("nodeName"):
            now = self.now or datetime.now(UTC)
            meta["deletionTimestamp"] = (now + timedelta(seconds=int(grace))).strftime(
                "%Y-%m-%dT%H:%M:%SZ")
            meta["deletionGracePeriodSeconds"] = int(grace)
        if not dry_run:
            meta["resourceVersion"] = str(self.cluster.resource_version)
        return current


def _log_instance(pod: dict[str, Any], container: str, name: str, previous: bool) -> bool:
    """Which stored log answers, as the kubelet chooses (validateContainerLogStatus): with
    previous, the last terminated instance; else the running or terminated one, else — a
    container waiting to restart (CrashLoopBackOff) — the last terminated instance again; a
    container waiting with no earlier instance has no log (400). True: the 'previous' log."""
    statuses = [s for group in ("initContainerStatuses", "containerStatuses")
                for s in (pod.get("status") or {}).get(group) or [] if s.get("name") == container]
    if previous or not statuses:
        return previous
    state, last = statuses[0].get("state") or {}, statuses[0].get("lastState") or {}
    if "running" in state or "terminated" in state:
        return False
    if "terminated" in last:
        return True
    reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
    raise _bad(f'container "{container}" in pod "{name}" is waiting to start: {reason}')


def _bearer_ok(header: str, token: str) -> bool:
    """`Bearer <token>`; the scheme is case-insensitive (RFC 7235), and the in-cluster loader
    of the Python client sends `bearer`."""
    scheme, _, value = header.partition(" ")
    return scheme.lower() == "bearer" and value.strip() == token


def _list_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class _Handler(BaseHTTPRequestHandler):
    api: FixtureKubeAPI
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        code, ctype, data = self.api.handle(self.command, self.path, headers, body)
        if not isinstance(data, bytes):
            from tests.servers.kube_watch import stream_watch

            stream_watch(self, data)
            return
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PATCH = do_DELETE = do_PUT = do_POST = _serve  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        return


@dataclass
class KubeAPIServer:
    url: str
    api: FixtureKubeAPI

    @property
    def requests(self) -> list[Recorded]:
        return self.api.requests

    @property
    def cluster(self) -> FixtureCluster:
        return self.api.cluster

    def kubeconfig(self, path: Path, *, namespace: str = "default",
                   context: str = "fixture") -> Path:
        """A kubeconfig file pointing at this server (token auth when it wants a token)."""
        return write_kubeconfig(path, self.url, token=self.api.token, namespace=namespace,
                                context=context)


def write_kubeconfig(path: Path, server: str, *, token: str | None = None,
                     namespace: str | None = "default", context: str = "fixture") -> Path:
    """A kubeconfig file for `server` (any URL: a dead port makes an unreachable cluster)."""
    user: dict[str, Any] = {"token": token} if token else {}
    ctx = {"cluster": "fixture", "user": "goodput",
           **({"namespace": namespace} if namespace else {})}
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": context,
           "clusters": [{"name": "fixture", "cluster": {"server": server}}],
           "users": [{"name": "goodput", "user": user}],
           "contexts": [{"name": context, "context": ctx}]}
    path.write_text(json.dumps(doc, indent=1))
    return path


@contextmanager
def running_kube_api(cluster: FixtureCluster, tls: tuple[Path, Path] | None = None,
                     **options: Any) -> Iterator[KubeAPIServer]:
    """The fixture API server over `cluster` on 127.0.0.1 at a free port; HTTPS with
    `tls` = (certificate, key) PEM files, as a real API server (in-cluster clients use it)."""
    api = FixtureKubeAPI(cluster, **options)
    handler = type("Handler", (_Handler,), {"api": api})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    host, port = server.server_address[:2]
    api.address = f"{host}:{port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield KubeAPIServer(f"{scheme}://{host}:{port}", api)
    finally:
        server.shutdown()
        server.server_close()


def self_signed_certificate(workdir: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by `openssl` (Debian's package, installed
    when absent), for the HTTPS server."""
    import subprocess

    from tests.servers.debian import ensure_packages

    openssl = ensure_packages(["openssl"], ["openssl"])["openssl"]
    cert, key = workdir / "apiserver.crt", workdir / "apiserver.key"
    subprocess.run([str(openssl), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True,
                   capture_output=True, timeout=60)
    return cert, key
