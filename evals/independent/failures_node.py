"""Failures of the host around the GPUs: the kernel's OOM killer (global or cgroup), a node that
stops answering, and a network fault (IB link down, NCCL socket / ibverbs failures)."""

from __future__ import annotations

import random

from . import slurm_writers as sw
from .case import Case, Expected
from .model import later, make_job
from .run_story import Story
from .scheduler import record_end


def host_oom(rng: random.Random, case_id: str, variant: int) -> Case:
    job = make_job(rng)
    story = Story(job, rng)
    culprit = rng.randrange(job.world)
    host, pid = job.host_of(culprit), job.pids[culprit]
    t_fail = later(job.start, rng.uniform(0.3, 4) * 3600)
    story.progress(t_fail)
    rss = rng.randint(90, 400) * 1024 * 1024
    killed = (f"Killed process {pid} (python) total-vm:{rss * 2}kB, anon-rss:{rss}kB, "
              "file-rss:81920kB, shmem-rss:2048kB, UID:4021 pgtables:412340kB oom_score_adj:0")
    if variant % 2:
        story.kern(host, t_fail, "python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_"
                   "MOVABLE|__GFP_COMP), order=0, oom_score_adj=0")
        story.kern(host, later(t_fail, 0.3), f"Out of memory: {killed}")
        how = "the global OOM killer"
    else:
        story.kern(host, t_fail, "python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), "
                   "order=0, oom_score_adj=0")
        story.kern(host, later(t_fail, 0.2), f"memory: usage {rss + 4096}kB, limit {rss}kB, "
                   "failcnt 1184")
        story.kern(host, later(t_fail, 0.3), f"Memory cgroup out of memory: {killed}")
        how = "the job's memory cgroup"
    story.kern(host, later(t_fail, 0.5), f"oom_reaper: reaped process {pid} (python), now "
               "anon-rss:0kB, file-rss:0kB, shmem-rss:0kB")
    story.victims({culprit}, t_fail)
    story.say(0, later(t_fail, 640), f"slurmstepd: error: Detected 1 oom_kill event in StepId="
              f"{job.job_id}.0. Some of the step tasks have been OOM Killed.")
    record_end(story, "OUT_OF_MEMORY", "0:125", later(t_fail, 650))
    story.finish(question=rng.random() < 0.6)
    notes = (f"{how} killed pid {pid} on {host}; that pid is rank {culprit}'s (its NCCL init "
             "line), which printed nothing after; sacct says OUT_OF_MEMORY; the other ranks' "
             "timeouts are symptoms.")
    return Case(expected=Expected(case_id=case_id, category="host_oom", node=host, rank=culprit,
                                  notes=notes), files=story.files)


def node_failure(rng: random.Random, case_id: str, variant: int) -> Case:
    job = make_job(rng)
    story = Story(job, rng)
    host = rng.choice(job.hosts)
    dead = set(job.ranks_on(host))
    t_fail = later(job.start, rng.uniform(1, 6) * 3600)
    story.progress(t_fail)
    story.kern(host, later(job.start, 30), "nvidia-peermem: loading out-of-tree module taints "
               "kernel.")
    if variant % 2:
        story.kern(host, later(t_fail, -2), "mce: [Hardware Error]: CPU 17: Machine Check "
                   "Exception: 5 Bank 4: b200000000070f0f")
        story.kern(host, later(t_fail, -1), "mce: [Hardware Error]: Run the above through "
                   "'mcelog --ascii'")
        story.kern(host, t_fail, "Kernel panic - not syncing: Fatal machine check")
    else:
        story.kern(host, later(t_fail, -600), "systemd-journald[812]: Journal started")
    story.victims(dead, t_fail)
    end = later(t_fail, 700)
    record_end(story, "NODE_FAIL", "0:0", end, reason="NodeDown")
    when = job.local(later(t_fail, 300)).strftime("%Y-%m-%dT%H:%M:%S")
    story.files["slurm/scontrol_node.txt"] = sw.scontrol_node(host, "DOWN+DRAIN+NOT_RESPONDING",
                                                               "Not responding", when)
    story.finish(question=rng.random() < 0.6)
    notes = (f"sacct says NODE_FAIL and scontrol marks {host} not responding; its ranks stop "
             "printing without an error, the other nodes' ranks time out later (symptoms); "
             "no single rank is to blame.")
    return Case(expected=Expected(case_id=case_id, category="node_failure", node=host,
                                  notes=notes), files=story.files)


def _nccl_sys_error(reason: str) -> list[str]:
    return ["torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for "
            "details), NCCL version 2.20.5",
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed "
            "or device error. ", "Last error:", reason]


def network_fault(rng: random.Random, case_id: str, variant: int) -> Case:
    job = make_job(rng)
    story = Story(job, rng)
    host = rng.choice(job.hosts)
    mine = job.ranks_on(host)
    t_fail = later(job.start, rng.uniform(0.5, 5) * 3600)
    ip = f"10.{rng.randint(0, 9)}.{rng.randint(0, 9)}.{rng.randint(2, 250)}"
    if variant % 3 == 2:  # a configuration fault at init: this node's ranks cannot open the NIC
        t_fail = later(job.start, 45)
        reason = rng.choice(("Socket creation failed", "Failed to open libibverbs.so[.1]"))
        for r in mine:
            head = f"{job.log_host(host)}:{job.pids[r]}:{job.pids[r] + 9} [{job.local_rank(r)}]"
            story.say(r, t_fail, f"{head} NCCL WARN {reason}")
            story.say_block(r, later(t_fail, 0.1), _nccl_sys_error(reason))
        story.progress(t_fail, [r for r in range(job.world) if r not in mine])
        story.victims(set(mine), t_fail, seq=1)
        what = f"NCCL could not open the network on {host} ({reason}) at init"
    else:
        story.progress(t_fail)
        port = rng.choice(("ibp12s0", "ib0", "mlx5_2"))
        story.kern(host, t_fail, f"mlx5_core 0000:0c:00.0 {port}: Link down")
        story.kern(host, later(t_fail, 0.5), f"{port}: lost carrier" if variant % 3 else
                   "mlx5_core 0000:0c:00.0: mlx5_port_module_event:1132:(pid 0): Port module "
                   "event[error]: module 0, Cable error, Bad cable")
        for r in mine:
            when = later(t_fail, rng.uniform(5, 20))
            head = f"{job.log_host(host)}:{job.pids[r]}:{job.pids[r] + 12} [{job.local_rank(r)}]"
            story.say(r, when, f"{head} transport/net_ib.cc:1696 NCCL WARN NET/IB : Got "
                      f"completion from peer {ip}<45122> with status=12 opcode=0 len=0 vendor "
                      "err 129 (Recv)")
        story.victims(set(mine), t_fail)
        what = f"the IB port on {host} went down and that node's ranks saw transport errors"
    record_end(story, "FAILED", "1:0", later(t_fail, 660))
    story.finish(question=rng.random() < 0.6)
    notes = (f"{what}; every other rank only timed out afterwards (symptoms). A network fault "
             "of one node: the node, not one rank, is the answer.")
    return Case(expected=Expected(case_id=case_id, category="network_fault", node=host,
                                  notes=notes), files=story.files)
