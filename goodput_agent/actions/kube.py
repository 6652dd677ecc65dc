"""Shared mechanics of the Kubernetes mutating tools (kubernetes client): the API objects,
server-side dry runs and their diff, and API errors as results rather than crashes."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Annotated, Any

import yaml
from pydantic import StringConstraints

from goodput_agent.actions.runner import ActionOutput
from goodput_agent.actions.textdiff import unified
from goodput_agent.toolkit import ToolContext, ToolUnavailable

# RFC 1123 names (nodes, pods, namespaces, workloads)
K8sName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
                                           max_length=253)]
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


def client(ctx: ToolContext) -> Any:
    if ctx.kube is None:
        raise ToolUnavailable("no Kubernetes API to act on (a kubeconfig or in-cluster config)")
    return ctx.kube


def core(ctx: ToolContext) -> Any:
    from kubernetes.client import CoreV1Api

    return CoreV1Api(client(ctx))


def apps(ctx: ToolContext) -> Any:
    from kubernetes.client import AppsV1Api

    return AppsV1Api(client(ctx))


def plain(ctx: ToolContext, obj: Any) -> Any:
    """An API object as plain JSON data (what the server sent)."""
    return client(ctx).sanitize_for_serialization(obj)


def call_text(method: str, path: str, body: Any = None, content_type: str | None = None) -> str:
    head = f"{method} {path}"
    if content_type:
        head += f" (Content-Type: {content_type})"
    return head + (f" {json.dumps(body, sort_keys=True)}" if body is not None else "")


def diff(before: Any, after: Any, label: str) -> str:
    text = unified(yaml.safe_dump(before, sort_keys=True), yaml.safe_dump(after, sort_keys=True),
                   f"{label} (now)", f"{label} (server dry run)")
    return text or "(the server's dry run changes nothing)"


def api_result(ctx: ToolContext, command: str, call: Callable[[], Any]) -> ActionOutput:
    """Run one API call; an API error is a failed result with the server's answer."""
    from kubernetes.client.exceptions import ApiException

    try:
        response = call()
    except ApiException as exc:
        body: Any = exc.body
        with contextlib.suppress(TypeError, ValueError):
            body = json.loads(exc.body) if exc.body else None
        return ActionOutput(ok=False, command=command,
                            response={"status": exc.status, "reason": exc.reason, "body": body})
    return ActionOutput(ok=True, command=command, response=plain(ctx, response))
