"""Issue 24, classes 3 and 4: host memory exhausted, announced by someone other than the
kernel (the kernel's own record is not in the bundle): torchelastic's exit -9 with the script's
own memory figures, a shell's `Killed` and srun's exit 137, a DataLoader worker killed by signal,
Ray's memory monitor; and shared memory exhausted (DataLoader Bus error, NCCL's /dev/shm)."""

from __future__ import annotations

import random
from datetime import datetime

from . import text_forms as tf
from .case import Case, Expected
from .model import later, make_job
from .run_story import Story, begin
from .scheduler import record_end

DL = "/usr/local/lib/python3.10/dist-packages/torch/utils/data"


def _node_sigterm(story: Story, culprit: int, t: datetime) -> None:
    job = story.job
    for r in job.ranks_on(job.host_of(culprit)):
        if r != culprit:
            story.say(r, t, "WARNING:torch.distributed.elastic.multiprocessing.api:Sending "
                      f"process {job.pids[r]} closing signal SIGTERM")


def _memory_figures(story: Story, culprit: int, t_fail: datetime, total_gib: int) -> None:
    job = story.job
    for k in range(8):
        t = later(t_fail, -(8 - k) * 240)
        used = total_gib * (0.80 + k * 0.024)
        story.py(culprit, t, f"host memory: {used:.1f} GiB / {total_gib}.0 GiB used "
                 f"({used / total_gib:.1%}), rss {used / job.gpus_per_node:.1f} GiB")


def killed_minus9(rng: random.Random, case_id: str, variant: int) -> Case:
    story, culprit, t_fail = begin(rng, (1, 6))
    job = story.job
    host, pid = job.host_of(culprit), job.pids[culprit]
    _memory_figures(story, culprit, t_fail, rng.choice((1007, 2015)))
    if variant % 2 == 0:  # torchelastic's report of the child killed by SIGKILL
        _node_sigterm(story, culprit, later(t_fail, 1))
        story.say_block(culprit, later(t_fail, 2), [
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) "
            f"local_rank: {job.local_rank(culprit)} (pid: {pid}) of binary: /usr/bin/python3",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
            "Root Cause (first observed failure):", "[0]:",
            f"  time      : {job.local(t_fail):%Y-%m-%d_%H:%M:%S}",
            f"  host      : {job.log_host(host)}",
            f"  rank      : {culprit} (local_rank: {job.local_rank(culprit)})",
            f"  exitcode  : -9 (pid: {pid})", "  error_file: <N/A>",
            f"  traceback : Signal 9 (SIGKILL) received by PID {pid}"])
        how = "torchelastic: exitcode -9, Signal 9 (SIGKILL)"
    else:  # one task per GPU under srun: the task's shell reports it
        story.say(culprit, later(t_fail, 0.5), f"/var/spool/slurmd/job{job.job_id}/slurm_script"
                  f": line 41: {pid} Killed                  python3 train.py --config "
                  "configs/70b.yaml")
        story.say(culprit, later(t_fail, 1), f"srun: error: {host}: task {culprit}: Exited "
                  "with exit code 137")
        how = f"the shell's `Killed` and srun's exit code 137 for task {culprit}"
    story.victims(set(job.ranks_on(host)), t_fail)
    record_end(story, "FAILED", "1:0" if variant % 2 == 0 else "137:0", later(t_fail, 640))
    story.finish(question=True)
    return Case(expected=Expected(
        case_id=case_id, category="host_oom", node=host, rank=culprit, max_confidence=0.6,
        notes=f"rank {culprit} on {host} is SIGKILLed ({how}) while its own log shows host "
              "memory climbing past 98%; no kernel log and no OUT_OF_MEMORY state in the bundle "
              "to confirm the OOM killer"), files=story.files)


def _dataloader_block(pid: int, signal: str, shm: bool) -> list[str]:
    first = ([] if not shm else ["ERROR: Unexpected bus error encountered in worker. This might "
                                 "be caused by insufficient shared memory (shm)."])
    msg = f"RuntimeError: DataLoader worker (pid {pid}) is killed by signal: {signal}. "
    if shm:
        msg += ("It is possible that dataloader's workers are out of shared memory. Please try "
                "to raise your shared memory limit.")
    return [*first, "Traceback (most recent call last):",
            f'  File "{DL}/dataloader.py", line 1133, in _try_get_data',
            "    data = self._data_queue.get(timeout=timeout)",
            f'  File "{DL}/_utils/signal_handling.py", line 66, in handler',
            "    _error_if_any_worker_fails()", msg, "",
            "The above exception was the direct cause of the following exception:", "",
            "Traceback (most recent call last):", '  File "/workspace/train.py", line 188, in '
            "<module>", "    for step, batch in enumerate(loader):",
            f'  File "{DL}/dataloader.py", line 1146, in _try_get_data',
            "    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited "
            "unexpectedly') from e", f"RuntimeError: DataLoader worker (pid(s) {pid}) exited "
            "unexpectedly"]


def _dataloader_case(rng: random.Random, shm: bool) -> tuple[Story, int, datetime]:
    story, culprit, t_fail = begin(rng, (0.5, 5))
    job = story.job
    worker = job.pids[culprit] + rng.randint(200, 900)
    story.say_block(culprit, t_fail, _dataloader_block(worker, "Bus error" if shm else "Killed",
                                                       shm))
    story.victims({culprit}, t_fail)
    record_end(story, "FAILED", "1:0", later(t_fail, 640))
    story.finish(question=True)
    return story, culprit, t_fail


def dataloader_killed(rng: random.Random, case_id: str, variant: int) -> Case:
    story, culprit, _ = _dataloader_case(rng, shm=False)
    host = story.job.host_of(culprit)
    return Case(expected=Expected(
        case_id=case_id, category="host_oom", node=host, rank=culprit, max_confidence=0.6,
        notes=f"rank {culprit} ({host}): a DataLoader worker is killed by signal: Killed (a "
              "SIGKILL from outside: host memory); the kernel's OOM record is not in the bundle"),
        files=story.files)


def shm_exhausted(rng: random.Random, case_id: str, variant: int) -> Case:
    rank: int | None
    if variant % 2 == 0:
        story, rank, _ = _dataloader_case(rng, shm=True)
        host = story.job.host_of(rank)
        what = "a DataLoader worker dies of a Bus error (shared memory, /dev/shm)"
    else:
        job = make_job(rng)
        story = Story(job, rng)
        culprit = rng.randrange(job.world)
        host = job.host_of(culprit)
        t_fail = later(job.start, 50)
        story.progress(t_fail, [r for r in range(job.world) if job.host_of(r) != host])
        for r in job.ranks_on(host):
            head = f"{job.log_host(host)}:{job.pids[r]}:{job.pids[r] + 66} [{job.local_rank(r)}]"
            seg = f"/dev/shm/nccl-{rng.choice(('KWfVyt', 'fjwOOB', 'q2Lx9d'))}"
            story.say_block(r, t_fail, [
                f"{head} misc/shmutils.cc:71 NCCL WARN Error: failed to extend {seg} to "
                "9637892 bytes", f"{head} misc/shmutils.cc:112 NCCL WARN Error while creating "
                f"shared memory segment {seg} (size 9637888)",
                f"{head} NCCL INFO transport/shm.cc:114 -> 2"])
        story.files["nodes/" + host + "/df_dev_shm.txt"] = (
            "Filesystem      Size  Used Avail Use% Mounted on\n"
            "shm              64M   64M     0 100% /dev/shm\n")
        story.victims(set(job.ranks_on(host)), t_fail, seq=1)
        record_end(story, "FAILED", "1:0", later(t_fail, 640))
        story.finish(question=True)
        rank = None
        what = f"every rank on {host} fails to extend its NCCL segment in /dev/shm (64M, 100%)"
    return Case(expected=Expected(
        case_id=case_id, category="host_oom", node=host, rank=rank,
        notes=f"shared memory exhausted on {host}: {what}; the remedy is --shm-size / fewer "
              "workers, not code"), files=story.files)


def ray_memory_monitor(rng: random.Random, case_id: str, variant: int) -> Case:
    """Ray Train: the raylet's memory monitor kills a training worker; the driver's error names
    the node only by IP; `ray status`-style listing or a name lookup maps it to a host."""
    job = make_job(rng)
    ips = tf.host_ips(rng, job.hosts)
    bad = rng.choice(job.hosts)
    t = later(job.start, rng.uniform(1, 6) * 3600)
    node_id = "".join(rng.choice("0123456789abcdef") for _ in range(56))
    lines = [f"(RayTrainWorker pid={job.pids[r]}, ip={ips[job.host_of(r)]}) [rank{r}] step "
             f"{k * 50} loss {2.5 - k * 0.1:.3f}" for k in range(1, 8) for r in (0, 1)]
    lines += [f"(raylet, ip={ips[bad]}) [{job.local(t):%Y-%m-%d %H:%M:%S},{rng.randint(100, 999)} "
              f"E {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}] (raylet) node_manager.cc:"
              f"3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers "
              f"crashed due to other reasons at node (ID: {node_id}, IP: {ips[bad]}) over the "
              f"last time period. To see more information about the Workers killed on this "
              f"node, use `ray logs raylet.out -ip {ips[bad]}`",
              "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on "
              "memory.", f"Memory on the node (IP: {ips[bad]}, ID: {node_id}) where the task "
              f"(actor ID: {node_id[:32]}, name=RayTrainWorker.__init__, pid="
              f"{job.pids[0] + 3}, memory used=61.04GB) was running was 1921.52GB / 2015.56GB "
              "(0.953341), which exceeds the memory usage threshold of 0.95. Ray killed this "
              "worker (ID: 6f1a) because it was the most recently scheduled task."]
    files = {"logs/ray_driver.log": "\n".join(lines) + "\n"}
    name, text = tf.name_lookup(rng, {ips[h]: job.log_host(h) if job.fqdn_domain
                                      else f"{h}.cluster.local" for h in job.hosts})
    files[name] = text
    files["incident.yaml"] = f"question: why did the ray train run {job.job_id} die?\n"
    return Case(expected=Expected(
        case_id=case_id, category="host_oom", node=bad,
        notes=f"Ray's memory monitor killed a training worker on the node with IP {ips[bad]} "
              f"(memory 0.953 of 2015 GB, over the 0.95 threshold); {name} maps it to {bad}"),
        files=files)
