"""A PyTorchJob on Kubernetes as people paste it: `kubectl get pods -o wide`, `get events`,
`get nodes` as text tables, `describe node` excerpts, and the pods' `kubectl logs` (one pod per
node, torchrun with 8 ranks in it, `[rankN]:` prefixes on the ranks' lines)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from . import text_forms as tf

NODE_STYLES = (lambda i: f"gpu-node-{i:02d}", lambda i: f"ip-10-0-{i}-{17 + i}.ec2.internal",
               lambda i: f"gke-train-a3-pool-4f2c-{i:04x}",
               lambda i: f"aks-gpu-{i:08d}-vmss00000{i}")
BUS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
JOB_NAMES = ("llama-sft", "mixtral-pretrain", "qwen-dpo", "vit-giant")


@dataclass
class KubeJob:
    name: str
    namespace: str
    nodes: list[str]  # node of worker i
    pod_ips: list[str]
    start: datetime
    now: datetime  # when the user ran kubectl
    per_pod: int = 8
    lines: dict[int, list[tuple[datetime, str]]] = field(default_factory=dict)  # pod -> lines

    def pod(self, i: int) -> str:
        return f"{self.name}-master-0" if i == 0 else f"{self.name}-worker-{i - 1}"

    @property
    def world(self) -> int:
        return len(self.nodes) * self.per_pod

    def say(self, pod: int, t: datetime, text: str, rank: int | None = None) -> None:
        self.lines.setdefault(pod, []).append((t, f"[rank{rank}]:{text}" if rank is not None
                                               else text))


def make_kube_job(rng: random.Random, n_min: int = 2) -> KubeJob:
    style = rng.choice(NODE_STYLES)
    first = rng.randint(1, 60)
    n = rng.randint(n_min, 6)
    index = [first]
    for _ in range(n - 1):
        index.append(index[-1] + rng.randint(1, 3))
    start = datetime(2026, rng.randint(1, 11), rng.randint(1, 27), rng.randint(0, 20),
                     rng.randint(0, 59), rng.randint(0, 59), tzinfo=UTC)
    return KubeJob(name=f"{rng.choice(JOB_NAMES)}-{rng.randint(100, 999)}",
                   namespace=rng.choice(("train", "ml-jobs", "research")),
                   nodes=[style(i) for i in index],
                   pod_ips=[f"10.244.{rng.randint(1, 60)}.{rng.randint(2, 250)}"
                            for _ in range(n)], start=start, now=start)


def training_progress(kj: KubeJob, rng: random.Random, until: datetime,
                      pods: list[int] | None = None) -> None:
    """NCCL init (the pod's hostname is the pod name) and a step counter on rank 0."""
    for p in pods if pods is not None else range(len(kj.nodes)):
        for local in range(kj.per_pod):
            r = p * kj.per_pod + local
            pid = 100 + local * 37
            kj.say(p, kj.start + timedelta(seconds=45), f"{kj.pod(p)}:{pid}:{pid + 80} [{local}] "
                   f"NCCL INFO comm 0x{r + 4096:x} rank {r} nranks {kj.world} cudaDev {local} "
                   f"nvmlDev {local} busId {BUS[local]}000 commId 0x7b1c9e - Init COMPLETE", r)
    span = (until - kj.start).total_seconds()
    for k in range(1, 12):
        t = kj.start + timedelta(seconds=60 + (span - 90) * k / 11)
        kj.say(0, t, f"{t:%Y-%m-%d %H:%M:%S} | step {k * 100} | loss {2.9 - k * 0.05:.4f} | "
               f"{rng.uniform(5.5, 6.2):.2f} it/s", 0)


def watchdog_timeouts(kj: KubeJob, rng: random.Random, t: datetime, skip: set[int]) -> None:
    for p in range(len(kj.nodes)):
        for local in range(kj.per_pod):
            r = p * kj.per_pod + local
            if r in skip:
                continue
            w = t + timedelta(seconds=600 + rng.uniform(0, 2))
            kj.say(p, w, f"[E{w:%m%d %H:%M:%S}.{r * 1371:06d} ProcessGroupNCCL.cpp:632] [Rank {r}] "
                   "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5120, "
                   "OpType=ALLREDUCE, NumelIn=4194304, NumelOut=4194304, Timeout(ms)=600000) ran "
                   "for 600021 milliseconds before timing out.", r)


def pod_logs(kj: KubeJob, rng: random.Random, skip: set[int] = frozenset()) -> dict[str, str]:
    """`kubectl logs [--previous] [--timestamps]` per pod."""
    stamps = rng.random() < 0.5
    out = {}
    for p, rows in kj.lines.items():
        if p in skip:
            continue
        text = "".join(f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}{p:03d}Z {x}\n" if stamps
                       else f"{x}\n" for t, x in sorted(rows))
        out[f"logs/{kj.pod(p)}{rng.choice(('.log', '-previous.log', '.txt'))}"] = text
    return out


def pods_table(kj: KubeJob, status: dict[int, tuple[str, str, int]],
               since: dict[int, datetime] | None = None) -> str:
    """status: pod -> (READY, STATUS, RESTARTS); others Running. since: a pod re-created
    later than the job's start."""
    rows = []
    for p, node in enumerate(kj.nodes):
        ready, st, restarts = status.get(p, ("1/1", "Running", 0))
        born = (since or {}).get(p, kj.start)
        rows.append([kj.pod(p), ready, st, str(restarts), tf.age((kj.now - born).total_seconds()),
                     kj.pod_ips[p] if st != "Pending" else "<none>", node, "<none>", "<none>"])
    return tf.kubectl_table(["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                             "NOMINATED NODE", "READINESS GATES"], rows)


def events_table(kj: KubeJob, events: list[tuple[datetime, str, str, str, str]]) -> str:
    """events: (when, TYPE, REASON, OBJECT, MESSAGE), as `kubectl get events` lists them."""
    rows = [[tf.age((kj.now - t).total_seconds()), typ, reason, obj, msg]
            for t, typ, reason, obj, msg in sorted(events)]
    return tf.kubectl_table(["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], rows)


def nodes_table(kj: KubeJob, states: dict[str, str], extra: list[str]) -> str:
    nodes = [*extra, *kj.nodes]
    rows = [[n, states.get(n, "Ready"), "<none>", tf.age(86400 * 40 + i * 3600), "v1.29.6"]
            for i, n in enumerate(nodes)]
    return tf.kubectl_table(["NAME", "STATUS", "ROLES", "AGE", "VERSION"], rows)


def describe_node_resources(node: str, gpus: int, allocatable: int, mem_ki: int) -> str:
    """The part of `kubectl describe node` people paste: name, capacity, allocatable."""
    def block(n: int) -> str:
        return (f"  cpu:                192\n  ephemeral-storage:  3750771672Ki\n"
                f"  hugepages-1Gi:      0\n  hugepages-2Mi:      0\n  memory:             "
                f"{mem_ki}Ki\n  nvidia.com/gpu:     {n}\n  pods:               110\n")
    return (f"Name:               {node}\nRoles:              <none>\nLabels:             "
            f"nvidia.com/gpu.count={gpus}\n                    nvidia.com/gpu.product="
            "NVIDIA-H100-80GB-HBM3\nCapacity:\n" + block(gpus) + "Allocatable:\n"
            + block(allocatable))


def lost_pod(rng: random.Random, hours: tuple[float, float], seen: tuple[int, int],
             n_min: int = 2) -> tuple[KubeJob, int, datetime]:
    """A job whose pod `bad` goes silent some hours in (all its ranks at once), every other
    rank timing out 10 minutes later; the user looks `seen` minutes after the failure."""
    kj = make_kube_job(rng, n_min)
    bad = rng.randrange(len(kj.nodes))
    t_fail = kj.start + timedelta(hours=rng.uniform(*hours))
    training_progress(kj, rng, t_fail)
    watchdog_timeouts(kj, rng, t_fail, set(range(bad * 8, bad * 8 + 8)))
    kj.now = t_fail + timedelta(minutes=rng.randint(*seen))
    return kj, bad, t_fail
