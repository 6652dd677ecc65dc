"""Live Kubernetes source (read-only): the official `kubernetes` client, kubeconfig or in-cluster.

What it reads, as the plain JSON the API server sent (no model round trip, so what it writes
into a bundle is what `kubectl get -o json` would have shown):
- the workload named NS/NAME — a batch/v1 Job, a JobSet (jobset.x-k8s.io), a Kubeflow
  PyTorchJob (kubeflow.org), an apps/v1 Deployment or StatefulSet — and its pods, by the label
  selector its controller sets (the Job's or Deployment's own `spec.selector`, else
  `batch.kubernetes.io/job-name` / `job-name`, `jobset.sigs.k8s.io/jobset-name`,
  `training.kubeflow.org/job-name`);
- events whose `involvedObject` is one of those pods or the workload, and events about the
  pods' nodes; the nodes (conditions, taints, allocatable `nvidia.com/gpu`);
- container logs, current and `previous=True`, bounded by tail lines, a since-time and bytes.

Every list is paginated (`limit` + `continue`) and capped (`max_items`); every call has a
timeout. API errors become the typed errors of goodput_agent.sources.errors: 401/403 →
Forbidden, 404 → NotFound, a connection failure → Unreachable, a read timeout → TimedOut.
The verbs and resources used here are exactly those in deploy/kubernetes/rbac.yaml (a test
compares them).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from goodput_agent.sources.errors import Forbidden, NotFound, SourceError, TimedOut, Unreachable

log = structlog.get_logger(__name__)

SOURCE = "kubernetes"
SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
PAGE_SIZE = 500
MAX_ITEMS = 5000
LOG_TAIL_LINES = 20_000
PER_OBJECT_EVENTS = 16
LOG_LIMIT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class WorkloadKind:
    kind: str
    group: str
    version: str
    plural: str
    labels: tuple[str, ...]  # pod labels naming the workload, preferred first


WORKLOAD_KINDS = (
    WorkloadKind("Job", "batch", "v1", "jobs", ("batch.kubernetes.io/job-name", "job-name")),
    WorkloadKind("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets",
                 ("jobset.sigs.k8s.io/jobset-name",)),
    WorkloadKind("PyTorchJob", "kubeflow.org", "v1", "pytorchjobs",
                 ("training.kubeflow.org/job-name", "pytorch-job-name", "job-name")),
    WorkloadKind("Deployment", "apps", "v1", "deployments", ()),
    WorkloadKind("StatefulSet", "apps", "v1", "statefulsets", ()),
)
_KINDS = {k.kind.lower(): k for k in WORKLOAD_KINDS}


@dataclass
class Workload:
    kind: str
    namespace: str
    name: str
    selector: str
    object: dict[str, Any] = field(default_factory=dict)


def selector_text(selector: dict[str, Any] | None) -> str:
    """A LabelSelector object (matchLabels, matchExpressions) as the query-string form."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def split_ref(ref: str, default_namespace: str) -> tuple[str, str | None, str]:
    """'NS/NAME', 'NAME' or 'NS/KIND/NAME' → (namespace, kind or None, name)."""
    parts = [p for p in ref.strip().split("/") if p]
    if len(parts) == 1:
        return default_namespace, None, parts[0]
    if len(parts) == 2:
        if parts[0].lower() in _KINDS:
            return default_namespace, parts[0].lower(), parts[1]
        return parts[0], None, parts[1]
    if len(parts) == 3 and parts[1].lower() in _KINDS:
        return parts[0], parts[1].lower(), parts[2]
    raise ValueError(f"{ref!r} is not NAMESPACE/NAME (or NAMESPACE/KIND/NAME with KIND one of "
                     f"{', '.join(k.kind for k in WORKLOAD_KINDS)})")


def _api_error(exc: Any, what: str) -> SourceError:
    """An ApiException as the typed error, with the server's own Status message."""
    message = ""
    try:
        message = str(json.loads(exc.body).get("message") or "")
    except (TypeError, ValueError, AttributeError):
        message = ""
    message = message or str(exc.reason or "").strip()
    status = int(exc.status or 0)
    if status in (401, 403):
        why = "credentials rejected (401 Unauthorized)" if status == 401 else message
        return Forbidden(SOURCE, why, what)
    if status == 404:
        return NotFound(SOURCE, message or "not found", what)
    if status in (408, 504):
        return TimedOut(SOURCE, message or "timed out", what)
    return SourceError(SOURCE, f"HTTP {status} {message}".strip(), what)


class K8sSource:
    """Reads one cluster. Build it with `connect()` (kubeconfig / in-cluster) or around an
    existing kubernetes ApiClient."""

    def __init__(self, api_client: Any, *, namespace: str = "default", where: str = "",
                 timeout_s: float = 20.0, page_size: int = PAGE_SIZE,
                 max_items: int = MAX_ITEMS):
        from kubernetes import client

        self.api = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.namespace = namespace
        self.where = where or str(getattr(api_client.configuration, "host", ""))
        self.timeout_s = timeout_s
        self.page_size = page_size
        self.max_items = max_items
        self.truncated: list[str] = []  # lists that hit max_items

    # ---- construction

    @classmethod
    def connect(cls, *, kubeconfig: Path | None = None, context: str | None = None,
                namespace: str | None = None, in_cluster: bool | None = None,
                **options: Any) -> K8sSource:
        """In-cluster config when asked (or when no kubeconfig is given and the pod's service
        account is mounted), else the kubeconfig file (`$KUBECONFIG`, ~/.kube/config)."""
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        try:
            if in_cluster or (in_cluster is None and kubeconfig is None and SA_NAMESPACE.exists()
                              and not context):
                cfg = client.Configuration()
                config.load_incluster_config(client_configuration=cfg)
                ns = namespace or SA_NAMESPACE.read_text().strip() or "default"
                where = f"in-cluster ({cfg.host})"
            else:
                cfg = client.Configuration()
                config.load_kube_config(config_file=str(kubeconfig) if kubeconfig else None,
                                        context=context, client_configuration=cfg)
                _, active = config.list_kube_config_contexts(
                    config_file=str(kubeconfig) if kubeconfig else None)
                if context:
                    contexts, _ = config.list_kube_config_contexts(
                        config_file=str(kubeconfig) if kubeconfig else None)
                    active = next((c for c in contexts if c.get("name") == context), active)
                ns = namespace or (active or {}).get("context", {}).get("namespace") or \
                    "default"
                where = f"kubeconfig {kubeconfig or '~/.kube/config'} context " \
                        f"{(active or {}).get('name', '?')} ({cfg.host})"
        except (ConfigException, OSError) as exc:
            raise Unreachable(SOURCE, f"no usable configuration: {exc}") from None
        cfg.retries = 1  # a dead server costs one retry, not urllib3's three
        return cls(client.ApiClient(cfg), namespace=ns, where=where, **options)

    # ---- transport

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One API call: raw JSON (or text for logs), typed errors."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError
        from urllib3.exceptions import TimeoutError as Urllib3Timeout

        try:
            resp = fn(*args, _preload_content=False, _request_timeout=self.timeout_s, **kwargs)
            data = resp.data
        except ApiException as exc:
            raise _api_error(exc, what) from None
        except NewConnectionError as exc:
            raise Unreachable(SOURCE, f"API server at {self.where} unreachable: "
                              f"{_reason(exc)}", what) from None
        except Urllib3Timeout:
            raise TimedOut(SOURCE, f"API server at {self.where} gave no answer within "
                           f"{self.timeout_s:g} s", what) from None
        except MaxRetryError as exc:
            # urllib3 2 makes NewConnectionError a ConnectTimeoutError: test it first
            if isinstance(exc.reason, Urllib3Timeout) and \
                    not isinstance(exc.reason, NewConnectionError):
                raise TimedOut(SOURCE, f"API server at {self.where} gave no answer within "
                               f"{self.timeout_s:g} s", what) from None
            raise Unreachable(SOURCE, f"API server at {self.where} unreachable: "
                              f"{_reason(exc.reason)}", what) from None
        except (ProtocolError, OSError) as exc:
            raise Unreachable(SOURCE, f"API server at {self.where} unreachable: {exc}",
                              what) from None
        return data

    def _json(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        data = self._call(what, fn, *args, **kwargs)
        try:
            doc = json.loads(data)
        except ValueError:
            raise SourceError(SOURCE, "the answer is not JSON", what) from None
        if not isinstance(doc, dict):
            raise SourceError(SOURCE, "the answer is not a JSON object", what)
        return doc

    def _list(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """Every item of a list, page by page (limit + continue), at most max_items."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            extra = {"_continue": token} if token else {}
            page = self._json(what, fn, *args, limit=self.page_size, **extra, **kwargs)
            items.extend(i for i in page.get("items") or [] if isinstance(i, dict))
            token = (page.get("metadata") or {}).get("continue") or None
            if len(items) >= self.max_items:
                if token or len(items) > self.max_items:
                    self.truncated.append(f"{what}: first {self.max_items} items only")
                return items[:self.max_items]
            if not token:
                return items

    # ---- workloads and pods

    def workload(self, namespace: str, name: str, kind: str | None = None) -> Workload:
        """The Job, JobSet, PyTorchJob, Deployment or StatefulSet called `name` (the first found
        in that order, or the given kind) and the label selector of its pods."""
        kinds = [_KINDS[kind.lower()]] if kind else list(WORKLOAD_KINDS)
        missing, refused = [], []
        for wk in kinds:
            what = f"get {wk.plural}.{wk.group} {namespace}/{name}"
            try:
                obj = self._json(what, self.custom.get_namespaced_custom_object, wk.group,
                                 wk.version, namespace, wk.plural, name)
            except NotFound:
                missing.append(wk.kind)
                continue
            except Forbidden as exc:  # this kind may not be read: try the others
                refused.append(exc)
                continue
            selector = selector_text((obj.get("spec") or {}).get("selector"))
            if not selector and wk.labels:
                selector = f"{wk.labels[0]}={name}"
            if not selector:
                raise SourceError(SOURCE, f"{wk.kind} {namespace}/{name} has no "
                                  "spec.selector", what)
            return Workload(wk.kind, namespace, name, selector, obj)
        if refused:  # not found where we may look; maybe where we may not
            raise refused[0]
        raise NotFound(SOURCE, f"no {' or '.join(missing)} named {name} in namespace "
                       f"{namespace}")

    def workload_pods(self, wl: Workload) -> list[dict[str, Any]]:
        """The workload's pods by its selector; for a job kind whose selector finds nothing,
        by the other labels its controller versions set."""
        pods = self.pods(wl.namespace, wl.selector)
        wk = _KINDS[wl.kind.lower()]
        for label in wk.labels:
            if pods:
                break
            if wl.selector != f"{label}={wl.name}":
                pods = self.pods(wl.namespace, f"{label}={wl.name}")
        return pods

    def pods(self, namespace: str, selector: str = "") -> list[dict[str, Any]]:
        return self._list(f"list pods -n {namespace} -l {selector}",
                          self.core.list_namespaced_pod, namespace, label_selector=selector)

    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(f"get pod {namespace}/{name}", self.core.read_namespaced_pod, name,
                          namespace)

    def object(self, group: str, version: str, plural: str, namespace: str,
               name: str) -> dict[str, Any]:
        """One namespaced object of any kind (a ReplicaSet, a Deployment), as the server sent it."""
        return self._json(f"get {plural}.{group} {namespace}/{name}",
                          self.custom.get_namespaced_custom_object, group, version, namespace,
                          plural, name)

    # ---- events and nodes

    def events(self, namespace: str, involved: set[tuple[str, str]],
               nodes: Collection[str] = ()) -> list[dict[str, Any]]:
        """Events in `namespace` whose involvedObject (kind, name) is in `involved`, and
        events about `nodes` in any namespace. Up to PER_OBJECT_EVENTS objects are asked
        one by one (a field selector: the server filters); more, and the namespace's events
        are listed once and filtered here."""
        if len(involved) <= PER_OBJECT_EVENTS:
            out = []
            for kind, name in sorted(involved):
                out += self._list(f"list events -n {namespace} involvedObject={kind}/{name}",
                                  self.core.list_namespaced_event, namespace,
                                  field_selector=f"involvedObject.kind={kind},"
                                                 f"involvedObject.name={name}")
        else:
            out = [e for e in self._list(f"list events -n {namespace}",
                                         self.core.list_namespaced_event, namespace)
                   if (_inv(e).get("kind"), _inv(e).get("name")) in involved]
        seen = {(e.get("metadata") or {}).get("uid") for e in out}
        for node in sorted(nodes):
            for e in self._list(f"list events --all-namespaces involvedObject=Node/{node}",
                                self.core.list_event_for_all_namespaces,
                                field_selector=f"involvedObject.kind=Node,"
                                               f"involvedObject.name={node}"):
                if (e.get("metadata") or {}).get("uid") not in seen:
                    out.append(e)
        return out

    def nodes(self, names: set[str]) -> list[dict[str, Any]]:
        """The named nodes (one get each; a node gone from the cluster is skipped)."""
        out = []
        for name in sorted(names):
            try:
                out.append(self._json(f"get node {name}", self.core.read_node, name))
            except NotFound:
                log.info("k8s.node_gone", node=name)
        return out

    # ---- logs

    def log(self, namespace: str, pod: str, container: str, *, previous: bool = False,
            tail_lines: int | None = LOG_TAIL_LINES, since_seconds: int | None = None,
            limit_bytes: int = LOG_LIMIT_BYTES) -> str:
        """A container's log with the kubelet's timestamps (`--timestamps`), bounded."""
        kwargs: dict[str, Any] = {"container": container, "timestamps": True,
                                  "limit_bytes": limit_bytes}
        if previous:
            kwargs["previous"] = True
        if tail_lines:
            kwargs["tail_lines"] = tail_lines
        if since_seconds:
            kwargs["since_seconds"] = since_seconds
        what = f"logs {namespace}/{pod} -c {container}{' --previous' if previous else ''}"
        data = self._call(what, self.core.read_namespaced_pod_log, pod, namespace, **kwargs)
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


def _reason(reason: Any) -> str:
    """urllib3's connection error without its object address."""
    text = str(reason)
    return text.split(">: ", 1)[-1] if ">: " in text else text


def _inv(event: dict[str, Any]) -> dict[str, Any]:
    obj = event.get("involvedObject") or event.get("regarding")
    return obj if isinstance(obj, dict) else {}


def pod_nodes(pods: list[dict[str, Any]]) -> set[str]:
    return {n for p in pods if (n := (p.get("spec") or {}).get("nodeName"))}


def containers_with_logs(pod: dict[str, Any]) -> list[tuple[str, bool]]:
    """(container, has a distinct previous log) for each container with a log, as the kubelet
    serves them: a running or terminated container's log is its own, and `previous` is the
    instance before it (lastState.terminated); a container waiting to restart
    (CrashLoopBackOff) has only its last run's log, served as the current one (asking for
    --previous gives the same run); a container that never started has none."""
    out = []
    statuses = {s.get("name"): s for s in (pod.get("status") or {}).get("containerStatuses")
                or [] if isinstance(s, dict)}
    for c in (pod.get("spec") or {}).get("containers") or []:
        st = statuses.get(c.get("name"))
        if st is None:  # no status reported: ask, the server says what it has
            out.append((str(c.get("name")), False))
            continue
        state, last = st.get("state") or {}, st.get("lastState") or {}
        live = "running" in state or "terminated" in state
        if live or "terminated" in last:
            out.append((str(c.get("name")), live and "terminated" in last))
    return out
