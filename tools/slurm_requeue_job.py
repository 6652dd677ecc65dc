"""Rerun a Slurm batch job from its script, keeping its id, with nodes excluded.

`scontrol requeue` puts the job back to PENDING with a begin time about two minutes ahead;
`scontrol update JobId=… ExcNodeList=…` keeps it off the faulty nodes and `StartTime=now` lets
it start at once. Runs only through the approval gate."""

from __future__ import annotations

from pydantic import BaseModel, Field

from goodput_agent.actions.runner import ActionOutput, command_line, run_all
from goodput_agent.actions.slurm_args import JobId, NodeName, all_hosts, slurm_hostnames
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class RequeueInput(BaseModel):
    job: JobId
    exclude: list[NodeName] = Field(default_factory=list)
    resume_from_checkpoint: bool = False  # the job script's own resume logic; recorded only


def argvs(args: RequeueInput) -> list[list[str]]:
    steps = [["scontrol", "requeue", args.job]]
    if args.exclude:
        steps.append(["scontrol", "update", f"JobId={args.job}",
                      f"ExcNodeList={','.join(all_hosts(args.exclude))}"])
    steps.append(["scontrol", "update", f"JobId={args.job}", "StartTime=now"])
    return steps


class SlurmRequeueJob(MutatingTool[RequeueInput, ActionOutput]):
    name = "slurm_requeue_job"
    input_model = RequeueInput
    output_model = ActionOutput
    requires = ("slurm",)
    timeout_s = 90.0

    def preview(self, ctx: ToolContext, args: RequeueInput) -> ToolPreview:
        notes = [] if args.exclude else ["no node is excluded: the job may land where it failed"]
        return ToolPreview(command=command_line(*argvs(args)), notes=notes)

    def target(self, args: RequeueInput) -> ActionTarget:
        return ActionTarget(job=args.job, retries=True, excludes=all_hosts(args.exclude))

    def live_check(self, ctx: ToolContext, args: RequeueInput) -> list[str]:
        return slurm_hostnames(ctx, args.exclude)

    def run(self, ctx: ToolContext, args: RequeueInput) -> ActionOutput:
        return run_all(ctx, *argvs(args))


TOOL = SlurmRequeueJob()
