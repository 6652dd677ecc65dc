"""Issue 24, classes 5, 6 and 7: bundles that hold part of the story. Every rank's pasted tail
is only the watchdog's C++ frames; one rank's output pasted alone (the answer is then unknown,
or a guess at low confidence); the kernel log named only by its file name; one node known only
by the `host:pid:tid [dev]` prefix of its NCCL warnings."""

from __future__ import annotations

import random

from . import log_writers as lw
from .case import Case, Expected
from .failures_gpu import PCI, _hw_lines
from .gpu_userspace import _frames
from .model import later, make_job
from .run_story import Story, begin
from .scheduler import record_end


def frames_only_watchdog(rng: random.Random, case_id: str, variant: int) -> Case:
    """Each rank's last lines as the user pasted them (`tail -n 20`): the frames of the
    exception the watchdog raised from checkTimeout, then Python's abort; the message line
    with `Watchdog caught collective operation timeout` scrolled away."""
    job = make_job(rng)
    t_end = later(job.start, rng.uniform(1, 8) * 3600)
    files = {}
    for r in range(job.world):
        tail = ["Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/"
                "ProcessGroupNCCL.cpp:618 (most recent call first):", *_frames(False),
                "Fatal Python error: Aborted", "",
                f"Thread 0x00007f{job.pids[r]:08x} (most recent call first):",
                '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/'
                'distributed_c10d.py", line 2501 in all_reduce',
                '  File "/workspace/train.py", line 171 in train_step',
                '  File "/workspace/train.py", line 240 in <module>', ""]
        files[f"tails/rank{r}.txt"] = "\n".join(tail)
    story = Story(job, rng)
    record_end(story, "FAILED", "6:0", later(t_end, 5))
    files.update(story.files)
    files["incident.yaml"] = f'question: why did job {job.job_id} die?\njob: "{job.job_id}"\n'
    return Case(expected=Expected(
        case_id=case_id, category="hang", max_confidence=0.6,
        notes="every rank's pasted tail is only the C++ frames of the watchdog's checkTimeout "
              "exception (ProcessGroupNCCL::WorkNCCL::checkTimeout, ncclCommWatchdog) and "
              "Python's abort in all_reduce: a collective timeout on every rank, nothing says "
              "which rank stopped first; SIGABRT 6:0 in sacct"), files=files)


def one_rank_alone(rng: random.Random, case_id: str, variant: int) -> Case:
    """Only one rank's output, from a world its NCCL line says is larger: that rank timed out
    in a collective; whatever stopped the others is not in the bundle."""
    job = make_job(rng)
    story = Story(job, rng)
    me = rng.randrange(job.world)
    t_fail = later(job.start, rng.uniform(1, 6) * 3600)
    story.progress(t_fail, [me])
    when = later(t_fail, 600)
    story.say(me, when, lw.watchdog(job.local(when), me, 7753))
    if variant % 2:
        story.glog(me, later(when, 0.1), "E", "ProcessGroupNCCL.cpp:1664",
                   f"[PG 0 Rank {me}] Exception (either an error or timeout) detected by "
                   "watchdog at work: 7753, last enqueued NCCL work: 7753, last completed NCCL "
                   "work: 7752.")
    for text in lw.abort_lines(job.local(later(when, 0.2)), me):
        story.say(me, later(when, 0.2), text)
    name = rng.choice(("rank{r}.log", "logs/worker-{r}.txt", "pasted_output.txt")).format(r=me)
    out = {name: "".join(f"{text}\n" for _, text in sorted(story.lines[me])),
           "incident.yaml": f"question: why did our training job hang and die? (output of rank "
                            f"{me} attached)\n"}
    return Case(expected=Expected(
        case_id=case_id, category="unknown", max_confidence=0.5,
        notes=f"only rank {me}'s output, from a world of {job.world} (its NCCL init line): it "
              "timed out waiting in a collective. Its silence about the others proves nothing; "
              f"{job.world - 1} ranks are unaccounted for. Unknown, or a guess at <= 0.5"),
        files=out)


def host_named_files(rng: random.Random, case_id: str, variant: int) -> Case:
    """An Xid in a kernel log whose lines carry no host (dmesg -T, raw dmesg with a boot
    anchor): the host is only in the file's name, at the bundle's top level."""
    story, culprit, t_fail = begin(rng, (1, 6))
    job = story.job
    host = job.host_of(culprit)
    kern, own_error, what = _hw_lines(rng.choice((0, 2, 4)), rng.choice(PCI), job.pids[culprit])
    story.say(culprit, later(t_fail, 2), own_error)
    story.victims({culprit}, t_fail)
    record_end(story, "FAILED", "1:0", later(t_fail, 640))
    story.finish(question=True)
    events = [(later(t_fail, k * 0.3), text) for k, text in enumerate(kern)]
    other = rng.choice([h for h in job.hosts if h != host])
    events_other = [(later(job.start, 100), "nvidia-nvswitch: Probing device 0000:05:00.0"),
                    (later(job.start, 101), "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  "
                     "550.90.07")]
    for h, evs in ((host, events), (other, events_other)):
        name = rng.choice(("dmesg-{h}.txt", "{h}_dmesg.log", "kern.{h}.log")).format(h=h)
        story.files[name] = lw.kernel_file(job, h, evs, "dmesg-T")
    return Case(expected=Expected(
        case_id=case_id, category="gpu_hardware", node=host, rank=culprit,
        notes=f"{what}: in a dmesg -T file whose lines name no host, at the bundle's top level, "
              f"named after {host}; the Xid's pid is rank {culprit}'s (NCCL init line). Another "
              "host's dmesg file is clean"), files=story.files)


def nccl_prefix_network(rng: random.Random, case_id: str, variant: int) -> Case:
    """mpirun's merged output, no rank tags: the only per-node sign is NCCL's `host:pid:tid
    [dev]` prefix on the IB port-error warnings of one node's ranks."""
    job = make_job(rng)
    story = Story(job, rng)
    host = rng.choice(job.hosts)
    t_fail = later(job.start, rng.uniform(1, 5) * 3600)
    story.progress(t_fail)
    mine = job.ranks_on(host)
    for r in mine:
        head = f"{job.log_host(host)}:{job.pids[r]}:{job.pids[r] + 31} [{job.local_rank(r)}]"
        port = f" mlx5_{job.local_rank(r)}:1" if variant % 2 else ""
        story.say(r, later(t_fail, rng.uniform(0, 1)), f"{head} NCCL WARN NET/IB :{port} Got "
                  "async event : port error")
        story.say(r, later(t_fail, rng.uniform(2, 5)), f"{head} transport/net_ib.cc:1696 NCCL "
                  "WARN NET/IB : Got completion from peer 10.0.0.1<56532> with status=12 "
                  "opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.2")
    story.victims(set(mine), t_fail)
    record_end(story, "FAILED", "1:0", later(t_fail, 640))
    story.finish(question=True)
    merged = sorted((t, text) for rows in story.lines.values() for t, text in rows)
    for rel in [r for r in story.files if r.startswith(("logs/", "output/", "train-"))]:
        del story.files[rel]
    story.files[f"mpirun-{job.job_id}.out"] = "\n".join(text for _, text in merged) + "\n"
    return Case(expected=Expected(
        case_id=case_id, category="network_fault", node=host,
        notes=f"one merged mpirun log without rank tags; {host}'s ranks (by their NCCL "
              "`host:pid:tid [dev]` prefixes) report an IB port error then transport errors; "
              "the others only time out later"), files=story.files)
