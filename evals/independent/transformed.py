"""Issue 24, class 11: the same failures as the base families, as the files reach a bundle after
handling: a kernel log and rank logs copied from a terminal (hard-wrapped at its width), and rank
output that went through journald into rsyslog, its colour codes escaped as `#033[...m`."""

from __future__ import annotations

import random
from pathlib import PurePosixPath

from . import text_forms as tf
from .case import Case, Expected
from .failures_gpu import PCI, _hw_lines
from .model import later
from .run_story import begin
from .scheduler import record_end


def hard_wrapped(rng: random.Random, case_id: str, variant: int) -> Case:
    """An Xid on one GPU; every text file pasted from a terminal 80 or 116 columns wide."""
    story, culprit, t_fail = begin(rng, (2, 6))
    job = story.job
    host = job.host_of(culprit)
    kern, own_error, what = _hw_lines(variant % 3, rng.choice(PCI), job.pids[culprit])
    for k, text in enumerate(kern):
        story.kern(host, later(t_fail, k * 0.3), text)
    story.say(culprit, later(t_fail, 2), own_error)
    story.victims({culprit}, t_fail)
    record_end(story, "FAILED", "1:0", later(t_fail, 640))
    story.finish(question=True)
    width, pad = rng.choice(((80, False), (116, True), (100, True)))
    wrapped = {}
    for rel, text in story.files.items():
        if rel.endswith((".yaml", ".json")) or "sacct" in rel or "scontrol" in rel:
            wrapped[rel] = text
            continue
        path = PurePosixPath(rel)
        new = str(path.with_name(f"{path.stem}-pasted{path.suffix}"))
        wrapped[new] = "\n".join(tf.hard_wrap(text.splitlines(), width, pad)) + "\n"
    return Case(expected=Expected(
        case_id=case_id, category="gpu_hardware", node=host, rank=culprit,
        notes=f"{what} on {host} (pid {job.pids[culprit]} is rank {culprit}'s), the same story "
              f"as the base family, but every log was copied from a {width}-column terminal: "
              "the Xid line and the NCCL init lines are cut mid-word across lines"
              + (" and padded with blanks" if pad else "")), files=wrapped)


def _coloured(rng: random.Random, text: str) -> str:
    """A framework's colour log line: level in colour, the message plain."""
    level = "ERROR" if any(w in text for w in ("Error", "error", "Traceback")) else "INFO"
    colour = "0;31m" if level == "ERROR" else rng.choice(("0;36m", "32m"))
    return f"{tf.ansi(level, colour)} {text}"


def syslog_coloured(rng: random.Random, case_id: str, variant: int) -> Case:
    """A CUDA OOM on one rank; each node's trainer unit logged to syslog through journald, so
    every colour code arrives as `#033[..m` and tabs as `#011`."""
    story, culprit, t_fail = begin(rng, (0.5, 4))
    job = story.job
    local = job.local_rank(culprit)
    story.say_block(culprit, t_fail, [
        "Traceback (most recent call last):",
        '  File "/opt/train/run.py", line 412, in <module>', "    loss = step(batch)",
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU {local} "
        "has a total capacity of 79.11 GiB of which 1.20 GiB is free. Process 0 has 77.9 GiB "
        "memory in use. Of the allocated memory 74.02 GiB is allocated by PyTorch, and 2.61 "
        "GiB is reserved by PyTorch but unallocated."])
    story.victims({culprit}, t_fail)
    record_end(story, "FAILED", "1:0", later(t_fail, 650))
    story.finish(question=rng.random() < 0.7)
    for rel in [r for r in story.files if r.startswith(("logs/", "output/", "train-"))]:
        del story.files[rel]
    for host in job.hosts:
        rows = sorted((t, r, text) for r in job.ranks_on(host) for t, text in story.lines[r])
        unit = rng.choice(("trainer", "torchrun", "python3"))
        story.files[f"nodes/{host}/syslog"] = "".join(
            f"{job.local(t):%b %d %H:%M:%S} {host} {unit}[{job.pids[r]}]: "
            f"{tf.syslog_escaped(f'[rank{r}]:' + chr(9) + _coloured(rng, text))}\n"
            for t, r, text in rows)
    return Case(expected=Expected(
        case_id=case_id, category="gpu_oom", node=job.host_of(culprit), rank=culprit,
        notes=f"rank {culprit} ({job.host_of(culprit)}) raises a CUDA OOM; the ranks' output is "
              "only in each node's rsyslog file, every line `host unit[pid]: [rankN]:#011#033"
              "[0;31mERROR#033[0m ...`; the other ranks' watchdog timeouts are symptoms"),
        files=story.files)
