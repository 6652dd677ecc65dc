"""Deployments and StatefulSets: read, patch (strategic merge) and dry-run patch."""

from __future__ import annotations

from typing import Any, Literal

from goodput_agent.actions.kube import STRATEGIC, api_result, apps, call_text, diff, plain
from goodput_agent.actions.runner import ActionOutput
from goodput_agent.toolkit import ToolContext

Kind = Literal["Deployment", "StatefulSet"]
_PLURAL = {"Deployment": "deployments", "StatefulSet": "statefulsets"}
_FN = {"Deployment": "deployment", "StatefulSet": "stateful_set"}


def path(kind: Kind, namespace: str, name: str) -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/{_PLURAL[kind]}/{name}"


def read(ctx: ToolContext, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
    fn = getattr(apps(ctx), f"read_namespaced_{_FN[kind]}")
    return plain(ctx, fn(name, namespace))


def patch(ctx: ToolContext, kind: Kind, namespace: str, name: str, body: dict[str, Any],
          dry_run: bool = False) -> Any:
    fn = getattr(apps(ctx), f"patch_namespaced_{_FN[kind]}")
    extra = {"dry_run": "All"} if dry_run else {}
    return fn(name, namespace, body, _content_type=STRATEGIC, **extra)


def patch_text(kind: Kind, namespace: str, name: str, body: dict[str, Any]) -> str:
    return call_text("PATCH", path(kind, namespace, name), body, STRATEGIC)


def template(obj: dict[str, Any]) -> dict[str, Any]:
    return (obj.get("spec") or {}).get("template") or {}


def dry_run_diff(ctx: ToolContext, kind: Kind, namespace: str, name: str,
                 body: dict[str, Any]) -> str:
    """The pod template now against the server's dry run of the patch."""
    before = template(read(ctx, kind, namespace, name))
    after = template(plain(ctx, patch(ctx, kind, namespace, name, body, dry_run=True)))
    return diff(before, after, f"{kind.lower()}/{name} spec.template")


def apply(ctx: ToolContext, kind: Kind, namespace: str, name: str,
          body: dict[str, Any]) -> ActionOutput:
    return api_result(ctx, patch_text(kind, namespace, name, body),
                      lambda: patch(ctx, kind, namespace, name, body))
