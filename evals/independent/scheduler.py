"""The scheduler's record of how the job ended, in one of the forms the contract accepts."""

from __future__ import annotations

from datetime import datetime

from . import slurm_writers as sw
from .run_story import Story

STEP_STATE = {"FAILED": "FAILED", "OUT_OF_MEMORY": "OUT_OF_MEMORY", "TIMEOUT": "CANCELLED",
              "PREEMPTED": "CANCELLED", "NODE_FAIL": "CANCELLED"}


def record_end(story: Story, state: str, exit_code: str, end: datetime, reason: str = "None",
               limit_min: int = 1440) -> None:
    job, rng, files = story.job, story.rng, story.files
    folder = rng.choice(("slurm", "scheduler", "sched"))
    if rng.random() < 0.3:
        files[f"{folder}/sacct.json"] = sw.sacct_json(job, state, exit_code, end, limit_min,
                                                      reason)
    else:
        step_code = "0:9" if state in ("TIMEOUT", "PREEMPTED", "NODE_FAIL") else exit_code
        steps = [(".batch", STEP_STATE.get(state, state), step_code),
                 (".0", STEP_STATE.get(state, state), step_code)]
        files[f"{folder}/sacct.txt"] = sw.sacct_pipe(job, state, exit_code, end, steps, rng)
    if rng.random() < 0.5:
        limit = f"{limit_min // 60:02d}:{limit_min % 60:02d}:00"
        files[f"{folder}/scontrol_job.txt"] = sw.scontrol_job(job, state, reason, exit_code,
                                                              end, limit)
