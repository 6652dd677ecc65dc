"""Issue 24, classes 2, 5 and 7: a fault located only through a peer's IP address: NCCL's
`Connect to <ip> failed : Connection refused`, NCCL RAS reports that name nodes by IP (a rank
one operation behind; a node's processes dead), and the name-service output mapping each IP to
its host."""

from __future__ import annotations

import random
from datetime import datetime

from . import slurm_writers as sw
from . import text_forms as tf
from .case import Case, Expected
from .model import Job, later, make_job
from .ras import RasRank, dead_report, mismatch_report
from .run_story import Story
from .scheduler import record_end


def _lookup(rng: random.Random, job: Job, ips: dict[str, str]) -> tuple[str, str]:
    fqdn = {ips[h]: job.log_host(h) if job.fqdn_domain else f"{h}.cluster.internal"
            for h in job.hosts}
    return tf.name_lookup(rng, fqdn)


def _refused_block(head: str, ip: str, port: int, modern: bool) -> list[str]:
    warn = (f"{head} misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to {ip}<{port}> "
            "failed : Connection refused" if modern else
            f"{head} NCCL WARN Connect to {ip}<{port}> failed : Connection refused")
    last = warn.split("NCCL WARN ", 1)[1]
    return [warn, f"{head} NCCL INFO misc/socket.cc:565 -> 6",
            f"{head} NCCL INFO transport/net_socket.cc:338 -> 6",
            "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/"
            "distributed/c10d/NCCLUtils.hpp:317, remote process exited or there was a network "
            "error, NCCL version 2.21.5",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process "
            "exiting prematurely.", "Last error:", last]


def connection_refused(rng: random.Random, case_id: str, variant: int) -> Case:
    """Every rank that talks to one host gets Connection refused from its IP; that host's own
    logs are not in the bundle; a lookup maps the IP to it."""
    job = make_job(rng)
    story = Story(job, rng)
    bad = rng.choice(job.hosts)
    ips = tf.host_ips(rng, job.hosts)
    others = [r for r in range(job.world) if job.host_of(r) != bad]
    t_fail = later(job.start, rng.uniform(0.5, 4) * 3600)
    story.progress(t_fail, others)
    for r in others:
        head = (f"{job.log_host(job.host_of(r))}:{job.pids[r]}:{job.pids[r] + 90} "
                f"[{job.local_rank(r)}]")
        story.say_block(r, later(t_fail, rng.uniform(0, 3)),
                        _refused_block(head, ips[bad], rng.randint(32768, 60999), variant % 2 == 0))
    record_end(story, "FAILED", "1:0", later(t_fail, 60))
    story.finish(question=True)
    name, text = _lookup(rng, job, ips)
    story.files[name] = text
    return Case(expected=Expected(
        case_id=case_id, category="network_fault", node=bad, max_confidence=0.6,
        notes=f"every rank off {bad} fails to connect to {ips[bad]}: Connection refused; {name} "
              f"maps that IP to {bad}, whose own logs are missing: a network or peer fault "
              "there, and without its logs the bundle cannot tell which"), files=story.files)


def _cancelled_by_user(story: Story, end: datetime) -> None:
    job = story.job
    story.files["slurm/sacct.txt"] = sw.sacct_pipe(
        job, "CANCELLED by 4021", "0:15", end,
        [(".batch", "CANCELLED", "0:15"), (".0", "CANCELLED", "0:15")], story.rng)


def ras_mismatch_hang(rng: random.Random, case_id: str, variant: int) -> Case:
    """The job stops progressing; the user runs ncclras before cancelling it: one rank has
    launched one AllReduce fewer than all the others; RAS names its node by IP."""
    job = make_job(rng)
    story = Story(job, rng)
    culprit = rng.randrange(job.world)
    ips = tf.host_ips(rng, job.hosts)
    t_stuck = later(job.start, rng.uniform(1, 6) * 3600)
    story.progress(t_stuck)
    end = later(t_stuck, rng.uniform(1.5, 3) * 3600)
    _cancelled_by_user(story, end)
    story.finish(question=True)
    host = job.host_of(culprit)
    behind = RasRank(culprit, job.local_rank(culprit), job.pids[culprit], ips[host])
    story.files[rng.choice(("ncclras.txt", "debug/ras_status.txt"))] = mismatch_report(
        len(job.hosts), job.gpus_per_node, behind, rng.randint(5000, 90000),
        rng.choice(("AllReduce", "AllGather", "ReduceScatter")))
    name, text = _lookup(rng, job, ips)
    story.files[name] = text
    return Case(expected=Expected(
        case_id=case_id, category="hang", node=host, rank=culprit,
        notes=f"training stops printing; the job is cancelled by its user hours later (no "
              f"timeout printed). ncclras: rank {culprit} launched one operation fewer than "
              f"all others, on node {ips[host]} = {host} ({name}; its pid is rank {culprit}'s "
              "in the NCCL init lines too)"), files=story.files)


def ras_dead_node(rng: random.Random, case_id: str, variant: int) -> Case:
    """sacct says NODE_FAIL without saying which node; ncclras lists the dead processes, all on
    one IP; the lookup names the host."""
    job = make_job(rng)
    story = Story(job, rng)
    bad = rng.choice(job.hosts)
    ips = tf.host_ips(rng, job.hosts)
    dead_ranks = job.ranks_on(bad)
    t_fail = later(job.start, rng.uniform(1, 6) * 3600)
    story.progress(t_fail)
    story.victims(set(dead_ranks), t_fail)
    record_end(story, "NODE_FAIL", "0:0", later(t_fail, 700), reason="NodeDown")
    story.finish(question=True)
    dead = [RasRank(r, job.local_rank(r), job.pids[r], ips[bad]) for r in dead_ranks]
    story.files["ncclras.txt"] = dead_report(len(job.hosts), job.gpus_per_node, dead)
    name, text = _lookup(rng, job, ips)
    story.files[name] = text
    return Case(expected=Expected(
        case_id=case_id, category="node_failure", node=bad,
        notes=f"sacct NODE_FAIL lists every node; ncclras (taken before the end) shows all "
              f"{len(dead)} processes on {ips[bad]} dead, the communicator incomplete without "
              f"them; {name} maps {ips[bad]} to {bad}; its ranks' logs just stop"),
        files=story.files)
