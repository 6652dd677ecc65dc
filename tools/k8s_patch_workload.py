"""Change one container of a Deployment or StatefulSet: command-line flags (such as vLLM's
--max-num-seqs) and resource limits/requests, as a strategic-merge patch. Runs only through the
approval gate; the preview shows the server's dry run as a diff of the pod template."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from goodput_agent.actions.kube import K8sName
from goodput_agent.actions.kube_workloads import Kind, apply, dry_run_diff, patch_text, read
from goodput_agent.actions.runner import ActionOutput
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class PatchWorkloadInput(BaseModel):
    namespace: K8sName = "default"
    kind: Kind = "Deployment"
    name: K8sName
    container: K8sName
    set_args: dict[str, str | None] = Field(default_factory=dict)  # flag -> value; None: drop
    limits: dict[str, str] = Field(default_factory=dict)  # e.g. {"memory": "64Gi"}
    requests: dict[str, str] = Field(default_factory=dict)


def new_args(old: list[str], changes: dict[str, str | None]) -> list[str]:
    """Set or drop `--flag value` / `--flag=value`; a flag not present is appended."""
    out = list(old)
    for flag, value in changes.items():
        i = next((k for k, a in enumerate(out) if a == flag or a.startswith(flag + "=")), None)
        if i is None:
            if value is not None:
                out += [flag, value]
            continue
        joined = out[i].startswith(flag + "=")
        width = 1 if joined or i + 1 >= len(out) or out[i + 1].startswith("--") else 2
        repl = [] if value is None else ([f"{flag}={value}"] if joined else [flag, value])
        out[i:i + width] = repl
    return out


def body(ctx: ToolContext, args: PatchWorkloadInput) -> dict[str, Any]:
    obj = read(ctx, args.kind, args.namespace, args.name)
    containers = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get(
        "containers") or []
    c = next((c for c in containers if c.get("name") == args.container), None)
    if c is None:
        raise ValueError(f"{args.kind}/{args.name} has no container {args.container!r}")
    patch: dict[str, Any] = {"name": args.container}
    if args.set_args:
        patch["args"] = new_args(c.get("args") or [], args.set_args)
    if args.limits or args.requests:
        patch["resources"] = {k: v for k, v in (("limits", args.limits),
                                                ("requests", args.requests)) if v}
    return {"spec": {"template": {"spec": {"containers": [patch]}}}}


class K8sPatchWorkload(MutatingTool[PatchWorkloadInput, ActionOutput]):
    name = "k8s_patch_workload"
    input_model = PatchWorkloadInput
    output_model = ActionOutput
    requires = ("kube",)
    timeout_s = 60.0

    def preview(self, ctx: ToolContext, args: PatchWorkloadInput) -> ToolPreview:
        b = body(ctx, args)
        return ToolPreview(command=patch_text(args.kind, args.namespace, args.name, b),
                           dry_run=dry_run_diff(ctx, args.kind, args.namespace, args.name, b),
                           notes=["changing the pod template rolls the pods out again"])

    def target(self, args: PatchWorkloadInput) -> ActionTarget:
        return ActionTarget(namespace=args.namespace, changes_config=True)

    def run(self, ctx: ToolContext, args: PatchWorkloadInput) -> ActionOutput:
        return apply(ctx, args.kind, args.namespace, args.name, body(ctx, args))


TOOL = K8sPatchWorkload()
