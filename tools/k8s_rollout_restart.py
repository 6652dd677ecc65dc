"""Restart a Deployment's or StatefulSet's pods the way `kubectl rollout restart` does: stamp
the pod template with kubectl.kubernetes.io/restartedAt. Runs only through the approval gate;
the preview shows the server's dry run as a diff of the pod template."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from goodput_agent.actions.kube import K8sName
from goodput_agent.actions.kube_workloads import Kind, apply, dry_run_diff, patch_text
from goodput_agent.actions.runner import ActionOutput
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview

ANNOTATION = "kubectl.kubernetes.io/restartedAt"


class RolloutRestartInput(BaseModel):
    namespace: K8sName = "default"
    kind: Kind = "Deployment"
    name: K8sName


def body() -> dict[str, Any]:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"spec": {"template": {"metadata": {"annotations": {ANNOTATION: stamp}}}}}


class K8sRolloutRestart(MutatingTool[RolloutRestartInput, ActionOutput]):
    name = "k8s_rollout_restart"
    input_model = RolloutRestartInput
    output_model = ActionOutput
    requires = ("kube",)
    timeout_s = 60.0

    def preview(self, ctx: ToolContext, args: RolloutRestartInput) -> ToolPreview:
        b = body()
        return ToolPreview(command=patch_text(args.kind, args.namespace, args.name, b),
                           dry_run=dry_run_diff(ctx, args.kind, args.namespace, args.name, b),
                           notes=["the time stamp is taken again when it runs"])

    def target(self, args: RolloutRestartInput) -> ActionTarget:
        return ActionTarget(namespace=args.namespace, retries=True)

    def run(self, ctx: ToolContext, args: RolloutRestartInput) -> ActionOutput:
        return apply(ctx, args.kind, args.namespace, args.name, body())


TOOL = K8sRolloutRestart()
