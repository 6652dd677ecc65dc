"""Failures of the program or the allocation: a Python exception on one rank, the time limit,
preemption by the scheduler, and a hang where one rank never joined the collective."""

from __future__ import annotations

import random
from datetime import datetime

from . import log_writers as lw
from . import slurm_writers as sw
from .case import Case, Expected
from .model import later, make_job
from .run_story import Story
from .scheduler import record_end

APP_ERRORS = (
    ('  File "/workspace/data/dataset.py", line 88, in __getitem__',
     "    sample = self.index[key]", "KeyError: 'shard-00412/sample-118233'"),
    ('  File "/workspace/data/loader.py", line 51, in open_shard',
     "    with open(path, 'rb') as f:",
     "FileNotFoundError: [Errno 2] No such file or directory: '/lustre/ds/shard-00917.tar'"),
    ('  File "/workspace/model/attention.py", line 140, in forward',
     "    assert q.shape[-1] == self.head_dim", "AssertionError"),
    ('  File "/workspace/model/moe.py", line 77, in route',
     "    out = torch.cat(chunks, dim=0)", "RuntimeError: Sizes of tensors must match except in "
     "dimension 0. Expected size 4096 but got size 2048 for tensor number 1 in the list."),
)


def application_error(rng: random.Random, case_id: str, variant: int) -> Case:
    job = make_job(rng)
    story = Story(job, rng)
    culprit = rng.randrange(job.world)
    t_fail = later(job.start, rng.uniform(0.1, 5) * 3600)
    story.progress(t_fail)
    frames = APP_ERRORS[variant % len(APP_ERRORS)]
    tb = ["Traceback (most recent call last):", '  File "/workspace/train.py", line 301, in '
          "<module>", "    main()", *frames]
    story.say_block(culprit, t_fail, tb)
    story.victims({culprit}, t_fail)
    notes = (f"Rank {culprit} on {job.host_of(culprit)} raised {tb[-1].split(':')[0]} first; "
             "every other rank's watchdog timeout dates its stuck collective to that moment.")
    if variant % 2:
        first = rng.choice([r for r in range(job.world) if r != culprit])
        when = later(t_fail, 650)
        story.say(first, when, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:")
        story.say(first, later(when, 0.01), f"Root Cause (first observed failure): [0]: time : "
                  f"{job.local(when):%Y-%m-%d_%H:%M:%S} host : {job.log_host(job.host_of(first))}"
                  f" rank : {first} (local_rank: {job.local_rank(first)}) exitcode : -6 "
                  f"(pid: {job.pids[first]})")
        notes += (f" Decoy: torchelastic's 'first observed failure' is rank {first}, whose abort "
                  "came after its watchdog timeout: it is a victim.")
    record_end(story, "FAILED", "1:0", later(t_fail, 660))
    story.finish(question=rng.random() < 0.6)
    return Case(expected=Expected(case_id=case_id, category="application_error",
                                  node=job.host_of(culprit), rank=culprit, notes=notes),
                files=story.files)


def _sigterm_all(story: Story, t: datetime) -> None:
    job = story.job
    for r in range(job.world):
        story.say(r, later(t, 0.5), "torch.distributed.elastic.multiprocessing.api."
                  f"SignalException: Process {job.pids[r]} got signal: 15")


def time_limit(rng: random.Random, case_id: str, variant: int) -> Case:
    return _ended_by_scheduler(rng, case_id, variant, "TIME LIMIT", "TIMEOUT", "0:0",
                               "time_limit")


def preempted(rng: random.Random, case_id: str, variant: int) -> Case:
    return _ended_by_scheduler(rng, case_id, variant, "PREEMPTION", "PREEMPTED", "0:15",
                               "preempted")


def _ended_by_scheduler(rng: random.Random, case_id: str, variant: int, why: str, state: str,
                        code: str, category: str) -> Case:
    job = make_job(rng)
    story = Story(job, rng)
    limit_min = rng.choice((240, 480, 720))
    t_end = later(job.start, limit_min * 60 if state == "TIMEOUT" else rng.uniform(1, 3) * 3600)
    story.progress(t_end)
    story.say(0, t_end, sw.stepd_cancel(job, job.hosts[0], t_end, why))
    _sigterm_all(story, t_end)
    notes = (f"sacct says {state}: the scheduler ended the job ({why.lower()}); the ranks' "
             "SIGTERM lines follow from it. No node is at fault.")
    if variant % 2:
        host = rng.choice(job.hosts)
        r = job.ranks_on(host)[0]
        story.kern(host, later(job.start, 1200), f"NVRM: Xid (PCI:0000:3d:00): 13, pid="
                   f"{rng.randint(200, 9000)}, name=python, Graphics Exception: ESR 0x51e730="
                   "0x2000e 0x51e734=0x0 0x51e728=0x4c1eb72 0x51e72c=0x174")
        story.kern(host, later(t_end, 4), f"NVRM: Xid (PCI:0000:3d:00): 45, pid={job.pids[r]}, "
                   "name=python, Ch 00000010")
        notes += (f" Decoys on {host}: an Xid 13 hours earlier (the job kept stepping) and an "
                  "Xid 45 after the kill (channel cleanup of the killed process).")
    record_end(story, state, code, later(t_end, 30), limit_min=limit_min)
    story.finish(question=rng.random() < 0.6)
    return Case(expected=Expected(case_id=case_id, category=category, notes=notes),
                files=story.files)


def hang(rng: random.Random, case_id: str, variant: int) -> Case:
    job = make_job(rng)
    story = Story(job, rng)
    culprit = rng.randrange(job.world)
    t_stuck = later(job.start, rng.uniform(1, 5) * 3600)
    story.progress(t_stuck)
    seq = rng.randint(9000, 90000)
    story.py(culprit, later(t_stuck, -1), "rank-local: fetching next batch from /mnt/nfs/cache")
    for r in range(job.world):
        when = later(t_stuck, 1800 + rng.uniform(0.1, 2))
        if r == culprit and variant % 2 == 0:
            continue  # stuck outside NCCL: its watchdog has nothing to time out
        my_seq = seq - 1 if r == culprit else seq
        story.glog(r, when, "E", "ProcessGroupNCCL.cpp:632", lw.watchdog(
            job.local(when), r, my_seq, 1800000).split("] ", 1)[1])
        story.glog(r, later(when, 0.1), "E", "ProcessGroupNCCL.cpp:1664",
                   f"[PG 0 Rank {r}] Exception (either an error or timeout) detected by "
                   f"watchdog at work: {my_seq}, last enqueued NCCL work: {my_seq}, last "
                   f"completed NCCL work: {my_seq - 1}.")
    how = ("printed no watchdog line (it never entered the collective)" if variant % 2 == 0
           else f"is one collective behind (SeqNum {seq - 1} vs {seq})")
    record_end(story, "FAILED", "6:0", later(t_stuck, 1830))
    story.finish(question=rng.random() < 0.6)
    notes = (f"No primary failure anywhere; every rank times out after 30 min, but rank "
             f"{culprit} {how}: the hang started there.")
    return Case(expected=Expected(case_id=case_id, category="hang", node=job.host_of(culprit),
                                  rank=culprit, notes=notes), files=story.files)
