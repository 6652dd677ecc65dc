"""Restart a job's pods elsewhere: delete the pods its controller owns (label selector,
default `job-name=<job>`), after the faulty nodes are cordoned. Runs only through the approval
gate; the preview lists the pods and the server's dry run of each delete."""

from __future__ import annotations

from pydantic import BaseModel, Field

from goodput_agent.actions.kube import K8sName
from goodput_agent.actions.kube_pods import (
    delete_pods,
    delete_text,
    describe_dry_run,
    foreign_pods,
    job_pods,
)
from goodput_agent.actions.runner import ActionOutput
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class RestartJobPodsInput(BaseModel):
    job: K8sName
    namespace: K8sName = "default"
    selector: str | None = Field(None, max_length=300)  # default: job-name=<job>
    avoid_nodes: list[K8sName] = Field(default_factory=list)  # must be cordoned first
    resume_from_checkpoint: bool = False  # recorded only


def selector(args: RestartJobPodsInput) -> str:
    return args.selector or f"job-name={args.job}"


class K8sRestartJobPods(MutatingTool[RestartJobPodsInput, ActionOutput]):
    name = "k8s_restart_job_pods"
    input_model = RestartJobPodsInput
    output_model = ActionOutput
    requires = ("kube",)
    timeout_s = 120.0

    def preview(self, ctx: ToolContext, args: RestartJobPodsInput) -> ToolPreview:
        pods = job_pods(ctx, args.namespace, selector(args))
        text, notes = describe_dry_run(ctx, args.namespace, pods)
        command = "; ".join(delete_text(args.namespace, p) for p in pods)
        if args.avoid_nodes:
            notes.append(f"new pods avoid {', '.join(args.avoid_nodes)} only if cordoned")
        return ToolPreview(command=command or f"(no pods match {selector(args)})", dry_run=text,
                           notes=notes)

    def target(self, args: RestartJobPodsInput) -> ActionTarget:
        return ActionTarget(namespace=args.namespace, job=args.job, retries=True)

    def live_check(self, ctx: ToolContext, args: RestartJobPodsInput) -> list[str]:
        foreign = foreign_pods(ctx, args.namespace, selector(args), args.job)
        if not foreign:
            return []
        return [f"selector {selector(args)!r} matches {len(foreign)} pod(s) outside job "
                f"{args.job}: {', '.join(foreign[:20])}{' …' if len(foreign) > 20 else ''}"]

    def run(self, ctx: ToolContext, args: RestartJobPodsInput) -> ActionOutput:
        return delete_pods(ctx, args.namespace, job_pods(ctx, args.namespace, selector(args)))


TOOL = K8sRestartJobPods()
