"""Issue 24, class 8 (and py-spy from class 2): slowdowns and hangs with no profiler trace,
visible only in a training log's own per-iteration series (Megatron-LM's iteration lines and its
`(min, max) time across ranks` timers, per-rank step lines) or in py-spy dumps of every rank."""

from __future__ import annotations

import random
from datetime import datetime

import yaml

from . import log_writers as lw
from . import slurm_writers as sw
from .case import Case, Expected
from .model import Job, later, make_job
from .run_story import Story, begin

SLOW_QUESTIONS = ("why did training slow down after {t}?", "step time went up on job {j}, "
                  "why?", "throughput of run {j} dropped, what changed?")


def _init_lines(story: Story) -> None:
    job = story.job
    for r in range(job.world):
        story.lines.setdefault(r, []).append(lw.nccl_init(job, r, later(job.start, 40)))


def _question(story: Story, change: datetime) -> None:
    job = story.job
    q = story.rng.choice(SLOW_QUESTIONS).format(t=f"{job.local(change):%H:%M}", j=job.job_id)
    story.files["incident.yaml"] = yaml.safe_dump({"question": q, "job": job.job_id,
                                                   "timezone": job.zone}, sort_keys=False)


def _timers(base: dict[str, float], rng: random.Random) -> list[str]:
    out = ["(min, max) time across ranks (ms):"]
    for name, ms in base.items():
        lo, hi = ms * rng.uniform(0.97, 1.0), ms * rng.uniform(1.0, 1.04)
        out.append(f"    {name} {'.' * (47 - len(name))}: ({lo:.2f}, {hi:.2f})")
    return out


def megatron_slowdown(rng: random.Random, case_id: str, variant: int) -> Case:
    """Megatron's rank-0 iteration lines: elapsed time per iteration rises ~1.5x at a point.
    v0: its timers show batch-generator taking the growth (input stall); v1: no timers at all,
    every number just slower (the cause is not in the bundle)."""
    job = make_job(rng)
    story = Story(job, rng)
    _init_lines(story)
    n = rng.randint(120, 200)
    change_at = rng.randint(n // 3, 2 * n // 3)
    t = later(job.start, 120)
    timed = variant % 2 == 0
    for k in range(1, n):
        slow = k >= change_at
        gen = rng.uniform(300, 420) if slow and timed else rng.uniform(2, 4)
        fb = rng.uniform(1480, 1530)
        ms = fb + gen + 40 + (rng.uniform(650, 800) if slow and not timed else 0)
        t = later(t, ms / 1000 * 20)
        story.say(job.world - 1, t, f"[{job.local(t):%Y-%m-%d %H:%M:%S}] iteration {k * 20:>8}/"
                  f"{n * 20 + 10000:>8} | consumed samples: {k * 20 * 1024:>12} | elapsed time per "
                  f"iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): "
                  f"{401.0 * 1570 / ms:.1f} | learning rate: 1.5E-04 | global batch size:  1024 | "
                  f"lm loss: {3.1 - k / n:.6E} | loss scale: 1.0 | grad norm: 0.281 |")
        if timed and k % 5 == 0:
            story.say_block(0, later(t, 0.01), _timers(
                {"forward-backward": fb, "forward-compute": fb * 0.32, "backward-compute":
                 fb * 0.64, "batch-generator": gen, "all-grads-sync": 25.0, "optimizer": 35.2},
                rng))
    story.finish(question=False)
    _question(story, later(job.start, 120))
    if timed:
        return Case(expected=Expected(
            case_id=case_id, kind="slowdown", category="input_stall", max_confidence=0.6,
            notes="Megatron's iteration time rises ~1.25x at one iteration; its timers show "
                  "batch-generator going from ~3 ms to ~350 ms while forward-backward holds: "
                  "waiting for input. No trace to confirm"), files=story.files)
    return Case(expected=Expected(
        case_id=case_id, kind="slowdown", category="unknown", max_confidence=0.5,
        notes="Megatron's iteration time rises ~1.5x at one iteration and TFLOP/s falls with "
              "it; no timers, no traces, no metrics: a slowdown is certain, its cause is not in "
              "the bundle"), files=story.files)


def per_rank_straggler(rng: random.Random, case_id: str, variant: int) -> Case:
    """Each rank logs its own step: from one step on, one rank's compute takes ~1.6x while every
    other rank's compute holds and its wait in the all-reduce grows by the difference."""
    job = make_job(rng)
    story = Story(job, rng)
    _init_lines(story)
    culprit = rng.randrange(job.world)
    n = rng.randint(60, 90)
    change_at = rng.randint(n // 3, 2 * n // 3)
    t = later(job.start, 90)
    for k in range(1, n):
        comp = {r: rng.uniform(780, 820) * (1.6 if r == culprit and k >= change_at else 1)
                for r in range(job.world)}
        slowest = max(comp.values())
        step = slowest + 60
        t = later(t, step / 1000 * 50)
        for r in range(job.world):
            story.py(r, t, f"step {k * 50} | step_time {step:.0f} ms | fwd_bwd {comp[r]:.0f} ms "
                     f"| allreduce_wait {slowest - comp[r] + 12:.0f} ms | tokens/s/gpu "
                     f"{4096 * 8 / step * 1000:.0f}")
    story.finish(question=False)
    _question(story, t)
    return Case(expected=Expected(
        case_id=case_id, kind="slowdown", category="straggler", node=job.host_of(culprit),
        rank=culprit, max_confidence=0.6,
        notes=f"per-rank step lines: from step {change_at * 50} rank {culprit}'s fwd_bwd is "
              f"~1.6x while the others' allreduce_wait grows by the same amount: rank {culprit} "
              f"on {job.host_of(culprit)} is the straggler. A trace would confirm"),
        files=story.files)


def progress_stops(rng: random.Random, case_id: str, variant: int) -> Case:
    """Iteration lines every minute, then nothing for hours; no timeout, no error anywhere. v0:
    the user cancels the job; v1: the time limit ends it."""
    job = make_job(rng)
    story = Story(job, rng)
    t_stuck = later(job.start, rng.uniform(1, 4) * 3600)
    story.progress(t_stuck)
    gap = rng.uniform(3, 6) * 3600
    end = later(t_stuck, gap)
    state, code = ("CANCELLED by 4021", "0:15") if variant % 2 == 0 else ("TIMEOUT", "0:0")
    story.finish(question=True)
    story.files["slurm/sacct.txt"] = sw.sacct_pipe(
        job, state, code, end, [(".batch", "CANCELLED", "0:15"), (".0", "CANCELLED", "0:15")],
        rng)
    if variant % 2:
        _stepd(story, end)
    return Case(expected=Expected(
        case_id=case_id, category="hang", max_confidence=0.6,
        notes=f"steps print regularly until {job.local(t_stuck):%H:%M}, then nothing for "
              f"{gap / 3600:.1f} h until the job ends ({state}); no error and no watchdog line "
              "anywhere: the job hung; where is not in the bundle"
              + ("; the time limit only ended a job that had stopped hours before"
                 if variant % 2 else "")), files=story.files)


def _stepd(story: Story, end: datetime) -> None:
    job = story.job
    story.files[f"logs/slurm-{job.job_id}-stepd.out"] = sw.stepd_cancel(
        job, job.hosts[0], end, "TIME LIMIT") + "\n"


def _pyspy(job: Job, r: int, stack: list[str]) -> str:
    pid = job.pids[r]
    lines = [f"Process {pid}: /usr/bin/python3 -u train.py --config configs/llama-70b.yaml",
             "Python v3.10.12 (/usr/bin/python3.10)", "",
             f"Thread {pid} (idle): \"MainThread\"", *[f"    {f}" for f in stack],
             f"Thread {pid + 57} (idle): \"Thread-2 (_pin_memory_loop)\"",
             "    select (selectors.py:415)", "    wait (multiprocessing/connection.py:947)",
             "    _poll (multiprocessing/connection.py:440)",
             "    _pin_memory_loop (torch/utils/data/_utils/pin_memory.py:53)", ""]
    return "\n".join(lines)


def pyspy_hang(rng: random.Random, case_id: str, variant: int) -> Case:
    """The job stops; before cancelling it the user ran `py-spy dump` on every rank's pid:
    all wait for the GPU in the step's synchronize, one waits elsewhere (a DataLoader queue,
    a checkpoint write)."""
    story, culprit, t_stuck = begin(rng, (1, 5))
    job = story.job
    end = later(t_stuck, rng.uniform(1, 2) * 3600)
    story.finish(question=True)
    story.files["slurm/sacct.txt"] = sw.sacct_pipe(
        job, "CANCELLED by 4021", "0:15", end, [(".0", "CANCELLED", "0:15")], rng)
    waiting = ["synchronize (torch/cuda/__init__.py:954)", "train_step (train.py:175)",
               "main (train.py:240)", "<module> (train.py:262)"]
    stuck = (["get (multiprocessing/queues.py:113)", "_try_get_data (torch/utils/data/"
              "dataloader.py:1133)", "_get_data (torch/utils/data/dataloader.py:1294)",
              "_next_data (torch/utils/data/dataloader.py:1325)", "__next__ (torch/utils/data/"
              "dataloader.py:630)", "main (train.py:236)", "<module> (train.py:262)"]
             if variant % 2 == 0 else
             ["write (torch/serialization.py:473)", "_save (torch/serialization.py:884)",
              "save (torch/serialization.py:629)", "save_checkpoint (ckpt.py:58)",
              "main (train.py:251)", "<module> (train.py:262)"])
    for r in range(job.world):
        host = job.host_of(r)
        story.files[f"pyspy/{host}-{job.pids[r]}.txt"] = _pyspy(job, r, stuck if r == culprit
                                                                else waiting)
    where = "a DataLoader queue get" if variant % 2 == 0 else "a torch.save write"
    return Case(expected=Expected(
        case_id=case_id, category="hang", node=job.host_of(culprit), rank=culprit,
        notes=f"progress stops; py-spy dumps of every rank: all in the step's synchronize "
              f"waiting for the collective, except pid {job.pids[culprit]} (rank {culprit} by "
              f"its NCCL init line, on {job.host_of(culprit)}) blocked in {where}; the user "
              "cancels the job"), files=story.files)
