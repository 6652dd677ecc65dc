"""Deleting pods so their controller recreates them: one pod, or all pods of a job."""

from __future__ import annotations

from typing import Any

from goodput_agent.actions.kube import api_result, call_text, core, plain
from goodput_agent.actions.runner import ActionOutput
from goodput_agent.toolkit import ToolContext


def delete_text(namespace: str, pod: str) -> str:
    return call_text("DELETE", f"/api/v1/namespaces/{namespace}/pods/{pod}")


def describe_dry_run(ctx: ToolContext, namespace: str, pods: list[str]) -> tuple[str, list[str]]:
    """Ask the server to dry-run each delete; say where each pod runs and who recreates it."""
    api = core(ctx)
    lines, notes = [], []
    for name in pods:
        pod = api.read_namespaced_pod(name, namespace)
        api.delete_namespaced_pod(name, namespace, dry_run="All")
        owners = [f"{o.kind}/{o.name}" for o in (pod.metadata.owner_references or [])]
        lines.append(f"- pod/{name} (node {pod.spec.node_name or '-'}, phase "
                     f"{pod.status.phase if pod.status else '-'}): delete accepted by the server's "
                     f"dry run; recreated by {', '.join(owners) or 'NOTHING'}")
        if not owners:
            notes.append(f"pod/{name} has no controller: once deleted it does not come back")
    return "\n".join(lines) or "(no pods match)", notes


def delete_pods(ctx: ToolContext, namespace: str, pods: list[str]) -> ActionOutput:
    outs = [api_result(ctx, delete_text(namespace, p),
                       lambda p=p: core(ctx).delete_namespaced_pod(p, namespace)) for p in pods]
    response: list[Any] = [o.response for o in outs]
    return ActionOutput(ok=bool(outs) and all(o.ok for o in outs),
                        command="; ".join(o.command for o in outs) or "(no pods)",
                        response=response)


def job_pods(ctx: ToolContext, namespace: str, selector: str) -> list[str]:
    items = core(ctx).list_namespaced_pod(namespace, label_selector=selector).items
    return sorted(p.metadata.name for p in items)


def _of_job(pod: Any, job: str) -> bool:
    labels = pod.metadata.labels or {}
    owners = pod.metadata.owner_references or []
    return labels.get("job-name") == job or any(o.kind == "Job" and o.name == job
                                                for o in owners)


def foreign_pods(ctx: ToolContext, namespace: str, selector: str, job: str) -> list[str]:
    """Pods a selector matches that belong to no pod of `job`: a selector wider than the job
    would delete other workloads' pods under an approval given for this one."""
    items = core(ctx).list_namespaced_pod(namespace, label_selector=selector).items
    return sorted(p.metadata.name for p in items if not _of_job(p, job))


__all__ = ["foreign_pods", "delete_pods", "delete_text", "describe_dry_run", "job_pods",
           "plain"]
