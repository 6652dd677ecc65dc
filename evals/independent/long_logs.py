"""Issue 24, class 1: a job's own output of a few hundred kilobytes whose first pages are a
framework's argument dump and NCCL INFO chatter, with the one decisive line near its end (as
`sbatch` leaves it in slurm-<job>.out: `srun -l` prefixes, or none from a single torchrun)."""

from __future__ import annotations

import json
import random
from datetime import datetime

from . import slurm_writers as sw
from .case import Case, Expected
from .model import Job, later, make_job

ARG_WORDS = ("adam", "attention", "bf16", "checkpoint", "data", "dist", "eval", "ffn", "fp8",
             "global", "grad", "hidden", "init", "kv", "lr", "micro", "moe", "norm", "num",
             "optimizer", "overlap", "pipeline", "recompute", "rope", "seq", "split", "tensor",
             "tokenizer", "use", "vocab", "warmup", "weight", "zero", "context", "expert")
PREAMBLE_BYTES = 210_000


def _arguments(rng: random.Random) -> list[str]:
    """Megatron-LM's argument dump (rank 0): one `name ..... value` per line, sorted."""
    names = sorted({"_".join(rng.sample(ARG_WORDS, rng.randint(2, 4))) for _ in range(340)})
    values = ("False", "True", "None", "1", "8", "0.9", "1e-05", "bf16", "4096", "'cyclic'",
              "['/lustre/ds/train_text_document']", "128", "0.02", "torch")
    out = ["------------------------ arguments ------------------------"]
    out += [f"  {n} {'.' * max(2, 48 - len(n))} {rng.choice(values)}" for n in names]
    out.append("-------------------- end of arguments ---------------------")
    return out


def _ds_config(rng: random.Random) -> list[str]:
    """DeepSpeed's config dump (rank 0): the whole JSON, indented, then its engine settings."""
    cfg = {"train_micro_batch_size_per_gpu": rng.choice((1, 2, 4)),
           "gradient_accumulation_steps": rng.choice((8, 16)),
           "zero_optimization": {"stage": 3, "overlap_comm": True, "contiguous_gradients": True,
                                 "reduce_bucket_size": 500000000,
                                 "stage3_prefetch_bucket_size": 470000000,
                                 "stage3_param_persistence_threshold": 1000000},
           "bf16": {"enabled": True}, "gradient_clipping": 1.0,
           "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95]}}}
    out = ["[INFO] [config.py:1000:print] DeepSpeedEngine configuration:"]
    for k in sorted({f"{rng.choice(ARG_WORDS)}_{rng.choice(ARG_WORDS)}" for _ in range(260)}):
        out.append(f"[INFO] [config.py:1004:print]   {k:<30} {rng.choice(('False', 'True', '0'))}")
    out.append("[INFO] [config.py:990:print_user_config]   json = "
               + json.dumps(cfg, indent=4).replace("\n", "\n    "))
    return out


def _nccl_chatter(job: Job, rng: random.Random, budget: int) -> list[tuple[int, str]]:
    """NCCL_DEBUG=INFO at init, every rank: versions, transports, rings and channels."""
    out: list[tuple[int, str]] = []
    size = 0
    rounds = 0
    while size < budget:
        for r in range(job.world):
            pid = job.pids[r]
            head = f"{job.log_host(job.host_of(r))}:{pid}:{pid + 60 + rounds} [{job.local_rank(r)}]"
            peer = (r + 1) % job.world
            texts = ([f"{head} NCCL INFO Bootstrap : Using ibp12s0:10.{r % 9}.0.{r + 2}<0>",
                      f"{head} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB "
                      "[2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB ibp12s0:10.0.0.2<0>",
                      f"{head} NCCL INFO Using network IB",
                      f"{head} NCCL INFO NCCL version 2.21.5+cuda12.4"] if rounds == 0 else [])
            texts += [f"{head} NCCL INFO Channel {c:02d}/0 : {r}[{job.local_rank(r)}] -> "
                      f"{peer}[{job.local_rank(peer)}] via P2P/CUMEM/read" for c in
                      range(rounds * 8, rounds * 8 + 8)]
            texts.append(f"{head} NCCL INFO Connected all rings")
            out.extend((r, t) for t in texts)
            size += sum(len(t) + 4 for t in texts)
        rounds += 1
    return out


def _iteration(job: Job, t: datetime, it: int, total: int, rng: random.Random) -> str:
    return (f"[{job.local(t):%Y-%m-%d %H:%M:%S}] iteration {it:>8}/{total:>8} | consumed "
            f"samples: {it * 512:>12} | elapsed time per iteration (ms): "
            f"{rng.uniform(2900, 3100):.1f} | learning rate: 2.9E-04 | global batch size: "
            f"  512 | lm loss: {3.4 - it / total:.6E} | loss scale: 1.0 | grad norm: "
            f"{rng.uniform(0.2, 0.4):.3f} | number of skipped iterations:   0 | "
            "number of nan iterations:   0 |")


def _oom_traceback(job: Job, rank: int) -> list[str]:
    return ["Traceback (most recent call last):",
            '  File "/workspace/Megatron-LM/pretrain_gpt.py", line 255, in <module>',
            "    pretrain(train_valid_test_datasets_provider,",
            '  File "/workspace/Megatron-LM/megatron/core/transformer/attention.py", line 463, '
            "in forward", "    core_attn_out = self.core_attention(",
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU "
            f"{job.local_rank(rank)} has a total capacity of 79.10 GiB of which 2.31 GiB is "
            "free. Including non-PyTorch memory, this process has 76.78 GiB memory in use."]


def long_job_log(rng: random.Random, case_id: str, variant: int) -> Case:
    job = make_job(rng)
    prefixed = variant % 3 != 2  # v2: one node, one torchrun, no srun -l prefixes
    if not prefixed:
        job.hosts, job.gpus_per_node = job.hosts[:1], 8
        job.pids = {r: job.pids[0] + r * 7 for r in range(8)}
    rows: list[tuple[int, str]] = [(0, x) for x in (_arguments(rng) if variant % 3 != 2
                                                    else _ds_config(rng))]
    rows += _nccl_chatter(job, rng, PREAMBLE_BYTES)
    hours = rng.choice((4, 8, 12))
    total = rng.randint(40, 90) * 1000
    end = later(job.start, hours * 3600)
    last = job.world - 1
    n_iter = rng.randint(500, 800)
    culprit = rng.randrange(job.world)
    stop = n_iter if variant % 3 != 1 else rng.randint(n_iter // 2, n_iter - 50)
    for k in range(1, stop):
        t = later(job.start, 300 + (hours * 3600 - 400) * k / n_iter)
        rows.append((last, _iteration(job, t, k * 10, total, rng)))
    if variant % 3 == 1:  # a CUDA OOM on one rank, then the others' NCCL watchdogs
        t_fail = later(job.start, 300 + (hours * 3600 - 400) * stop / n_iter + 20)
        rows += [(culprit, x) for x in _oom_traceback(job, culprit)]
        rows += [(r, f"[E{job.local(later(t_fail, 600)):%m%d %H:%M:%S}.{r:06d} "
                     f"ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation "
                     "timeout: WorkNCCL(SeqNum=88121, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                     "Timeout(ms)=600000) ran for 600088 milliseconds before timing out.")
                 for r in range(job.world) if r != culprit]
        end = later(t_fail, 640)
    text = "\n".join(f"{r}: {x}" if prefixed else x for r, x in rows) + "\n"
    what = _ending(job, end, variant, culprit)
    text += "\n".join(what) + "\n"
    name = rng.choice(("slurm-{j}.out", "logs/slurm-{j}.out", "job/{j}.log")).format(j=job.job_id)
    files = {name: text}
    if rng.random() < 0.5:
        files["incident.yaml"] = f'question: why did job {job.job_id} end?\njob: "{job.job_id}"\n'
    return _expected(case_id, job, variant, culprit, files, len(text.encode()))


def _ending(job: Job, end: datetime, variant: int, culprit: int) -> list[str]:
    host = job.hosts[0]
    if variant % 3 == 1:
        return [f"srun: error: {job.host_of(culprit)}: task {culprit}: Exited with exit code 1",
                f"srun: Terminating StepId={job.job_id}.0"]
    return [sw.stepd_cancel(job, host, end, "TIME LIMIT"),
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
            f"slurmstepd: error: *** STEP {job.job_id}.0 ON {host} CANCELLED AT "
            f"{job.local(end):%Y-%m-%dT%H:%M:%S} DUE TO TIME LIMIT ***"]


def _expected(case_id: str, job: Job, variant: int, culprit: int, files: dict[str, str],
              size: int) -> Case:
    if variant % 3 == 1:
        exp = Expected(case_id=case_id, category="gpu_oom", node=job.host_of(culprit),
                       rank=culprit, notes=f"a {size // 1000} KB job log: an argument dump and "
                       "NCCL INFO fill its first 200 KB; near its end rank "
                       f"{culprit} (srun -l prefix; its host from its NCCL lines) raises a CUDA "
                       "OOM and the other ranks' watchdogs follow 10 minutes later")
    else:
        exp = Expected(case_id=case_id, category="time_limit",
                       notes=f"a {size // 1000} KB job log whose first 200 KB are a framework "
                       "config dump and NCCL INFO lines; training steps run to the end, where "
                       "slurmstepd cancels the job DUE TO TIME LIMIT. No scheduler record in the "
                       "bundle: the log is the only evidence.")
    return Case(expected=exp, files=files)
