"""The Kubernetes watch source: failed Jobs, JobSets and PyTorchJobs, GPU pods that ended
OOMKilled / Error / Evicted, and GPU nodes going NotReady or tainted unhealthy
(k8s_incidents.py says what counts).

How it follows the API server, per resource kind (and per namespace when namespaces are given):
list once (paginated; the list's resourceVersion is the starting point), then each `poll` makes
one watch call per kind from the last resourceVersion seen, with `allowWatchBookmarks` and a
short `timeoutSeconds`, and returns what those streams carried. A bookmark moves the
resourceVersion without an object. A `410 Gone` — the HTTP status, or an ERROR event with code
410 inside the stream — means that version was compacted away: the kind is listed again. A
connection dropped mid-stream keeps every event read whole; the next poll resumes from the
last one.

Exactly once: the cursor (JSON) holds, per kind, the resourceVersion and the incidents already
emitted for each object still present (by uid: signature → key). An event that repeats a known
incident emits nothing; a re-list emits only what is not known and forgets objects that are
gone, so the cursor stays as small as the set of failed objects the cluster still keeps.
The first poll (no cursor) starts from now: what has already failed is remembered, not emitted
— unless `since` (a time) asks to emit what failed after it.

Transport: the official `kubernetes` client with the configuration goodput_agent/sources/k8s.py
builds (kubeconfig or in-cluster), raw JSON (`_preload_content=False`). Verbs: list and watch
only (deploy/kubernetes/watch.yaml grants exactly these).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from goodput_agent.sources.errors import SourceError
from goodput_agent.sources.k8s import K8sSource, _api_error
from goodput_agent.watch.k8s_incidents import (
    GPU_TAINT_PREFIXES,
    MAX_ENDS_PER_CONTAINER,
    Incident,
    job_incidents,
    node_incidents,
    pod_incidents,
)
from goodput_agent.watch.trigger import Poll, SourceDown, Trigger

log = structlog.get_logger(__name__)

CURSOR_VERSION = 1


@dataclass(frozen=True)
class Kind:
    plural: str
    group: str
    version: str
    namespaced: bool = True


KINDS = (Kind("jobs", "batch", "v1"), Kind("jobsets", "jobset.x-k8s.io", "v1alpha2"),
         Kind("pytorchjobs", "kubeflow.org", "v1"), Kind("pods", "", "v1"),
         Kind("nodes", "", "v1", namespaced=False))


@dataclass(frozen=True)
class Stream:
    kind: Kind
    namespace: str | None  # None: all namespaces (or a cluster-scoped kind)

    @property
    def id(self) -> str:
        return f"{self.kind.plural}@{self.namespace}" if self.namespace else self.kind.plural


class _Expired(Exception):
    """The resourceVersion was compacted away (410 Gone): list again."""


class K8sWatchSource:
    """A WatchSource over one cluster. `namespaces` empty: every namespace; `selector`: a label
    selector for the workloads and pods (nodes are all GPU nodes). A poll watches each kind in
    turn for up to `timeout_seconds` (the API server holds a watch open that long), so one
    poll takes at most kinds x timeout_seconds."""

    name = "kubernetes"

    def __init__(self, api_client: Any, *, namespaces: tuple[str, ...] = (), selector: str = "",
                 timeout_seconds: int = 2, since: datetime | None = None,
                 taint_prefixes: tuple[str, ...] = GPU_TAINT_PREFIXES,
                 max_ends_per_container: int = MAX_ENDS_PER_CONTAINER,
                 kinds: tuple[Kind, ...] = KINDS, request_timeout_s: float = 20.0):
        self.k8s = K8sSource(api_client, timeout_s=request_timeout_s)
        self.selector = selector
        self.timeout_seconds = timeout_seconds
        self.since = since
        self.taint_prefixes = taint_prefixes
        self.max_ends_per_container = max_ends_per_container
        self.streams = [Stream(k, ns) for k in kinds
                        for ns in ((namespaces or (None,)) if k.namespaced else (None,))]
        self.not_served: set[str] = set()  # kinds this cluster does not have (no CRD)
        self.drops = 0  # watch connections that broke mid-stream (resumed)
        self.relists = 0  # 410 Gone answers (listed again)

    @classmethod
    def connect(cls, *, kubeconfig: Any = None, context: str | None = None,
                in_cluster: bool | None = None, **options: Any) -> K8sWatchSource:
        """Kubeconfig or in-cluster, exactly as `goodput investigate --k8s-job` connects."""
        try:
            base = K8sSource.connect(kubeconfig=kubeconfig, context=context,
                                     in_cluster=in_cluster)
        except SourceError as exc:
            raise SourceDown(str(exc)) from None
        return cls(base.api, **options)

    # ---- the poll

    def poll(self, cursor: str | None) -> Poll:
        state = _decode(cursor)
        streams = state.setdefault("streams", {})
        triggers: list[Trigger] = []
        for stream in self.streams:
            if stream.id in self.not_served:
                continue
            new_stream = stream.id not in streams  # first poll, or a kind/namespace added
            st = streams.setdefault(stream.id, {"rv": None, "known": {}})
            try:
                if not st.get("rv"):
                    self._relist(stream, st, triggers, emit_after=self._first_emit(new_stream))
                    continue
                try:
                    self._watch(stream, st, triggers)
                except _Expired:
                    self.relists += 1
                    log.info("k8s_watch.expired", stream=stream.id, rv=st.get("rv"))
                    self._relist(stream, st, triggers, emit_after=None)
            except SourceError as exc:
                if exc.kind == "not_found":  # the CRD is not installed: nothing to watch
                    self.not_served.add(stream.id)
                    streams.pop(stream.id, None)
                    log.info("k8s_watch.not_served", stream=stream.id)
                    continue
                raise SourceDown(f"kubernetes {stream.id}: {exc.message}") from None
        state["v"] = CURSOR_VERSION
        return Poll(triggers=triggers, cursor=json.dumps(state, sort_keys=True,
                                                           separators=(",", ":")))

    def _first_emit(self, new_stream: bool) -> datetime | None:
        """A list emits incidents newer than this (None: every one not yet known). A stream
        the cursor has never seen starts from now (or `since` ago): what already failed is
        remembered, not emitted."""
        if not new_stream:
            return None
        return self.since or datetime.max.replace(tzinfo=UTC)

    # ---- list and watch

    def _call_args(self, stream: Stream) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        kind, ns = stream.kind, stream.namespace
        kwargs: dict[str, Any] = {}
        if self.selector and kind.plural != "nodes":
            kwargs["label_selector"] = self.selector
        core, custom = self.k8s.core, self.k8s.custom
        if kind.plural == "nodes":
            return core.list_node, (), kwargs
        if kind.plural == "pods":
            return (core.list_namespaced_pod, (ns,), kwargs) if ns else \
                (core.list_pod_for_all_namespaces, (), kwargs)
        if ns:
            return (custom.list_namespaced_custom_object,
                    (kind.group, kind.version, ns, kind.plural), kwargs)
        return custom.list_cluster_custom_object, (kind.group, kind.version, kind.plural), kwargs

    def _relist(self, stream: Stream, st: dict[str, Any], triggers: list[Trigger],
                emit_after: datetime | None) -> None:
        fn, args, kwargs = self._call_args(stream)
        what = f"list {stream.id}"
        old, fresh = st.get("known") or {}, {}
        token, rv = None, None
        while True:
            extra = {"_continue": token} if token else {}
            page = self.k8s._json(what, fn, *args, limit=self.k8s.page_size, **extra, **kwargs)
            meta = page.get("metadata") or {}
            rv = rv or meta.get("resourceVersion")
            for obj in page.get("items") or []:
                if isinstance(obj, dict):
                    self._observe(stream, obj, old, fresh, triggers, emit_after)
            token = meta.get("continue")
            if not token:
                break
        st["known"], st["rv"] = fresh, str(rv or "")

    def _watch(self, stream: Stream, st: dict[str, Any], triggers: list[Trigger]) -> None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        fn, args, kwargs = self._call_args(stream)
        try:
            resp = fn(*args, watch=True, resource_version=st["rv"], allow_watch_bookmarks=True,
                      timeout_seconds=self.timeout_seconds, _preload_content=False,
                      _request_timeout=(self.k8s.timeout_s, self.timeout_seconds
                                        + self.k8s.timeout_s), **kwargs)
        except ApiException as exc:
            if exc.status == 410:
                raise _Expired() from None
            raise _api_error(exc, f"watch {stream.id}") from None
        except (HTTPError, OSError) as exc:
            raise SourceError("kubernetes", f"API server at {self.k8s.where} unreachable: "
                              f"{exc}", f"watch {stream.id}") from None
        known = st.setdefault("known", {})
        try:
            for event in _events(resp):
                self._apply(stream, st, known, event, triggers)
        except (HTTPError, OSError) as exc:  # dropped mid-stream: resume from the last event
            self.drops += 1
            log.info("k8s_watch.dropped", stream=stream.id, rv=st.get("rv"), error=str(exc))
        finally:
            resp.close()  # a stream cut short must not go back to the pool half-read
            resp.release_conn()

    def _apply(self, stream: Stream, st: dict[str, Any], known: dict[str, Any],
               event: dict[str, Any], triggers: list[Trigger]) -> None:
        kind, obj = event.get("type"), event.get("object")
        if not isinstance(obj, dict):
            return
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Expired()
            raise SourceError("kubernetes", f"watch error {obj.get('code')}: "
                              f"{obj.get('message')}", f"watch {stream.id}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "DELETED":
            known.pop(str((obj.get("metadata") or {}).get("uid")), None)
        elif kind in ("ADDED", "MODIFIED"):
            self._observe(stream, obj, known, known, triggers, None)
        if rv:
            st["rv"] = str(rv)

    def _observe(self, stream: Stream, obj: dict[str, Any], old: dict[str, Any],
                 into: dict[str, Any], triggers: list[Trigger],
                 emit_after: datetime | None) -> None:
        """Record the object's incidents under its uid; emit those not known before."""
        uid = str((obj.get("metadata") or {}).get("uid"))
        before = old.get(uid) or {}
        now: dict[str, str] = {}
        for inc in self._incidents(stream, obj):
            if inc.signature in before:
                now[inc.signature] = before[inc.signature]
                continue
            now[inc.signature] = inc.trigger.key
            if emit_after is None or inc.trigger.occurred_at >= emit_after:
                triggers.append(inc.trigger)
        if now:
            into[uid] = now
        else:
            into.pop(uid, None)

    def _incidents(self, stream: Stream, obj: dict[str, Any]) -> list[Incident]:
        seen_at = datetime.now(UTC)
        plural = stream.kind.plural
        if plural == "pods":
            return pod_incidents(obj, seen_at, self.max_ends_per_container)
        if plural == "nodes":
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            return node_incidents(obj, seen_at, rv, self.taint_prefixes)
        return job_incidents(plural, obj, seen_at)


def _events(resp: Any) -> Iterator[dict[str, Any]]:
    """The watch stream's events: one JSON object per line, whatever the chunking."""
    buffer = b""
    for chunk in resp.stream(64 * 1024, decode_content=True):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield _event(line)
    if buffer.strip():
        yield _event(buffer)


def _event(line: bytes) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError:
        raise SourceError("kubernetes", "a watch event is not JSON") from None
    return event if isinstance(event, dict) else {}


def _decode(cursor: str | None) -> dict[str, Any]:
    if not cursor:
        return {}
    try:
        state = json.loads(cursor)
    except ValueError:
        log.warning("k8s_watch.bad_cursor")
        return {}
    if not isinstance(state, dict) or state.get("v") != CURSOR_VERSION:
        return {}
    return state
