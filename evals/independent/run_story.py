"""What every rank of a training job prints while it runs, before anything goes wrong, and
the symptoms the healthy ranks print after one rank stops: the common ground of every case."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime

import yaml

from . import log_writers as lw
from .model import Job, later, make_job

NOISE = (
    "UserWarning: TypedStorage is deprecated. It will be removed in the future and "
    "UntypedStorage will be the only storage class.",
    "WARNING: torch.distributed.run: Setting OMP_NUM_THREADS environment variable for each "
    "process to be 1 in default, to avoid your system being overloaded",
    "NCCL WARN Call to ibv_reg_mr_iova2 failed with error Invalid argument, falling back",
    "FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated.",
    "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 "
    "(errno: 98 - Address already in use).",
)
QUESTIONS = ("why did job {j} fail?", "job {j} died overnight, what happened?",
             "what killed training run {j}", "{j} crashed - which node is bad?",
             "root cause for the failure of job {j}, and should we retry")


@dataclass
class Story:
    job: Job
    rng: random.Random
    files: dict[str, str] = field(default_factory=dict)
    lines: dict[int, list[tuple[datetime, str]]] = field(default_factory=dict)
    kernel: dict[str, list[tuple[datetime, str]]] = field(default_factory=dict)

    def say(self, rank: int, t: datetime, text: str) -> None:
        self.lines.setdefault(rank, []).append((t, text))

    def say_block(self, rank: int, t: datetime, texts: list[str]) -> None:
        """A multi-line message (a traceback): its lines 1 ms apart, in order."""
        for k, text in enumerate(texts):
            self.say(rank, later(t, k * 0.001), text)

    def progress(self, until: datetime, ranks: list[int] | None = None) -> None:
        """Init lines, a step counter on rank 0, loud harmless warnings on every rank."""
        job, rng = self.job, self.rng
        for rank in ranks if ranks is not None else range(job.world):
            self.lines.setdefault(rank, []).append(lw.nccl_init(job, rank, later(job.start, 40)))
            for _ in range(rng.randint(1, 3)):
                self.say(rank, later(job.start, rng.uniform(5, 60)), rng.choice(NOISE))
        span = (until - job.start).total_seconds()
        for i in range(1, 15):
            t = later(job.start, 60 + (span - 80) * i / 14)
            self.say(0, t, lw.pylog(job.local(t), f"step {i * 50} | loss {3.2 - i * 0.07:.3f} | "
                                        f"lr 3.0e-4 | {rng.uniform(380, 420):.1f} TFLOP/s"))

    def victims(self, culprit_ranks: set[int], t: datetime, seq: int = 4211) -> None:
        """Healthy ranks time out in the collective the culprit never joined, ~10 min later."""
        for rank in range(self.job.world):
            if rank in culprit_ranks:
                continue
            when = later(t, 600 + self.rng.uniform(0.1, 3))
            self.say(rank, when, lw.watchdog(self.job.local(when), rank, seq))
            for text in lw.abort_lines(self.job.local(later(when, 0.2)), rank):
                self.say(rank, later(when, 0.2), text)

    def glog(self, rank: int, t: datetime, level: str, where: str, text: str) -> None:
        """A C++/glog line in the node's local time, as the process prints it."""
        self.say(rank, t, f"{lw.glog(self.job.local(t), level, where)} {text}")

    def py(self, rank: int, t: datetime, text: str) -> None:
        self.say(rank, t, lw.pylog(self.job.local(t), text))

    def kern(self, host: str, t: datetime, text: str) -> None:
        self.kernel.setdefault(host, []).append((t, text))

    def finish(self, question: bool = True, window: tuple[datetime, datetime] | None = None
               ) -> dict[str, str]:
        job, rng = self.job, self.rng
        lw.write_rank_logs(self.files, job, self.lines, rng)
        style = rng.choice(lw.KERNEL_STYLES)
        for host, events in self.kernel.items():
            name = rng.choice(("kern.log", "dmesg.txt", "journal-kernel.log"))
            self.files[f"nodes/{host}/{name}"] = lw.kernel_file(job, host, events, style)
        if question or job.zone != "UTC":
            doc: dict = {"job": job.job_id, "timezone": job.zone}
            if question:
                doc["question"] = rng.choice(QUESTIONS).format(j=job.job_id)
            if window:
                doc["window"] = {"start": job.local(window[0]).strftime("%Y-%m-%dT%H:%M:%S"),
                                 "end": job.local(window[1]).strftime("%Y-%m-%dT%H:%M:%S")}
            self.files["incident.yaml"] = yaml.safe_dump(doc, sort_keys=False)
        return self.files


def begin(rng: random.Random, hours: tuple[float, float]) -> tuple[Story, int, datetime]:
    """A job and its story, one rank chosen as the culprit, and the moment it fails (some hours
    in), every rank having progressed until then."""
    job = make_job(rng)
    story = Story(job, rng)
    culprit = rng.randrange(job.world)
    t_fail = later(job.start, rng.uniform(*hours) * 3600)
    story.progress(t_fail)
    return story, culprit, t_fail
