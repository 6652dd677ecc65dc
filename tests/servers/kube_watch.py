"""Watch for the FIXTURE API server (tests/servers/kube_api.py), as the real one answers
`GET <list path>?watch=true&resourceVersion=R&allowWatchBookmarks=true&timeoutSeconds=T`:

- 200 with `Transfer-Encoding: chunked`, one JSON object per line — `{"type": "ADDED" |
  "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR", "object": ...}` — for every change after R
  to the resource (filtered by namespace, labelSelector and fieldSelector), in
  resourceVersion order; lines are cut across chunk boundaries on purpose, as a client must
  not assume one event per chunk;
- with allowWatchBookmarks, a BOOKMARK (an object of the kind holding only
  metadata.resourceVersion) once the stream has caught up;
- R older than the cluster's compaction (`FixtureCluster.compact()`): `410 Gone` — as an HTTP
  410 Status, or as a 200 whose only event is `{"type": "ERROR", "object": <Status code 410,
  reason Expired>}` (the apiserver's watch cache answers the latter), per `api.expired_as`;
- R empty or "0": the current objects as synthetic ADDED events first ("any" version).

Where it differs from the real server, on purpose: the stream ends as soon as it has caught up
(as if timeoutSeconds had run out at once), so tests do not wait on the clock. Faults: each
`WatchFault` queued on `api.watch_faults` is met by the next watch of its resource —
`drop_after=N` sends N events, then half of the next line, then closes the connection with the
chunk unfinished (a dropped connection mid-stream).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from tests.servers.kube_api import ApiError, FixtureKubeAPI, Resource, field_matcher, label_matcher

CHUNK = 97  # bytes per chunk: small and odd, so lines straddle chunks


@dataclass
class WatchFault:
    plural: str  # the resource whose next watch meets it: "pods", "jobs", ...
    drop_after: int = 0  # events sent before the connection drops


@dataclass
class WatchPlan:
    events: list[dict[str, Any]] = field(default_factory=list)
    drop_after: int | None = None


def _expired(requested: int, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


def watch_plan(api: FixtureKubeAPI, res: Resource, namespace: str | None,
               query: dict[str, list[str]]) -> WatchPlan:
    """What a watch request is answered with (computed under the server's lock)."""
    cluster = api.cluster
    labels = query.get("labelSelector", [""])[0]
    fields = query.get("fieldSelector", [""])[0]
    lmatch = label_matcher(labels) if labels else None
    fmatch = field_matcher(res, fields) if fields else None

    def wanted(key: tuple[str, str, str], obj: dict[str, Any]) -> bool:
        if key[0] != res.plural + "." + res.group:
            return False
        if namespace is not None and key[1] != namespace:
            return False
        if lmatch and not lmatch((obj.get("metadata") or {}).get("labels") or {}):
            return False
        return not (fmatch and not fmatch(obj))

    raw_rv = query.get("resourceVersion", [""])[0]
    plan = WatchPlan()
    if raw_rv in ("", "0"):
        plan.events = [{"type": "ADDED", "object": copy.deepcopy(o)}
                       for o in cluster.items(res, namespace) if wanted(
                           cluster._key(res, namespace or o["metadata"].get("namespace"),
                                        o["metadata"]["name"]), o)]
        since = cluster.resource_version
    else:
        try:
            since = int(raw_rv)
        except ValueError:
            raise ApiError(400, "BadRequest", f'invalid resource version: "{raw_rv}"') from None
        if since < cluster.compacted_rv:
            error = _expired(since, cluster.compacted_rv)
            if api.expired_as == "http":
                raise error
            plan.events = [{"type": "ERROR", "object": error.status()}]
            return plan
        plan.events = [{"type": kind, "object": copy.deepcopy(obj)}
                       for rv, kind, key, obj in cluster.history
                       if rv > since and wanted(key, obj)]
    if query.get("allowWatchBookmarks", ["false"])[0] in ("true", "1"):
        plan.events.append({"type": "BOOKMARK", "object": {
            "kind": res.kind, "apiVersion": res.api_version,
            "metadata": {"resourceVersion": str(cluster.resource_version)}}})
    for k, fault in enumerate(api.watch_faults):
        if fault.plural == res.plural:
            plan.drop_after = api.watch_faults.pop(k).drop_after
            break
    return plan


def stream_watch(handler: Any, plan: WatchPlan) -> None:
    """Write the plan as the apiserver does: chunked JSON lines (or drop mid-stream)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    lines = [json.dumps(e).encode() + b"\n" for e in plan.events]
    if plan.drop_after is not None:
        cut = lines[plan.drop_after] if plan.drop_after < len(lines) else b'{"type": "MOD'
        body = b"".join(lines[:plan.drop_after]) + cut[:max(1, len(cut) // 2)]
        _write_chunks(handler, body)
        handler.wfile.write(b"%x\r\n" % 4096 + b'{"ty')  # a chunk promised, never finished
        handler.wfile.flush()
        handler.close_connection = True
        return
    _write_chunks(handler, b"".join(lines))
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def _write_chunks(handler: Any, body: bytes) -> None:
    for start in range(0, len(body), CHUNK):
        piece = body[start:start + CHUNK]
        handler.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
    handler.wfile.flush()
