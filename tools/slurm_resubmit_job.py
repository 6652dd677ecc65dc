"""Submit a job's (edited) batch script again: `sbatch --parsable [--exclude=…] SCRIPT`.

After a config change to the job script, this is the retry that runs the change: `scontrol
requeue` reruns the copy of the script Slurm stored at submission, which no edit reaches.
Runs only through the approval gate."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.actions.slurm_args import (
    JobId,
    NodeName,
    ScontrolTool,
    all_hosts,
    slurm_hostnames,
)
from goodput_agent.toolkit import ActionTarget, ToolContext, ToolPreview


class ResubmitInput(BaseModel):
    job: JobId  # the failed job this reruns (for the record and the retry rule)
    script: str = Field(min_length=1)  # the batch script to submit, as edited
    exclude: list[NodeName] = Field(default_factory=list)
    chdir: str | None = None  # the job's working directory (default: sbatch's own)


class SlurmResubmitJob(ScontrolTool[ResubmitInput]):
    name = "slurm_resubmit_job"
    input_model = ResubmitInput
    timeout_s = 60.0

    def argv(self, args: ResubmitInput) -> list[str]:
        argv = ["sbatch", "--parsable"]
        if args.exclude:
            argv.append(f"--exclude={','.join(all_hosts(args.exclude))}")
        if args.chdir:
            argv.append(f"--chdir={args.chdir}")
        return [*argv, str(Path(args.script).resolve())]

    def preview(self, ctx: ToolContext, args: ResubmitInput) -> ToolPreview:
        p = super().preview(ctx, args)
        if args.chdir is None:
            p.notes.append("no chdir given: the job runs in the directory goodput approve runs "
                           "in (sbatch's default), and its output files go there")
        return p

    def target(self, args: ResubmitInput) -> ActionTarget:
        return ActionTarget(job=args.job, retries=True, runs=[str(Path(args.script).resolve())],
                            excludes=all_hosts(args.exclude))

    def live_check(self, ctx: ToolContext, args: ResubmitInput) -> list[str]:
        return slurm_hostnames(ctx, args.exclude)


TOOL = SlurmResubmitJob()
