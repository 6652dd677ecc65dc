"""Delete one pod so that its controller starts a new one (a restart under the controller).
Runs only through the approval gate; the preview shows the server's dry run."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.actions.kube import K8sName
from goodput_agent.actions.kube_pods import delete_pods, delete_text, describe_dry_run
from goodput_agent.actions.runner import ActionOutput
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class DeletePodInput(BaseModel):
    namespace: K8sName = "default"
    pod: K8sName


class K8sDeletePod(MutatingTool[DeletePodInput, ActionOutput]):
    name = "k8s_delete_pod"
    input_model = DeletePodInput
    output_model = ActionOutput
    requires = ("kube",)
    timeout_s = 60.0

    def preview(self, ctx: ToolContext, args: DeletePodInput) -> ToolPreview:
        text, notes = describe_dry_run(ctx, args.namespace, [args.pod])
        return ToolPreview(command=delete_text(args.namespace, args.pod), dry_run=text,
                           notes=notes)

    def target(self, args: DeletePodInput) -> ActionTarget:
        return ActionTarget(namespace=args.namespace, retries=True)

    def run(self, ctx: ToolContext, args: DeletePodInput) -> ActionOutput:
        return delete_pods(ctx, args.namespace, [args.pod])


TOOL = K8sDeletePod()
